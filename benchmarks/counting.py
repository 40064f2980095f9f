"""Token counting cost: count_chat on a full prompt, the packer's whole-text counts, the context window's counts.

Each figure is shown beside the time the model takes to write the answer (the ratio is the share of it).

Run alone: .venv/bin/python -m benchmarks --only counting
"""

from __future__ import annotations

import time
from dataclasses import replace

from benchmarks import workload
from benchmarks.workload import implements
from models.protocols import Tokenizer
from benchmarks.measure import median
from benchmarks.table import row

SECTION = "token counting"
FULL_PROMPT = 2048


class TallyingTokenizer:
    """The real tokenizer, counting how often whole texts are counted and how many tokens that came to."""

    def __init__(self, tokenizer) -> None:
        self._tokenizer = tokenizer
        self.calls = 0
        self.tokens = 0
        implements(self, Tokenizer)

    def __getattr__(self, name):
        return getattr(self._tokenizer, name)

    def count(self, text: str) -> int:
        n = self._tokenizer.count(text)
        self.calls, self.tokens = self.calls + 1, self.tokens + n
        return n

    def count_chat(self, messages, add_generation_prompt: bool = True) -> int:
        n = self._tokenizer.count_chat(messages, add_generation_prompt)
        self.calls, self.tokens = self.calls + 1, self.tokens + n
        return n


def full_prompt(tokenizer, messages: list[dict], target: int = FULL_PROMPT) -> list[dict]:
    """`messages` with the evidence grown (by repeating it) until the whole prompt is `target` tokens or just under."""
    evidence = messages[1]["content"]
    words = (evidence + "\n") * (target // max(1, tokenizer.count(evidence)) + 2)
    words = words.split(" ")

    def with_words(n: int) -> list[dict]:
        out = [dict(m) for m in messages]
        out[1]["content"] = " ".join(words[:n])
        return out

    low, high = 0, len(words)
    while low < high:  # the most words whose whole prompt still fits `target`
        mid = (low + high + 1) // 2
        if tokenizer.count_chat(with_words(mid)) <= target:
            low = mid
        else:
            high = mid - 1
    return with_words(low)


def repeat_ms(fn, repeats: int) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return 1000 * median(times)


def answer_ms(model, messages, options, repeats: int) -> float:
    """Milliseconds to write the answer for `messages`, prompt evaluation included."""
    times = []
    for _ in range(repeats):
        model.llm.reset()
        start = time.perf_counter()
        for _ in model.stream(messages, options):
            pass
        times.append(time.perf_counter() - start)
    return 1000 * median(times)


def run(quick: bool = False, smoke: bool = False) -> list[dict]:
    """Rows of the table; smoke: each count once and a four-token answer, to prove the module runs."""
    from agent.turn.context import ContextWindow
    from rag.excerpts.packing import Ledger, Packer, block

    quick = quick or smoke
    model = workload.chat_model()
    tokenizer = model.tokenizer
    repeats = 1 if smoke else 5 if quick else 21
    messages, options = workload.answer_prompt(k=1 if smoke else 5)
    options = replace(options, max_tokens=4 if smoke else 64) if quick else options
    answer = answer_ms(model, messages, options, 1 if quick else 3)
    label = f"share of a {options.max_tokens}-token answer"
    rows = []

    full = full_prompt(tokenizer, messages)
    n_full = tokenizer.count_chat(full)
    text = tokenizer.render_chat(full)
    rows.append(row(f"count_chat, whole {n_full}-token prompt, ms vs answer ms", repeat_ms(lambda: tokenizer.count_chat(full), repeats),
                    answer, f"info: {label}", unit="ms",
                    note=f"of which tokenize only: {repeat_ms(lambda: tokenizer.count(text), repeats):.2f} ms"))

    window = ContextWindow(tokenizer)
    budget = window.prepare(workload.QUESTION, []).evidence_budget
    index = workload.docs_index()
    for k in (5,) if smoke else (5, 10, 20):
        hits = index.search(workload.QUESTION, k=k)
        tally = TallyingTokenizer(tokenizer)
        Packer(tally).assemble(workload.QUESTION, hits, budget)
        calls, counted = tally.calls, tally.tokens
        ms = repeat_ms(lambda: Packer(tokenizer, Ledger()).assemble(workload.QUESTION, hits, budget), repeats)
        rows.append(row(f"packer whole-text counting, k={k} hits into {budget} tokens, ms vs answer ms", ms, answer,
                        f"info: {label}", unit="ms", note=f"{calls} counts, {counted} tokens counted"))

    hits = index.search(workload.QUESTION, k=5)
    packed, _ = Packer(tokenizer, Ledger()).assemble(workload.QUESTION, hits, budget)
    blocks = [(n, block(n, h)) for n, h in enumerate(packed.used, start=1)]
    history = [(workload.QUESTION, workload.CANNED_ANSWER)]
    tally = TallyingTokenizer(tokenizer)
    counted_window = ContextWindow(tally)
    counted_window.build(counted_window.prepare(workload.FOLLOW_UP, history), blocks)

    def fit() -> None:
        window.build(window.prepare(workload.FOLLOW_UP, history), blocks)

    rows.append(row("context window per turn (prepare + build + layers), ms vs answer ms", repeat_ms(fit, repeats),
                    answer, f"info: {label}", unit="ms", note=f"{tally.calls} counts, {tally.tokens} tokens counted"))
    for r in rows:
        r["section"] = SECTION
    return rows
