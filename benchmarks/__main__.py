"""smoldocs benchmarks: one command prints the performance table, each figure beside a baseline from the same run.

Usage (from the repo root):
    .venv/bin/python -m benchmarks              # everything; several minutes on 2 cores
    .venv/bin/python -m benchmarks --quick      # fewer repeats, shorter answers, no 100k corpus: about a minute
    .venv/bin/python -m benchmarks --smoke      # every module once on a tiny workload: proves they run (the tests do)
    .venv/bin/python -m benchmarks --json       # the same rows as JSON (machine, load average, module times)
    .venv/bin/python -m benchmarks --only generation,followup   # some modules: see MODULES

Every row: what, our figure, the baseline figure, ratio = ours / baseline, the target and whether it is met.
Machines are shared and noisy, so ratios matter more than absolute figures: each baseline is measured in the
same run, interleaved with ours, and figures are medians over repeats. Report the load average with a table.
A module that fails prints one FAILED row and the others still run; the exit status is then 1.
"""

from __future__ import annotations

import argparse
import importlib
import sys
import time
import traceback

from benchmarks.measure import load_average, machine
from benchmarks.table import render, to_json, verdict

# Module name -> what it measures; each has run(quick: bool, smoke: bool) -> list[dict] rows.
# smoke: a tiny workload, seconds each, so the test suite runs every module and a broken one fails CI.
MODULES = {
    "generation": "decode tokens/s vs bare llama.cpp; decode traffic vs memory bandwidth",
    "followup": "time to first token of a follow-up question vs eval of its new tokens; cache reset",
    "counting": "count_chat, packer and context-window counting vs the answer's generation time",
    "embedding": "MiniLM chunks/s vs a bare llama.cpp embed loop",
    "retrieval": "query p50/p95 at docs_corpus, 10k, 100k chunks; index build and re-index",
    "end_to_end": "cold `smoldocs ask` to first token and to the verified answer; its peak RSS",
    "memory": "peak RSS of the TUI with a loaded chat",
    "progressive": "2,000-file folder: TUI to a usable prompt and a first answer, first search vs a blocking build",
    "verify": "claim verification and the quoted fallback per answer vs embedding every sentence",
    "hostile_shapes": "chunking 1, 10, 100 MB of hostile shapes (base64 image, one word, headings, fences, nested HTML) vs linear",
    "server": "decode tok/s and first token through a local llama_cpp.server vs in-process; the count-check probe",
    "shared_store": "PostgreSQL + pgvector store vs the embedded index at 100k chunks: ingest, HNSW, queries, clients",
    "hnsw_recall": "pgvector HNSW recall@10 on the real-docs suite's MiniLM rows and questions vs exact search",
}


def run_module(name: str, quick: bool, smoke: bool = False) -> tuple[list[dict], float, str | None]:
    """(rows, seconds, error) of one module; an import or run failure becomes one FAILED row."""
    start = time.perf_counter()
    try:
        rows = importlib.import_module(f"benchmarks.{name}").run(quick=quick or smoke, smoke=smoke)
        error = None
    except Exception as exc:  # report and go on: one broken module must not hide the others' figures
        traceback.print_exc(file=sys.stderr)
        error = f"{type(exc).__name__}: {str(exc).strip().splitlines()[0] if str(exc).strip() else ''}"
        rows = [dict(what=f"{name}: FAILED ({error[:100]})", ours=None, baseline=None, ratio=None, target="")]
    for r in rows:
        r.setdefault("section", name)
    return rows, time.perf_counter() - start, error


def selected(only: str | None, skip: str | None) -> list[str]:
    names = list(MODULES)
    for option, value in (("--only", only), ("--skip", skip)):
        unknown = [n for n in (value or "").split(",") if n and n not in MODULES]
        if unknown:
            raise SystemExit(f"benchmarks: unknown module {', '.join(unknown)} in {option}: choose from {', '.join(MODULES)}")
    if only:
        names = [n for n in names if n in only.split(",")]
    if skip:
        names = [n for n in names if n not in skip.split(",")]
    return names


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks", description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer repeats, shorter answers, no 100k corpus")
    parser.add_argument("--smoke", action="store_true", help="a tiny workload, to check every module runs; figures mean nothing")
    parser.add_argument("--json", action="store_true", help="print JSON instead of the text table")
    parser.add_argument("--only", metavar="NAMES", help="comma-separated modules to run")
    parser.add_argument("--skip", metavar="NAMES", help="comma-separated modules to leave out")
    args = parser.parse_args(argv)

    names = selected(args.only, args.skip)
    load_before = load_average()
    started = time.perf_counter()
    rows: list[dict] = []
    modules: dict[str, dict] = {}
    for name in names:
        print(f"benchmarks: {name} ({MODULES[name]}) ...", file=sys.stderr, flush=True)
        module_rows, seconds, error = run_module(name, args.quick, args.smoke)
        rows += module_rows
        modules[name] = {"seconds": round(seconds, 1), "error": error}
        print(f"benchmarks: {name} took {seconds:.0f} s", file=sys.stderr, flush=True)
    total = time.perf_counter() - started
    load_after = load_average()

    facts = machine()
    meta = {
        "mode": "smoke" if args.smoke else "quick" if args.quick else "full",
        "load_average_before": [round(x, 2) for x in load_before],
        "load_average_after": [round(x, 2) for x in load_after],
        "seconds": round(total, 1),
        "modules": modules,
    }
    if args.json:
        print(to_json(rows, facts, **meta))
    else:
        header = (
            f"smoldocs benchmarks ({meta['mode']}) on {facts['cores']} cores, {facts['cpu']}; "
            f"load average {_load(load_before)} before, {_load(load_after)} after; {total:.0f} s"
        )
        print(render(rows, header))
        missed = [r["what"] for r in rows if verdict(r) == "MISS"]
        print(f"\nratio = ours / baseline; medians over repeats; targets missed: {len(missed)}")
    return 1 if any(m["error"] for m in modules.values()) else 0


def _load(values) -> str:
    return " ".join(f"{x:.2f}" for x in values)


if __name__ == "__main__":
    sys.exit(main())
