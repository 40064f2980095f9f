"""Follow-up turn: time to first token of a second question against llama.cpp evaluating only its new tokens.

The agent's layout is system rules, evidence, history, question. Turn 2's evidence differs from turn 1's, so
the reusable prefix is what the two prompts share at the start; "new tokens" are the prompt tokens after the
longest common token prefix with the previous prompt, computed from the real token ids.

Run alone: .venv/bin/python -m benchmarks --only followup
"""

from __future__ import annotations

import time
from dataclasses import replace

from agent.events import TextDelta
from benchmarks import workload
from benchmarks.measure import interleaved, median
from benchmarks.table import row

SECTION = "follow-up turn"


def common_prefix(a, b) -> int:
    """How many leading token ids `a` and `b` share."""
    n = 0
    for x, y in zip(a, b):
        if x != y:
            break
        n += 1
    return n


def first_delta(deltas) -> float:
    """Seconds from now until `deltas` yields its first non-empty text; the rest is drained."""
    start = time.perf_counter()
    seconds = None
    for text in deltas:
        if text and seconds is None:
            seconds = time.perf_counter() - start
    return seconds if seconds is not None else float("nan")


def run(quick: bool = False) -> list[dict]:
    model = workload.chat_model()
    llm, tokenizer = model.llm, model.tokenizer
    repeats = 2 if quick else 6

    # A real two-turn chat: turn 1 answers for real, so the cache holds what a chat leaves behind.
    recorder = workload.PromptRecorder(model, live=True)
    session = workload.session(recorder, answer_tokens=48 if quick else None)
    llm.reset()
    workload.finish(session.ask(workload.QUESTION))
    after_turn_1 = [int(t) for t in llm._input_ids]
    asked = time.perf_counter()
    live_first = None
    for event in session.ask(workload.FOLLOW_UP):
        if live_first is None and isinstance(event, TextDelta) and event.text:
            live_first = time.perf_counter() - asked
    live_model_ttft = model.last_stats.time_to_first_token

    (turn1, _), (turn2, options) = recorder.prompts[-2], recorder.prompts[-1]
    options = replace(options, max_tokens=2)
    p1, p2 = tokenizer.chat_tokens(turn1), tokenizer.chat_tokens(turn2)
    prefix = common_prefix(p1, p2)
    reused = common_prefix(after_turn_1, p2)  # what llama.cpp itself will keep: should equal `prefix`
    new = len(p2) - prefix

    def restore() -> None:
        llm.reset()
        llm.eval(after_turn_1)

    def ours() -> float:
        restore()
        return first_delta(model.stream(turn2, options))

    def new_tokens_eval() -> float:
        llm.reset()
        llm.eval(p2[:prefix])
        start = time.perf_counter()
        llm.eval(p2[prefix:])
        return time.perf_counter() - start

    def broken() -> float:
        restore()
        llm.reset()  # forget the cache: every prompt token is evaluated again
        return first_delta(model.stream(turn2, options))

    ours(), new_tokens_eval()  # warm-up
    a, b = interleaved(ours, new_tokens_eval, repeats)
    c, d = interleaved(broken, ours, repeats)
    reuse_ttft, eval_time = median(a), median(b)
    rows = [
        row(f"follow-up TTFT s, prefix kept ({prefix} shared, {new} new of {len(p2)}) vs eval of the new tokens",
            reuse_ttft, eval_time, "ratio <= 1.2", unit="s",
            note=f"llama.cpp reused {reused} tokens of the cache"),
        row(f"follow-up TTFT s, cache reset (all {len(p2)} evaluated) vs prefix kept", median(c), median(a + d),
            "info: what reuse saves", unit="s"),
        row("follow-up, live ChatSession: model TTFT s (1 run) vs eval of the new tokens", live_model_ttft, eval_time,
            "ratio <= 1.2", unit="s"),
        row("follow-up, live ChatSession: ask() to first text s (search+pack+TTFT) vs eval of new", live_first,
            eval_time, "info", unit="s"),
    ]
    for r in rows:
        r["section"] = SECTION
    return rows
