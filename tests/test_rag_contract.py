"""The ag.08 contract from `rag` itself: the names, the same objects as in their home modules, loaded lazily."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

import rag
from rag import citations
from rag.excerpts import packing, search_tool

ROOT = Path(__file__).resolve().parent.parent
CONTRACT = {
    "parse_citations": citations,
    "resolve": citations,
    "unresolved": citations,
    "Ledger": packing,
    "Packer": packing,
    "block": packing,
    "SEARCH_DOCS_NAME": search_tool,
    "SEARCH_DOCS_SCHEMA": search_tool,
    "NO_RESULTS": search_tool,
}


def test_the_contract_imports_from_rag_as_the_very_objects_of_its_home_modules():
    from rag import (  # noqa: F401 - the import itself is the contract
        NO_RESULTS,
        SEARCH_DOCS_NAME,
        SEARCH_DOCS_SCHEMA,
        Ledger,
        Packer,
        block,
        parse_citations,
        resolve,
        unresolved,
    )

    for name, home in CONTRACT.items():
        assert getattr(rag, name) is getattr(home, name), name
    assert sorted(rag.__all__) == sorted(CONTRACT)
    assert set(CONTRACT) <= set(dir(rag))


def test_an_unknown_name_is_an_import_error_and_submodules_still_import():
    with pytest.raises(ImportError, match="cannot import name 'nope' from 'rag'"):
        from rag import nope  # noqa: F401
    assert not hasattr(rag, "nope")
    from rag import markers  # a submodule, not a contract name: the import system still finds it

    assert markers.__name__ == "rag.markers"


def test_import_rag_loads_no_contract_module_until_a_name_is_used():
    """`import rag` stays ~1 ms: search_tool (with jsonschema) loads on the first use of one of its names."""
    script = (
        "import sys, rag\n"
        "heavy = ('rag.citations', 'rag.excerpts.packing', 'rag.excerpts.search_tool', 'jsonschema')\n"
        "print(sorted(m for m in heavy if m in sys.modules))\n"
        "rag.NO_RESULTS\n"
        "print(sorted(m for m in heavy if m in sys.modules))\n"
    )
    out = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, check=True)
    before, after = out.stdout.splitlines()
    assert before == "[]"
    assert "'rag.excerpts.search_tool'" in after and "'jsonschema'" in after
