"""Corpus, chunking, indexes, retrieval, context packing, citations and the search_docs tool.

Depends on the protocols in models.protocols, never on llama_cpp, never on agent.

The ag.08 contract is importable from here: `from rag import parse_citations, resolve, unresolved, Ledger, Packer,
block, SEARCH_DOCS_NAME, SEARCH_DOCS_SCHEMA, NO_RESULTS`. The names load on first use (PEP 562): eagerly,
`import rag` would take ~0.36 s instead of ~1 ms (search_tool brings jsonschema), and every `import rag.x` pays it.
"""

from __future__ import annotations

import importlib

# name -> the module that defines it (the one place each lives)
_CONTRACT = {
    "parse_citations": "rag.citations",
    "resolve": "rag.citations",
    "unresolved": "rag.citations",
    "Ledger": "rag.excerpts.packing",
    "Packer": "rag.excerpts.packing",
    "block": "rag.excerpts.packing",
    "SEARCH_DOCS_NAME": "rag.excerpts.search_tool",
    "SEARCH_DOCS_SCHEMA": "rag.excerpts.search_tool",
    "NO_RESULTS": "rag.excerpts.search_tool",
}

__all__ = list(_CONTRACT)


def __getattr__(name: str):
    if name not in _CONTRACT:
        raise AttributeError(f"module 'rag' has no attribute {name!r}")
    value = getattr(importlib.import_module(_CONTRACT[name]), name)
    globals()[name] = value  # looked up once
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_CONTRACT})
