"""What Copy puts on the clipboard: an answer with its sources as `path:line`, or one quote with its source."""

from __future__ import annotations

import os
from pathlib import Path

from agent.events import Answer
from rag.types import Chunk, Hit
from rag.verification.verdicts import Verdict


DocsDir = os.PathLike[str] | str | None  # Session.docs_dir: a folder (or --man's pages), a store's URL, or None


def source_path(docs_dir: DocsDir, doc_id: str) -> Path | None:
    """The file a chunk came from; None when the index reads no folder here (a shared store, named by its URL)."""
    return Path(docs_dir, doc_id) if docs_dir is not None and not isinstance(docs_dir, str) else None


def source_ref(source: Chunk, docs_dir: DocsDir) -> str:
    """`docs/kv-cache.md:8 · KV cache > Size`; a man page adds `ls(1)`, a PDF says its page instead of a line."""
    path = source_path(docs_dir, source.doc_id) or source.doc_id
    where = f"{path} (page {source.pages})" if source.page_start else f"{path}:{source.line_start}"
    names = [name for name in (source.uri if source.uri != source.doc_id else "", source.heading) if name]
    return " · ".join([where, *names])


def answer_copy(answer: Answer, shown: dict[int, Hit], docs_dir: DocsDir) -> str:
    """The answer's text, then one line per cited source: `[2] docs/kv-cache.md:8 · KV cache > Size`."""
    lines = []
    for citation in sorted(answer.citations, key=lambda c: c.n):
        hit = shown.get(citation.n)
        if citation.verdict == Verdict.MADE_UP:
            lines.append(f"[{citation.n}] made up: no excerpt had that number")
        elif hit is not None:
            lines.append(f"[{citation.n}] {source_ref(hit.chunk, docs_dir)}")
        else:
            lines.append(f"[{citation.n}] {citation.uri or citation.chunk_id or 'unknown source'}")
    text = answer.text.strip()
    return f"{text}\n\nSources:\n" + "\n".join(lines) if lines else text


def quote_copy(quote: str, source: Chunk, docs_dir: DocsDir) -> str:
    """`> the quoted sentence` over `— docs/kv-cache.md:8 · KV cache > Size`."""
    quoted = "\n".join(f"> {line}" if line else ">" for line in quote.strip().splitlines())
    return f"{quoted}\n— {source_ref(source, docs_dir)}"
