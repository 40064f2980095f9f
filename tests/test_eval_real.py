"""The CI subset of `smoldocs eval`: 12 questions (2 unanswerable) through the real model and index.

The rows of report.json are re-checked here on their own, so a bug in the report's summary cannot hide
a broken invariant.
"""

from __future__ import annotations


import pytest

from agent.cli import main
from agent.eval.records import FLAGGED
from json_support import read_output

pytestmark = pytest.mark.real


@pytest.fixture(scope="module")
def ci_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("eval")
    code = main(["eval", "--limit", "12", "--out", str(out), "--no-progress"])
    return code, read_output("eval", (out / "report.json").read_text(encoding="utf-8")), (out / "report.md").read_text("utf-8")


def test_ci_subset_exits_zero_through_the_command(ci_run):
    code, report, _ = ci_run
    assert code == 0, report["gate"]
    assert report["gate"] == {"ok": True, "invariants": [], "thresholds": {}, "missed": []}


def test_ci_subset_is_twelve_questions_with_two_unanswerable(ci_run):
    _, report, md = ci_run
    rows = report["rows"]
    assert len(rows) == 12 and sum(r["doc"] is None for r in rows) == 2
    assert all(f"### {r['id']}:" in md for r in rows)
    assert report["settings"]["policy"] == "search-first"  # auto resolves so for a 135M model


def test_no_question_crashed(ci_run):
    rows = ci_run[1]["rows"]
    assert [(r["id"], r["error"]) for r in rows if r["error"] or r["status"] == "error"] == []


def test_no_prompt_exceeds_the_context_window(ci_run):
    rows = ci_run[1]["rows"]
    for r in rows:
        assert r["n_ctx"] == 2048
        assert 0 < r["prompt_tokens"] and r["prompt_tokens"] + r["completion_tokens"] <= r["n_ctx"], r["id"]


def test_every_cited_number_is_flagged_or_resolved(ci_run):
    rows = ci_run[1]["rows"]
    for r in rows:
        by_n = {c["n"]: c for c in r["citations"]}
        for n in r["markers"]:
            c = by_n.get(n)
            assert c is not None, f"{r['id']}: [{n}] was shown but never checked"
            assert c["verdict"] in FLAGGED or (c["in_index"] and c["shown"]), f"{r['id']}: [{n}] {c}"


def test_no_made_up_or_unresolved_citation_counts_as_supported(ci_run):
    rows = ci_run[1]["rows"]
    for r in rows:
        for c in r["citations"]:
            if not (c["in_index"] and c["shown"]):
                assert c["verdict"] in FLAGGED, f"{r['id']}: [{c['n']}] passed as {c['verdict']}"
    summary = ci_run[1]["citations"]
    assert summary["flagged_or_resolved"] in (None, 1.0) and summary["falsely_passed"] == 0


def test_report_carries_every_metric_the_issue_asks_for(ci_run):
    report = ci_run[1]
    names = {(r["name"], r["level"]) for r in report["retrieval"]}
    assert names == {(m, level) for m in ("bm25", "dense", "hybrid") for level in ("chunk", "doc")}
    assert all(0.0 <= r["recall_at_1"] <= r["recall_at_5"] <= 1.0 for r in report["retrieval"])
    cost = report["cost"]
    assert cost["latency_p50"] > 0 and cost["latency_p95"] >= cost["latency_p50"]
    assert cost["prompt_tokens_max"] <= cost["n_ctx"] == 2048
    assert cost["agent_searches"] == 12 and cost["tool_steps"] == 0
