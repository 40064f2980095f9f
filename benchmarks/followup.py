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


def run(quick: bool = False, smoke: bool = False) -> list[dict]:
    """Rows of the table; smoke: one excerpt, four-token answers, to prove the module runs."""
    quick = quick or smoke
    model = workload.chat_model()
    llm, tokenizer = model.llm, model.tokenizer
    repeats = 1 if quick else 5

    # A real chat: turn 1 is answered by the model, so the cache holds what a chat leaves behind.
    recorder = workload.PromptRecorder(model, live=True)
    # Quick: two excerpts instead of five, so each prompt evaluation takes about half as long.
    session = workload.session(recorder, k=1 if smoke else 2 if quick else 5,
                               answer_tokens=4 if smoke else 16 if quick else None)
    llm.reset()
    workload.finish(session.ask(workload.QUESTION))
    after_turn_1 = [int(t) for t in llm._input_ids]
    saved = llm.save_state()  # the KV cache as turn 1 left it, restored before every timed follow-up
    rows = []
    if quick:
        recorder.live = False  # turn 2's prompt is all we need; its timing is taken below
        workload.finish(session.ask(workload.FOLLOW_UP))
    else:
        rows += live_rows(session, model)
    (turn1, _), (turn2, options) = recorder.prompts[-2], recorder.prompts[-1]
    options = replace(options, max_tokens=2)
    p1, p2 = tokenizer.chat_tokens(turn1), tokenizer.chat_tokens(turn2)
    prefix = common_prefix(p1, p2)
    reused = common_prefix(after_turn_1, p2)  # what llama.cpp itself will keep: should equal `prefix`
    new = len(p2) - prefix

    def restore() -> None:
        llm.load_state(saved)

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
        llm.reset()  # forget the cache: every prompt token is evaluated again
        return first_delta(model.stream(turn2, options))

    a, b = interleaved(ours, new_tokens_eval, repeats)
    eval_time = median(b)
    rows = [
        row(f"follow-up TTFT s, prefix kept ({prefix} shared, {new} new of {len(p2)}) vs eval of the new tokens",
            median(a), eval_time, "ratio <= 1.2", unit="s", note=f"llama.cpp reused {reused} tokens of the cache"),
    ] + [r | {"baseline": eval_time, "ratio": r["ours"] / eval_time} for r in rows]
    if not quick:  # what reuse saves: the whole prompt evaluated again (left out of --quick to stay under a minute)
        c, d = interleaved(broken, ours, repeats)
        rows.insert(1, row(f"follow-up TTFT s, cache reset (all {len(p2)} evaluated) vs prefix kept", median(c),
                           median(a + d), "info: what reuse saves", unit="s"))
    for r in rows:
        r["section"] = SECTION
    return rows


def live_rows(session, model) -> list[dict]:
    """Turn 2 of the live chat, timed as the model layer reports it and as the user sees it (search included)."""
    asked = time.perf_counter()
    seen = None
    for event in session.ask(workload.FOLLOW_UP):
        if seen is None and isinstance(event, TextDelta) and event.text:
            seen = time.perf_counter() - asked
    return [
        row("follow-up, live ChatSession: model TTFT s (1 run) vs eval of the new tokens",
            model.last_stats.time_to_first_token, None, "ratio <= 1.2", unit="s"),
        row("follow-up, live ChatSession: ask() to first text s (search+pack+TTFT) vs eval of new", seen, None,
            "info", unit="s"),
    ]
