"""Verdicts: one enum with its order and labels, one decision place, and one marker grammar in the tree."""

from __future__ import annotations

import re
from pathlib import Path

from rag.verification.verdicts import ORDER, CitationVerdict, ClaimVerdict, Verdict, Verification, per_number, weaker

ROOT = Path(__file__).resolve().parent.parent


def cv(n, verdict, support=None):
    return CitationVerdict(n, f"d#{n}", "d", "d", verdict, support)


def test_strength_follows_the_order_best_first():
    assert [v.strength for v in ORDER] == sorted((v.strength for v in ORDER), reverse=True)
    assert Verdict.SUPPORTED.strength > Verdict.WEAK.strength > Verdict.UNSUPPORTED.strength > Verdict.MADE_UP.strength


def test_every_verdict_has_a_label_a_note_and_a_mark():
    for v in Verdict:
        assert v.label and v.note and len(v.mark) == 1
    assert Verdict.WEAK.label == "weak support" and Verdict.MADE_UP.mark == "?"


def test_verdicts_are_their_json_strings():
    assert Verdict.MADE_UP == "made_up" and f"{Verdict.UNRESOLVED}" == "unresolved"
    assert Verdict.of("weak") is Verdict.WEAK
    assert Verdict.of("from-a-newer-version") is Verdict.CITED


def test_a_number_judged_twice_shows_the_weaker():
    good, bad = cv(1, Verdict.SUPPORTED, 0.9), cv(1, Verdict.UNSUPPORTED, 0.1)
    assert weaker(good, bad) is bad and weaker(bad, good) is bad


def test_per_number_keeps_order_of_use_and_puts_made_up_last():
    checks = [cv(3, Verdict.SUPPORTED), cv(9, Verdict.MADE_UP), cv(1, Verdict.WEAK), cv(3, Verdict.UNSUPPORTED), cv(4, Verdict.MADE_UP)]
    assert [(c.n, c.verdict) for c in per_number(checks)] == [
        (3, Verdict.UNSUPPORTED), (1, Verdict.WEAK), (4, Verdict.MADE_UP), (9, Verdict.MADE_UP)
    ]


def test_merged_verifications_keep_every_claim_and_the_weaker_number():
    a = Verification((ClaimVerdict("x", (1,), Verdict.SUPPORTED),), (cv(1, Verdict.SUPPORTED), cv(7, Verdict.MADE_UP)))
    b = Verification((ClaimVerdict("y", (1,), Verdict.WEAK),), (cv(1, Verdict.WEAK),), lexical_only=True)
    m = a.merged(b)
    assert [c.text for c in m.claims] == ["x", "y"] and m.lexical_only
    assert [(c.n, c.verdict) for c in m.citations] == [(1, Verdict.WEAK), (7, Verdict.MADE_UP)]
    assert m.made_up == (7,) and m.unresolved == ()


def _sources(*folders):
    for folder in folders:
        yield from (ROOT / folder).rglob("*.py")


def test_the_marker_grammar_and_the_verdict_tables_each_live_in_one_module():
    # A marker pattern starts with an escaped bracket and a digit class; a label table maps a verdict to words.
    marker = re.compile(r"""\\\[\(?\[1-9\]|\\\[\\d""")
    table = re.compile(r"""^\s*(["']made_up["']|Verdict\.MADE_UP)\s*:\s*["']""", re.MULTILINE)
    owners = {"marker": set(), "table": set()}
    for path in _sources("agent", "rag", "models", "benchmarks"):
        text = path.read_text(encoding="utf-8")
        rel = path.relative_to(ROOT).as_posix()
        if marker.search(text):
            owners["marker"].add(rel)
        if table.search(text):
            owners["table"].add(rel)
    assert owners["marker"] <= {"rag/markers.py", "agent/turn/grammars.py"}, owners["marker"]
    assert owners["table"] == {"rag/verification/verdicts.py"}, owners["table"]
    assert "rag/markers.py" in owners["marker"]
