"""`smoldocs check`: any agent's answer checked against the excerpts it was shown, for people or CI."""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass

# Looked up on `common` at call time, so a test that swaps in fake components reaches every command.
from agent import json_output
from agent.surfaces.commands import common
from agent.surfaces.commands.common import add_index_options, open_index_from_args
from agent.errors import UsageError
from agent.settings import Settings
from agent.input_files import MAX_ANSWER_BYTES, MAX_SHOWN_BYTES, read_text
from agent.chats.codec import verification_to_dict
from rag.verification.answer_check import MAX_ANSWER_CHARS, check_citations, supported_share
from rag.excerpts.shown_file import read_shown
from rag.printable import one_line, visible
from rag.verification.verdicts import Verdict, Verification

HELP = "check an answer's [n] citations against the excerpts it was shown (exit 1 on made-up or unresolved ones)"
FAILED = 1  # a made-up or unresolved citation, or too few supported claims; 2 stays the usage-error code


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("answer", metavar="ANSWER_FILE", help="the answer, citing excerpts as [n] (- reads stdin)")
    p.add_argument(
        "--shown", metavar="SHOWN", required=True,
        help="file of what the agent was shown: a JSON list of {n, chunk_id}, or the numbered excerpts as "
             "smoldocs pack or search_docs printed them",
    )
    p.add_argument(
        "--min-supported", type=_share, default=None, metavar="X",
        help="also fail unless at least this share (0-1) of the answer's factual claims is supported",
    )
    p.add_argument("--json", action="store_true", help="print the verdicts as one JSON object")
    add_index_options(p)


def _share(value: str) -> float:
    try:
        x = float(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number from 0 to 1, got {value!r}") from None
    if not 0.0 <= x <= 1.0:
        raise argparse.ArgumentTypeError(f"expected a number from 0 to 1, got {value}")
    return x


def _read(path: str, what: str, limit: int, fix: str) -> str:
    try:
        return read_text(path, f"the {what}", limit, fix)
    except FileNotFoundError:
        raise UsageError(f"{what} file not found: {path}") from None
    except IsADirectoryError:
        raise UsageError(f"{what} is a folder, not a file: {path}") from None
    except OSError as exc:
        raise UsageError(f"cannot read the {what} file {path}: {exc.strerror or exc}") from None


def render(report: Verification, share: float | None) -> str:
    """The verdicts for people: one line per cited number, then one per factual claim."""
    lines = [f"citations: {len(report.citations)}" + ("" if report.citations else " (the answer cites nothing)")]
    for c in report.citations:
        score = f" {c.support:.2f}" if c.support is not None else ""
        reason = f"  ({c.reason})" if c.reason and c.verdict.strength <= Verdict.UNSUPPORTED.strength else ""
        lines.append(f"  {c.verdict.mark} [{c.n}] {c.verdict.label}{score}  {one_line(c.chunk_id or '-')}{reason}")
    tally = ", ".join(f"{n} {v.label}" for v, n in report.counts().items() if n)
    lines.append(f"claims: {len(report.claims)}" + (f" ({tally})" if tally else ""))
    for claim in report.claims:
        marks = "".join(f"[{n}]" for n in claim.citations)
        text = " ".join(claim.text.split())
        text = text if len(text) <= 90 else text[:87] + "..."
        lines.append(f"  {claim.verdict.mark} {claim.verdict.label:<12} {text} {marks}".rstrip())
    lines.append("supported: " + ("no factual claims" if share is None else f"{share:.0%} of claims"))
    return "\n".join(lines)


@dataclass(frozen=True)
class Options:
    answer: str
    shown: str
    min_supported: float | None = None
    json: bool = False


def run(settings: Settings, options: Options) -> int:
    if options.answer == "-" and options.shown == "-":
        raise UsageError("only one of ANSWER_FILE and --shown can read stdin: give the other as a file")
    answer = _read(options.answer, "answer", MAX_ANSWER_BYTES, f"smoldocs checks at most {MAX_ANSWER_CHARS} characters: "
                   "check it in parts")
    if len(answer) > MAX_ANSWER_CHARS:
        raise UsageError(f"the answer is {len(answer)} characters long, more than {MAX_ANSWER_CHARS}: check it in parts")
    shown_text = _read(options.shown, "--shown", MAX_SHOWN_BYTES, "pass only the excerpts the agent was shown")
    models = common.open_models(settings)
    embedder = models.embedder
    index = open_index_from_args(settings, models, quiet=True)
    shown = read_shown(shown_text, index)
    report = check_citations(answer, shown, index.chunk, embedder)
    share = supported_share(report)
    short = options.min_supported is not None and (share or 0.0) < options.min_supported
    if options.json:
        passed = not (report.made_up or report.unresolved or short)
        extra = {"supported_share": share, "min_supported": options.min_supported, "passed": passed}
        print(json_output.dumps(verification_to_dict(report) | extra))
    else:
        print(visible(render(report, share)))
    failures = []
    if report.made_up:
        failures.append("made up: " + ", ".join(f"[{n}]" for n in report.made_up))
    if report.unresolved:
        failures.append("unresolved: " + ", ".join(f"[{n}]" for n in report.unresolved))
    if short:
        got = "no factual claim" if share is None else f"{share:.0%}"
        failures.append(f"supported claims {got}, below --min-supported {options.min_supported:.0%}")
    if failures:
        print(visible("smoldocs check: failed: " + "; ".join(failures)), file=sys.stderr)
        return FAILED
    return 0
