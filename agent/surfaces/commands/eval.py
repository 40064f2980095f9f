"""`smoldocs eval`: its flags; the run itself (agent.eval.run) is the evaluation's, with Options defined there."""

from __future__ import annotations

import argparse

from agent.eval import Openers, Options
from agent.eval import run as run_eval
from agent.settings import POLICIES, AgentSettings, Settings

HELP = "ask the question set, measure retrieval, citations, answers and cost; non-zero exit when an invariant breaks"


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
    from agent.surfaces.commands.common import (
        add_current_only_option, add_decoding_options, add_index_options, positive_int,
    )

    add_index_options(p)
    add_current_only_option(p)
    p.add_argument("--questions", metavar="FILE", default=None,
                   help="JSONL, one {id, q, doc, evidence, alt_docs?} a line; doc null = unanswerable "
                        "(default: questions.jsonl of --docs)")
    p.add_argument("--limit", metavar="N", type=positive_int, default=None,
                   help="a fixed sample of N questions spread evenly over the file, with at least 2 unanswerable")
    p.add_argument("--tools", choices=POLICIES, default=None, help="who decides the searches (default: auto)")
    add_decoding_options(p)
    p.add_argument("--few-shot", action=argparse.BooleanOptionalAction, default=True,
                   help="add one worked example after the system rules (default: on)")
    p.add_argument("--no-fallback", dest="fallback", action="store_false",
                   help="do not add quoted sentences when no claim of the answer is supported")
    p.add_argument("--k", metavar="N", type=positive_int, default=None, help="hits per search (default: 5)")
    p.add_argument("--seed", metavar="N", type=int, default=None, help="sampling seed (default: the model's, 0)")
    p.add_argument("--temperature", type=_non_negative, default=None, help="answer sampling temperature")
    p.add_argument("--repeat-penalty", type=_non_negative, default=None, help="answer repeat penalty")
    p.add_argument("--max-tokens", metavar="N", type=positive_int, default=None, help="answer length limit in tokens")
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


def run(settings: Settings, options: Options) -> int:
    return run_eval(settings, options, Openers(session=_open_session, index=_open_index))


def _open_session(settings: Settings, quiet: bool, agent: AgentSettings):
    from agent.surfaces.commands.sessions import open_cli_session

    return open_cli_session(settings, quiet=quiet, agent=agent)


def _open_index(settings: Settings, quiet: bool):
    """The index and the tokenizer, without the chat model (--no-model)."""
    from agent.surfaces.commands.common import open_index_from_args, open_models

    models = open_models(settings)
    return open_index_from_args(settings, models, quiet=quiet), models.tokenizer
