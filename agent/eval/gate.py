"""The exit-code gate: invariants that must always hold, and optional quality thresholds for CI."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from agent.eval.metrics import overflows
from agent.eval.records import Record


@dataclass(frozen=True)
class Thresholds:
    min_recall5: float | None = None  # hybrid search, chunk level
    min_citation_precision: float | None = None
    max_made_up_rate: float | None = None

    def as_dict(self) -> dict:
        return {k: v for k, v in vars(self).items() if v is not None}


def invariant_failures(records: Sequence[Record], citations: dict) -> list[str]:
    """Why the run is broken, one line each: a crash, a context overflow, a bad citation not flagged."""
    out = []
    if not records:
        out.append("no question was run")
    crashed = [r for r in records if r.crashed]
    if crashed:
        first = crashed[0]
        out.append(f"{len(crashed)} question(s) crashed, first {first.id}: {first.error or first.status}")
    over = [r.id for r in records if overflows(r)]
    if over:
        out.append(f"{len(over)} prompt(s) overflowed the context window: {', '.join(over[:5])}")
    if citations["flagged_or_resolved"] is not None and citations["flagged_or_resolved"] < 1.0:
        missing = citations["cited"] - citations["resolved"] - citations["flagged"]
        out.append(f"{missing} cited number(s) neither resolved nor flagged")
    if citations["falsely_passed"]:
        out.append(f"{citations['falsely_passed']} citation(s) that do not resolve were not flagged")
    return out


def threshold_failures(thresholds: Thresholds, recall5: float | None, citations: dict) -> list[str]:
    """Which requested quality thresholds the run missed."""
    out = []
    if thresholds.min_recall5 is not None and (recall5 or 0.0) < thresholds.min_recall5:
        out.append(f"hybrid chunk Recall@5 {_fmt(recall5)} is below --min-recall5 {thresholds.min_recall5}")
    precision = citations["precision"]
    if thresholds.min_citation_precision is not None and (precision or 0.0) < thresholds.min_citation_precision:
        out.append(
            f"citation precision {_fmt(precision)} is below --min-citation-precision {thresholds.min_citation_precision}"
        )
    made_up = citations["made_up_rate"] or 0.0  # no citation at all: nothing was made up
    if thresholds.max_made_up_rate is not None and made_up > thresholds.max_made_up_rate:
        out.append(f"made-up rate {made_up:.3f} is above --max-made-up-rate {thresholds.max_made_up_rate}")
    return out


def _fmt(value: float | None) -> str:
    return "undefined" if value is None else f"{value:.3f}"
