"""End to end: a cold `smoldocs ask` to first token and to the finished, verified answer, and its peak RSS.

The baseline is a fresh process that only loads the same GGUF with llama.cpp, evaluates a prompt of the same
length and streams the same number of tokens: what is left is imports, the embedder, the index, search,
packing and verification. "Cold" means a new process; the model and index files are in the page cache.

Run alone: .venv/bin/python -m benchmarks --only end_to_end
"""

from __future__ import annotations

import re
import shutil

from benchmarks import workload
from benchmarks.child import ChildRun, bare_llama, smoldocs
from benchmarks.measure import median
from benchmarks.table import row

SECTION = "end to end"
_TAIL = re.compile(r"prompt (\d+)/\d+ tokens · (\d+) tokens at")


def ask(*options: str) -> tuple[ChildRun, int, int]:
    """One cold `smoldocs ask` on a terminal; (run, prompt tokens, completion tokens) from its closing line."""
    run = smoldocs("ask", workload.QUESTION, *options)
    found = _TAIL.search(run.output)
    if run.returncode != 0 or not found or run.first_output is None:
        raise RuntimeError(f"smoldocs ask failed (exit {run.returncode}): {(run.errors or run.output)[-400:]}")
    return run, int(found.group(1)), int(found.group(2))


def run(quick: bool = False, smoke: bool = False) -> list[dict]:
    """Rows of the table; smoke is quick (one cold ask, one bare child): its two children are the workload."""
    quick = quick or smoke
    repeats = 1 if quick else 3
    if not quick:
        ask()  # warm-up: index built or refreshed, files in the page cache
    ours: list[ChildRun] = []
    bare: list[ChildRun] = []
    base: list[ChildRun] = []  # the same ask with MiniLM's own question vector (before the tuned encoder of #37)
    for _ in range(repeats):
        run_, n_prompt, n_completion = ask()
        ours.append(run_)
        base.append(ask("--queries", "base")[0])
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
        row("cold `smoldocs ask` to verified answer s, tuned question encoder vs `--queries base`",
            median([r.seconds for r in ours]), median([r.seconds for r in base]), "info: the encoder's load", unit="s"),
        row("peak RSS `smoldocs ask` MB, tuned question encoder vs `--queries base`", median([r.peak_rss_mb for r in ours]),
            median([r.peak_rss_mb for r in base]), "ours <= 600", unit="MB", section="memory"),
    ]
    if not quick:
        rows += first_token_rows(repeats)
    for r in rows:
        r.setdefault("section", SECTION)
    return rows


def first_token_rows(repeats: int) -> list[dict]:
    """Quote decoding's cold first token against the bare baseline, and what the rules' KV state on disk saves."""
    from models.paths import cache_dir

    ask("--decoding", "quote")  # warm-up: its rules' KV state saved
    quote, bare, evaluated, loaded = [], [], [], []
    for _ in range(repeats):
        run_, n_prompt, _ = ask("--decoding", "quote")
        quote.append(run_.first_output)
        bare.append(bare_llama(n_prompt, 1).first_output)
        shutil.rmtree(cache_dir() / "kv", ignore_errors=True)  # this cold start evaluates the rules (and saves them)
        evaluated.append(ask()[0].first_output)
        loaded.append(ask()[0].first_output)
    return [
        row(f"cold `smoldocs ask --decoding quote` to first token s vs bare load + {n_prompt}-token prompt",
            median(quote), median(bare), "ours <= 2.5 s on a quiet machine", unit="s"),
        row("cold `smoldocs ask` to first token s, system rules' KV state loaded from disk vs evaluated",
            median(loaded), median(evaluated), "info: < 1 is the time the cache saves", unit="s"),
    ]
