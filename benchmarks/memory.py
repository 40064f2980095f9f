"""Peak RSS of the TUI with a loaded chat: the real app, headless, in its own process, over the real session.

The child asks real questions through the input box, waits for each answer, then opens the saved chat again
from the chat store (new chat, resume), so the peak covers a loaded chat. Baseline: a bare llama.cpp process.

Run alone: .venv/bin/python -m benchmarks --only memory
Child (used by run): .venv/bin/python -m benchmarks.memory QUESTION...
"""

from __future__ import annotations

import asyncio
import json
import sys
import tempfile
import time

from benchmarks import workload
from benchmarks.child import bare_llama, run_child
from benchmarks.table import row

SECTION = "memory"
LOAD_TIMEOUT = 600.0
ANSWER_TIMEOUT = 900.0


async def _until(pilot, condition, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise TimeoutError(f"the TUI did not {what} within {timeout:.0f} s")
        await pilot.pause(0.05)


async def drive_tui(questions: list[str], store_root: str, answer_tokens: int | None = None) -> dict:
    """Ask `questions` in the real TUI, then reload the chat from the store; what it showed.

    `answer_tokens` caps the answers (quick mode): the KV cache is allocated whole at load, so the peak hardly
    depends on how long the answers are."""
    from dataclasses import replace

    from agent.chats import ChatStore
    from agent.session import open_session
    from agent.settings import AgentSettings
    from agent.surfaces.tui import make_app

    settings = AgentSettings()
    if answer_tokens:
        settings = settings.with_(generation=replace(settings.generation, max_tokens=answer_tokens))
    store = ChatStore(store_root)
    app = make_app(lambda progress=None: open_session(progress=progress, settings=settings), store)
    async with app.run_test(size=(120, 40)) as pilot:
        screen = app.chat
        await _until(pilot, lambda: screen.session is not None, LOAD_TIMEOUT, "load the session")
        for i, question in enumerate(questions):
            screen.query_one("#question").value = question
            await pilot.press("enter")
            await _until(pilot, lambda: len(screen.query("AnswerView")) > i, 60, "start an answer")
            view = list(screen.query("AnswerView"))[-1]
            await _until(pilot, lambda: view.finished and not screen.busy, ANSWER_TIMEOUT, "finish an answer")
        # Reload the chat the way a user does: new chat, chat list, the most recent one.
        await pilot.press("ctrl+n")
        await pilot.press("ctrl+o")
        await pilot.press("enter")
        await _until(pilot, lambda: len(app.chat.query("AnswerView")) == len(questions), 60, "reload the chat")
        await pilot.pause(0.5)
        views = list(app.chat.query("AnswerView"))
        turns = len(views)
        statuses = [view.answer.status for view in views if getattr(view, "answer", None)]
    return {"turns_shown": turns, "statuses": statuses}


def run(quick: bool = False, smoke: bool = False) -> list[dict]:
    """Rows of the table; smoke: one question with an eight-token answer, to prove the module runs."""
    quick = quick or smoke
    questions = [workload.QUESTION] if quick else [workload.QUESTION, workload.FOLLOW_UP]
    with tempfile.TemporaryDirectory(prefix="smoldocs-bench-chats-") as store:
        cap = ["--answer-tokens", "8" if smoke else "48"] if quick else []
        tui = run_child([sys.executable, "-m", "benchmarks.memory", "--store", store, *cap, *questions])
    lines = [line for line in tui.output.splitlines() if line.startswith("{")]
    if tui.returncode != 0 or not lines:
        raise RuntimeError(f"TUI child failed (exit {tui.returncode}): {(tui.errors or tui.output)[-400:]}")
    shown = json.loads(lines[-1])
    bare = bare_llama(64, 8)
    return [
        row(f"peak RSS TUI, loaded chat of {shown['turns_shown']} turns ({', '.join(shown['statuses'])}) MB "
            "vs bare llama.cpp process", tui.peak_rss_mb, bare.peak_rss_mb, "ours <= 600", unit="MB",
            section=SECTION, note=f"TUI child ran {tui.seconds:.0f} s"),
    ]


def main(argv: list[str]) -> int:
    import argparse

    parser = argparse.ArgumentParser(prog="python -m benchmarks.memory")
    parser.add_argument("--store", required=True)
    parser.add_argument("--answer-tokens", type=int, default=None)
    parser.add_argument("questions", nargs="+")
    args = parser.parse_args(argv)
    print(json.dumps(asyncio.run(drive_tui(args.questions, args.store, args.answer_tokens))), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
