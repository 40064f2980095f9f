"""End to end: a cold `smoldocs ask` to first token and to the finished, verified answer, and its peak RSS.

The baseline is a fresh process that only loads the same GGUF with llama.cpp, evaluates a prompt of the same
length and streams the same number of tokens: what is left is imports, the embedder, the index, search,
packing and verification. "Cold" means a new process; the model and index files are in the page cache.

Run alone: .venv/bin/python -m benchmarks --only end_to_end
"""

from __future__ import annotations

import re

from benchmarks import workload
from benchmarks.child import ChildRun, bare_llama, smoldocs
from benchmarks.measure import median
from benchmarks.table import row

SECTION = "end to end"
_TAIL = re.compile(r"prompt (\d+)/\d+ tokens · (\d+) tokens at")


def ask() -> tuple[ChildRun, int, int]:
    """One cold `smoldocs ask` on a terminal; (run, prompt tokens, completion tokens) from its closing line."""
    run = smoldocs("ask", workload.QUESTION)
    found = _TAIL.search(run.output)
    if run.returncode != 0 or not found or run.first_output is None:
        raise RuntimeError(f"smoldocs ask failed (exit {run.returncode}): {(run.errors or run.output)[-400:]}")
    return run, int(found.group(1)), int(found.group(2))


def run(quick: bool = False) -> list[dict]:
    repeats = 1 if quick else 3
    if not quick:
        ask()  # warm-up: index built or refreshed, files in the page cache
    ours: list[ChildRun] = []
    bare: list[ChildRun] = []
    for _ in range(repeats):
        run_, n_prompt, n_completion = ask()
        ours.append(run_)
        # Quick: the bare process stops at its first token, so only the first-token row has a baseline.
        bare.append(bare_llama(n_prompt, 1 if quick else max(1, n_completion)))
    for b in bare:
        if b.returncode != 0 or b.first_output is None:
            raise RuntimeError(f"bare llama.cpp child failed (exit {b.returncode}): {b.errors[-400:]}")
    first = median([r.first_output for r in ours])
    rows = [
        row(f"cold `smoldocs ask` to first token s vs bare load + {n_prompt}-token prompt", first,
            median([b.first_output for b in bare]), "info: imports, embedder, index, search", unit="s"),
        row(f"cold `smoldocs ask` to verified answer s vs bare load + prompt + {n_completion} tokens",
            median([r.seconds for r in ours]), None if quick else median([b.seconds for b in bare]),
            "info: + verification" + (" (baseline: full run only)" if quick else ""), unit="s"),
        row("peak RSS `smoldocs ask` MB vs bare llama.cpp process", median([r.peak_rss_mb for r in ours]),
            median([b.peak_rss_mb for b in bare]), "ours <= 600", unit="MB", section="memory"),
    ]
    for r in rows:
        r.setdefault("section", SECTION)
    return rows
