"""Decode speed through our model layer against a bare llama.cpp loop, and how close decode is to memory speed.

Run alone: .venv/bin/python -m benchmarks --only generation
"""

from __future__ import annotations

import time
from dataclasses import replace
from pathlib import Path

import numpy as np

from benchmarks import workload
from benchmarks.measure import interleaved, median
from benchmarks.table import row

SECTION = "generation"


def decode_rate(llm, n_prompt: int, deltas) -> tuple[float, int]:
    """(tokens/s after the first text delta, decode steps) for one streamed generation.

    Both sides are timed the same way, from outside: the steps are the generated tokens llama.cpp evaluated
    (its n_tokens minus the prompt), the time runs from the first text delta to the end of the stream.
    """
    first = None
    for text in deltas:
        if first is None and text:
            first = time.perf_counter()
    end = time.perf_counter()
    steps = llm.n_tokens - n_prompt
    if first is None or steps <= 0 or end <= first:
        return float("nan"), steps
    return steps / (end - first), steps


def bare_completion(llm, tokens: list[int], options, stop: list[str], seed: int):
    """Text deltas from a plain Llama.create_completion stream: what one writes without our layer."""
    for chunk in llm.create_completion(
        tokens,
        max_tokens=options.max_tokens,
        temperature=options.temperature,
        top_k=options.top_k,
        top_p=options.top_p,
        min_p=options.min_p,
        repeat_penalty=options.repeat_penalty,
        stop=stop,
        seed=seed,
        stream=True,
    ):
        yield chunk["choices"][0]["text"]


def copy_bandwidth(megabytes: int, repeats: int) -> float:
    """GB/s of a numpy array copy, counting bytes read plus bytes written (as STREAM's Copy does)."""
    src = np.ones(megabytes * 2**20 // 8, dtype=np.float64)
    dst = np.empty_like(src)
    np.copyto(dst, src)  # touch every page first
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        np.copyto(dst, src)
        times.append(time.perf_counter() - start)
    return 2 * src.nbytes / median(times) / 1e9


def thread_row(model, tokens: list[int], options, stop: list[str], seed: int, repeats: int) -> dict:
    """Bare decode with the configured decode threads against one thread per core: for a small model the
    per-token work is too small to split, and threads that wait for each other lose more than a core brings."""
    from models.config import default_threads
    from models.llama_cpp.loading import open_llama

    threads = model.config.llama_kwargs()["n_threads"]
    other = default_threads() if threads == 1 else 1
    alternative = open_llama(model.config.with_(n_threads=other))
    try:
        a, b = interleaved(
            lambda: decode_rate(model.llm, len(tokens), bare_completion(model.llm, tokens, options, stop, seed))[0],
            lambda: decode_rate(alternative, len(tokens), bare_completion(alternative, tokens, options, stop, seed))[0],
            repeats,
        )
    finally:
        alternative.close()
    return row(f"bare decode tokens/s, n_threads={threads} (as configured) vs n_threads={other}", median(a),
               median(b), "info: > 1 means the configured count is the faster one", unit="tok/s")


def grammar_rows(model, messages, options, repeats: int) -> list[dict]:
    """Decode speed with the answer grammars against none: what guarding or constraining the markers costs."""
    from agent.turn.grammars import MarkerGuard, citation_grammar

    n_prompt = len(model.tokenizer.chat_tokens(messages))
    shown = [1, 2, 3, 4, 5]

    def rate(**constraint):
        return lambda: decode_rate(model.llm, n_prompt, model.stream(messages, replace(options, **constraint)))[0]

    rows = []
    for name, constraint in (("guarded (MarkerGuard)", dict(guard=MarkerGuard(shown))),
                             ("constrained (citation grammar)", dict(grammar=citation_grammar(shown)))):
        a, b = interleaved(rate(**constraint), rate(), repeats)
        rows.append(row(f"decode tokens/s, {name} vs free", median(a), median(b),
                        "info: what the constraint costs per token", unit="tok/s"))
    return rows


def copy_guard_row(model, repeats: int, max_tokens: int = 48, k: int = 5) -> dict:
    """Decode speed of quote decoding (the copy guard on) against free decoding of the same quote prompt, `> ` and
    all: what keeping every reference verbatim costs per token. Target: >= 0.9."""
    messages, recorded = workload.answer_prompt(k=k, decoding="quote")
    guarded = replace(recorded, max_tokens=max_tokens)
    free = replace(guarded, guard=None)
    prompt, added, _ = model.tokenizer._renderer.render(messages)
    n_prompt = len(model.llm.tokenize((prompt + guarded.prefix).encode(), add_bos=not added, special=True))

    def rate(options):
        return lambda: decode_rate(model.llm, n_prompt, model.stream(messages, options))[0]

    rate(guarded)()  # warm-up: the vocabulary's lookups built, the prompt in the KV cache
    a, b = interleaved(rate(guarded), rate(free), repeats)
    return row(f"decode tokens/s, quote decoding (copy guard) vs free, same {n_prompt}-token quote prompt",
               median(a), median(b), "ratio >= 0.9", unit="tok/s")


def run(quick: bool = False, smoke: bool = False) -> list[dict]:
    """Rows of the table; smoke: a few tokens once, to prove the module runs (its figures mean nothing)."""
    quick = quick or smoke
    model = workload.chat_model()
    llm = model.llm
    messages, recorded = workload.answer_prompt(k=1 if smoke else 5)  # smoke: one excerpt, a short prompt
    # Our layer against the bare loop without a grammar on either side; what the grammars cost is a row of its own.
    options = replace(recorded, grammar=None, guard=None)
    # Many short runs beat a few long ones on a noisy machine: the median shrugs off a run that was preempted.
    options = replace(options, max_tokens=4 if smoke else 24 if quick else 128)
    repeats = 1 if smoke else 3 if quick else 6
    tokens = model.tokenizer.chat_tokens(messages)
    stop = model.tokenizer._renderer.render(messages)[2]  # the template's stop strings, as our layer adds them
    seed = options.seed if options.seed is not None else model.config.seed
    steps: dict[str, list[int]] = {"ours": [], "bare": []}

    def ours() -> float:
        rate, n = decode_rate(llm, len(tokens), model.stream(messages, options))
        steps["ours"].append(n)
        return rate

    def bare() -> float:
        rate, n = decode_rate(llm, len(tokens), bare_completion(llm, tokens, options, stop, seed))
        steps["bare"].append(n)
        return rate

    ours(), bare()  # warm-up: buffers allocated, prompt in the KV cache for both
    steps["ours"].clear(), steps["bare"].clear()
    a, b = interleaved(ours, bare, repeats)
    ours_rate, bare_rate = median(a), median(b)
    same = "same tokens" if steps["ours"] == steps["bare"] else f"ours {steps['ours']} vs bare {steps['bare']} tokens"
    rows = [
        row(f"decode tokens/s, {len(tokens)}-token answer prompt, {median(steps['ours']):.0f} tokens ({same})",
            ours_rate, bare_rate, "ratio >= 0.95", unit="tok/s",
            note="baseline: bare Llama.create_completion stream, same ids, sampling settings and seed"),
    ]
    if not quick:
        rows.append(thread_row(model, tokens, options, stop, seed, 4))
        rows += grammar_rows(model, messages, options, 4)
    rows.append(copy_guard_row(model, repeats, max_tokens=4, k=1) if smoke else copy_guard_row(model, 3 if quick else 6))
    size = Path(model.config.path).stat().st_size
    bandwidth = copy_bandwidth(8 if smoke else 128 if quick else 512, 1 if smoke else 3 if quick else 7)
    effective = size * ours_rate / 1e9
    rows.append(row(f"decode weight traffic GB/s ({size / 1e6:.0f} MB file x tok/s) vs numpy copy GB/s",
                    effective, bandwidth, "info: 1.0 = memory-bound", unit="GB/s"))
    for r in rows:
        r["section"] = SECTION
    return rows
