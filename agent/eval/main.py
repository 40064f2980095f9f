"""`smoldocs eval` end to end: its options, the run with the model and the run without it, the progress shown,
what is printed and written, and the exit code. The command module only declares the flags."""

from __future__ import annotations

import sys
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Callable

from agent import json_output
from agent.settings import AgentSettings, Settings

MODES = ("bm25", "dense", "hybrid")


@dataclass(frozen=True)
class Options:
    """eval's own options; --tools, --decoding, --rerank, --temperature and --max-tokens are Settings.agent's."""

    questions: str | None = None
    limit: int | None = None
    few_shot: bool = True
    fallback: bool = True
    k: int | None = None
    seed: int | None = None
    repeat_penalty: float | None = None
    no_model: bool = False
    json: bool = False
    out: str | None = None
    min_recall5: float | None = None
    min_citation_precision: float | None = None
    max_made_up_rate: float | None = None
    progress: bool | None = None


@dataclass(frozen=True)
class Openers:
    """How the run opens what it asks: the surfaces own the loaders and their progress bars, and nothing under
    agent/eval may import a surface (tests/test_layers.py)."""

    session: Callable[[Settings, bool, AgentSettings], Any]  # (settings, quiet, agent) -> a ChatSession
    index: Callable[[Settings, bool], tuple[Any, Any]]  # (settings, quiet) -> (index, tokenizer), no chat model


def agent_settings(settings: Settings, options: Options) -> AgentSettings:
    """Settings.agent with eval's own overrides applied (only those given)."""
    agent = replace(settings.agent, fallback=options.fallback, few_shot=options.few_shot)
    if options.k is not None:
        agent = replace(agent, k=options.k)
    changes: dict[str, Any] = {
        name: value for name, value in (("seed", options.seed), ("repeat_penalty", options.repeat_penalty))
        if value is not None
    }
    return replace(agent, generation=replace(agent.generation, **changes))


def run(settings: Settings, options: Options, openers: Openers) -> int:
    """The whole eval: the report printed (and written with --out); 0, 1 when the gate fails, 130 interrupted."""
    from agent.eval.metrics import Thresholds
    from agent.eval.report import build_report, check_out_dir, format_terminal, write_report
    from agent.eval.runner import default_question_file, load_question_file, retrieval_rows, run_questions, stratified

    # Cheap checks first: a typo in a path should not cost a model load.
    docs = Path(settings.docs) if settings.docs else None
    path = Path(options.questions) if options.questions else default_question_file(docs)
    questions = stratified(load_question_file(path), options.limit)
    if options.out:
        check_out_dir(options.out)
    agent = agent_settings(settings, options)
    thresholds = Thresholds(options.min_recall5, options.min_citation_precision, options.max_made_up_rate)
    if options.no_model:
        return _run_without_model(settings, options, questions, agent, path, openers)

    session = openers.session(settings, options.progress is False, agent)
    retrieval = retrieval_rows(session.retriever, questions, MODES)
    bar = QuestionProgress(sys.stderr, options.progress)
    records, interrupted = [], False
    try:
        for record in run_questions(session, questions, progress=bar):
            records.append(record)
    except KeyboardInterrupt:
        interrupted = True  # report what ran so far; the gate fails below
    finally:
        bar.close()
    report = build_report(records, retrieval, _settings_info(options, session, path, session.index_size), thresholds)
    if interrupted:
        report["gate"]["ok"] = False
        report["gate"]["invariants"].append(f"interrupted after {len(records)} of {len(questions)} questions")
    if options.json:
        print(json_output.dumps(report, indent=1))
    else:
        print(format_terminal(report))
    if options.out:
        json_path, md_path = write_report(options.out, report)
        print(f"smoldocs: wrote {json_path} and {md_path}", file=sys.stderr)
    if interrupted:
        return 130
    if not report["gate"]["ok"]:
        for reason in report["gate"]["invariants"] + report["gate"]["missed"]:
            print(f"smoldocs eval: {reason}", file=sys.stderr)
        return 1
    return 0


def _run_without_model(
    settings: Settings, options: Options, questions, agent: AgentSettings, path: Path, openers: Openers
) -> int:
    """Retrieval metrics and conflict notes over every question, with the tokenizer and embedder only."""
    from agent.eval.report import build_probe_report, format_probe, write_probe
    from agent.eval.runner import probe_questions, retrieval_rows

    index, tokenizer = openers.index(settings, options.progress is False)
    retrieval = retrieval_rows(index, questions, MODES)
    records = list(probe_questions(index, tokenizer, questions, agent))
    info = {"questions": str(path), "limit": options.limit, "chunks": len(index), "k": agent.k,
            "current_only": settings.current_only, "model": None}
    report = build_probe_report(records, retrieval, info)
    print(json_output.dumps(report, indent=1) if options.json else format_probe(report))
    if options.out:
        print(f"smoldocs: wrote {write_probe(options.out, report)}", file=sys.stderr)
    return 0


def _settings_info(options: Options, session, questions_path: Path, chunks: int) -> dict:
    s = session.settings
    return {
        "model": session.model_name,
        "n_ctx": session.n_ctx,
        "docs": str(session.docs_dir),
        "questions": str(questions_path),
        "limit": options.limit,
        "chunks": chunks,
        "tools": s.policy,
        "policy": session.policy,
        "decoding": s.decoding,
        "fallback": s.fallback,
        "few_shot": s.few_shot,
        "k": s.k,
        "temperature": s.generation.temperature,
        "repeat_penalty": s.generation.repeat_penalty,
        "max_tokens": s.generation.max_tokens,
        "seed": s.generation.seed,
    }


class QuestionProgress:
    """Progress over the questions: a live bar on a terminal, or with --progress elsewhere a line per question."""

    WIDTH = 24

    def __init__(self, stream, wanted: bool | None) -> None:
        self.stream = stream
        tty = hasattr(stream, "isatty") and stream.isatty()
        self.live = wanted is not False and tty
        self.lines = wanted is True and not tty
        self.started = time.monotonic()
        self._drawn = False

    def __call__(self, done: int, total: int, record) -> None:
        per_question = (time.monotonic() - self.started) / done
        if self.lines:
            from agent.eval.metrics import problems

            note = "; ".join(problems(record)) or "ok"
            print(f"{done}/{total} {record.id} {record.status} {record.latency:.1f} s  {note}", file=self.stream, flush=True)
        elif self.live:
            filled = self.WIDTH * done // total
            bar = "#" * filled + "." * (self.WIDTH - filled)
            left = per_question * (total - done)
            line = f"asking [{bar}] {done}/{total} questions  {per_question:.1f} s each  {left / 60:.0f} min left  {record.id}"
            self.stream.write("\r\033[K" + line)
            self.stream.flush()
            self._drawn = True

    def close(self) -> None:
        if self._drawn:
            self.stream.write("\r\033[K")
            self.stream.flush()
            self._drawn = False
