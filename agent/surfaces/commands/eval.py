"""`smoldocs eval`: the question set through the agent, metrics without a judge model, a report and a gate."""

from __future__ import annotations

import argparse
import sys
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from agent import json_output
from agent.eval.gate import Thresholds
from agent.settings import POLICIES, AgentSettings, Settings

HELP = "ask the question set, measure retrieval, citations, answers and cost; non-zero exit when an invariant breaks"
MODES = ("bm25", "dense", "hybrid")


def _positive_int(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a whole number >= 1, got {text}")
    return value


def _share(text: str) -> float:
    value = float(text)
    if not 0.0 <= value <= 1.0:
        raise argparse.ArgumentTypeError(f"expected a number from 0 to 1, got {text}")
    return value


def _non_negative(text: str) -> float:
    value = float(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"expected a number >= 0, got {text}")
    return value


def add_arguments(p: argparse.ArgumentParser) -> None:
    from agent.surfaces.commands.common import add_current_only_option, add_decoding_options, add_index_options

    add_index_options(p)
    add_current_only_option(p)
    p.add_argument("--questions", metavar="FILE", default=None,
                   help="JSONL, one {id, q, doc, evidence, alt_docs?} a line; doc null = unanswerable "
                        "(default: questions.jsonl of --docs)")
    p.add_argument("--limit", metavar="N", type=_positive_int, default=None,
                   help="a fixed sample of N questions spread evenly over the file, with at least 2 unanswerable")
    p.add_argument("--tools", choices=POLICIES, default=None, help="who decides the searches (default: auto)")
    add_decoding_options(p)
    p.add_argument("--few-shot", action=argparse.BooleanOptionalAction, default=True,
                   help="add one worked example after the system rules (default: on)")
    p.add_argument("--no-fallback", dest="fallback", action="store_false",
                   help="do not add quoted sentences when no claim of the answer is supported")
    p.add_argument("--k", metavar="N", type=_positive_int, default=None, help="hits per search (default: 5)")
    p.add_argument("--seed", metavar="N", type=int, default=None, help="sampling seed (default: the model's, 0)")
    p.add_argument("--temperature", type=_non_negative, default=None, help="answer sampling temperature")
    p.add_argument("--repeat-penalty", type=_non_negative, default=None, help="answer repeat penalty")
    p.add_argument("--max-tokens", metavar="N", type=_positive_int, default=None, help="answer length limit in tokens")
    p.add_argument("--no-model", action="store_true",
                   help="search and pack each question as a search-first turn, without the model: retrieval "
                        "and conflict-note rates only (fast)")
    p.add_argument("--json", action="store_true", help="print the whole report as JSON instead of the table")
    p.add_argument("--out", metavar="DIR", default=None, help="write report.json and report.md (one row per question)")
    p.add_argument("--min-recall5", type=_share, default=None, help="fail below this hybrid chunk Recall@5")
    p.add_argument("--min-citation-precision", type=_share, default=None, help="fail below this citation precision")
    p.add_argument("--max-made-up-rate", type=_share, default=None, help="fail above this share of made-up numbers")
    p.add_argument("--progress", action=argparse.BooleanOptionalAction, default=None,
                   help="show progress on stderr (default: a live bar on a terminal; --progress elsewhere prints "
                        "a line per question)")


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


def run(settings: Settings, options: Options) -> int:
    from agent.surfaces.commands.sessions import open_cli_session
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
        return _run_without_model(settings, options, questions, agent, path)

    session = open_cli_session(settings, quiet=options.progress is False, agent=agent)
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


def _run_without_model(settings: Settings, options: Options, questions, agent: AgentSettings, path: Path) -> int:
    """Retrieval metrics and conflict notes over every question, with the tokenizer and embedder only."""
    from agent.surfaces.commands.common import open_index_from_args, open_models
    from agent.eval.probe import probe_questions
    from agent.eval.report import build_probe_report, format_probe
    from agent.eval.runner import retrieval_rows

    models = open_models(settings)
    index = open_index_from_args(settings, models, quiet=options.progress is False)
    retrieval = retrieval_rows(index, questions, MODES)
    records = list(probe_questions(index, models.tokenizer, questions, agent))
    info = {"questions": str(path), "limit": options.limit, "chunks": len(index), "k": agent.k,
            "current_only": settings.current_only, "model": None}
    report = build_probe_report(records, retrieval, info)
    print(json_output.dumps(report, indent=1) if options.json else format_probe(report))
    if options.out:
        from agent.eval.report import write_probe

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
