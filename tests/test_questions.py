"""Checks on the evaluation question set docs_corpus/questions.jsonl against the docs it points into."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[1]
CORPUS = REPO_ROOT / "docs_corpus"
# The env var lets a writer check a not-yet-merged question file; the shipped set is the default.
QUESTIONS = Path(os.environ.get("SMOLDOCS_QUESTIONS") or CORPUS / "questions.jsonl")

DIFFICULTIES = {"keyword", "paraphrase", "detail"}
UNANSWERABLE = "unanswerable"
REQUIRED_FIELDS = {"id", "q", "doc", "evidence", "difficulty"}
ALLOWED_FIELDS = REQUIRED_FIELDS | {"alt_docs", "tags"}
TAGS = {"conflict", "outdated"}  # the docs disagree on the answer (numbers); the question touches an outdated page
FENCE = re.compile(r"^\s*(`{3,}|~{3,})")


def corpus_docs() -> set[str]:
    return {p.relative_to(CORPUS).as_posix() for p in CORPUS.rglob("*.md")}


def code_fence_mask(text: str) -> list[bool]:
    """True for every line that is a fence line or inside a fenced code block."""
    mask: list[bool] = []
    opener: str | None = None
    for line in text.split("\n"):
        m = FENCE.match(line)
        if opener is None:
            if m:
                opener = m.group(1)
            mask.append(opener is not None)
        else:
            # A fence closes only with the same character, at least as long as the opener.
            if m and m.group(1)[0] == opener[0] and len(m.group(1)) >= len(opener):
                opener = None
            mask.append(True)
    return mask


@pytest.fixture(scope="module")
def lines() -> list[str]:
    assert QUESTIONS.is_file(), f"{QUESTIONS} is missing"
    return [ln for ln in QUESTIONS.read_text(encoding="utf-8").splitlines() if ln.strip()]


def parse(line: str) -> dict | None:
    try:
        obj = json.loads(line)
    except json.JSONDecodeError:
        return None
    return obj if isinstance(obj, dict) else None


@pytest.fixture(scope="module")
def questions(lines: list[str]) -> list[dict]:
    # Bad lines are reported by test_every_line_is_a_json_object; the other checks still run on the rest.
    return [q for q in map(parse, lines) if q is not None]


@pytest.fixture(scope="module")
def answerable(questions: list[dict]) -> list[dict]:
    return [q for q in questions if q.get("doc") is not None]


def doc_text(doc_id: str) -> str:
    return (CORPUS / doc_id).read_text(encoding="utf-8")


def test_every_line_is_a_json_object(lines):
    bad = [n for n, ln in enumerate(lines, 1) if parse(ln) is None]
    assert not bad, f"lines that are not JSON objects: {bad}"


def test_ids_are_unique(questions):
    ids = [q.get("id") for q in questions]
    dupes = sorted({i for i in ids if ids.count(i) > 1})
    assert not dupes, f"duplicate ids: {dupes}"


def test_fields_are_present_and_typed(questions):
    problems = []
    for q in questions:
        qid = q.get("id")
        if REQUIRED_FIELDS - q.keys():
            problems.append((qid, f"missing {sorted(REQUIRED_FIELDS - q.keys())}"))
            continue
        if q.keys() - ALLOWED_FIELDS:
            problems.append((qid, f"unknown fields {sorted(q.keys() - ALLOWED_FIELDS)}"))
        if not (isinstance(qid, str) and qid):
            problems.append((qid, "id must be a non-empty string"))
        if not (isinstance(q["q"], str) and q["q"].strip()):
            problems.append((qid, "q must be a non-empty string"))
        if q["doc"] is None:
            if q["evidence"] is not None or q.get("alt_docs"):
                problems.append((qid, "unanswerable question has evidence or alt_docs"))
            if q["difficulty"] != UNANSWERABLE:
                problems.append((qid, f"unanswerable difficulty must be {UNANSWERABLE!r}"))
        else:
            if not isinstance(q["doc"], str) or not isinstance(q["evidence"], str):
                problems.append((qid, "doc and evidence must be strings"))
            if q["difficulty"] not in DIFFICULTIES:
                problems.append((qid, f"difficulty {q['difficulty']!r} not in {sorted(DIFFICULTIES)}"))
        tags = q.get("tags", [])
        if not (isinstance(tags, list) and set(tags) <= TAGS):
            problems.append((qid, f"tags must be a list drawn from {sorted(TAGS)}"))
        alt = q.get("alt_docs", [])
        if not (isinstance(alt, list) and all(isinstance(a, str) for a in alt)):
            problems.append((qid, "alt_docs must be a list of strings"))
    assert not problems, problems


def test_at_least_80_questions(questions):
    assert len(questions) >= 80, f"only {len(questions)} questions"


def test_at_least_10_unanswerable(questions):
    n = sum(1 for q in questions if q.get("doc") is None)
    assert n >= 10, f"only {n} unanswerable questions"


def test_gold_and_alt_docs_exist(questions):
    docs = corpus_docs()
    missing = []
    for q in questions:
        for d in ([q["doc"]] if q.get("doc") else []) + list(q.get("alt_docs", [])):
            if d not in docs:
                missing.append((q["id"], d))
        if q.get("doc") in q.get("alt_docs", []):
            missing.append((q["id"], "gold doc repeated in alt_docs"))
    assert not missing, missing


def test_evidence_is_8_to_80_characters(answerable):
    bad = [(q["id"], len(q["evidence"])) for q in answerable if not 8 <= len(q["evidence"]) <= 80]
    assert not bad, bad


def test_evidence_occurs_exactly_once_in_gold_doc(answerable):
    bad = []
    for q in answerable:
        n = doc_text(q["doc"]).count(q["evidence"])
        if n != 1:
            bad.append((q["id"], q["doc"], n))
    assert not bad, f"(id, doc, occurrences) where evidence is not found exactly once: {bad}"


def test_evidence_is_prose_not_code_or_heading(answerable):
    bad = []
    for q in answerable:
        text = doc_text(q["doc"])
        pos = text.find(q["evidence"])
        if pos < 0:
            continue  # reported by the occurrence test
        first = text.count("\n", 0, pos)
        last = first + q["evidence"].count("\n")
        all_lines = text.split("\n")
        fenced = code_fence_mask(text)
        for i in range(first, last + 1):
            if fenced[i]:
                bad.append((q["id"], "inside a code fence"))
                break
            if all_lines[i].lstrip().startswith("#"):
                bad.append((q["id"], "inside a heading"))
                break
    assert not bad, bad


def test_evidence_does_not_span_a_blank_line(answerable):
    bad = [q["id"] for q in answerable if re.search(r"\n\s*\n", q["evidence"])]
    assert not bad, bad


def test_questions_are_not_copied_evidence(answerable):
    bad = [q["id"] for q in answerable if q["evidence"].lower() in q["q"].lower()]
    assert not bad, f"question text contains its evidence verbatim: {bad}"


def test_every_doc_is_answered_by_a_question(answerable):
    unanswered = sorted(corpus_docs() - {q["doc"] for q in answerable})
    assert not unanswered, f"docs with no question: {unanswered}"


def test_conflict_and_outdated_pages_are_exercised(answerable):
    """Issue 19: the archive page and the current page it contradicts both have questions tagged for it."""
    tagged = {tag: [q for q in answerable if tag in q.get("tags", [])] for tag in TAGS}
    assert len(tagged["conflict"]) >= 3, "want at least 3 questions where the docs disagree"
    assert len(tagged["outdated"]) >= 3, "want at least 3 questions touching an outdated page"
    docs = {d for q in tagged["conflict"] for d in [q["doc"], *q.get("alt_docs", [])]}
    assert {"archive/context-defaults-2023.md", "docs/context-windows.md"} <= docs


def test_fence_mask_tracks_nested_markers():
    text = "intro\n````markdown\n```python\nx = 1\n```\n````\nafter\n# Title"
    assert code_fence_mask(text) == [False, True, True, True, True, True, False, False]


def test_the_python_reference_questions_point_into_the_pages_the_folder_gets():
    from benchmarks.pyref import PAGES, QUESTIONS as PYREF
    from rag.evaluation import load_questions

    questions = load_questions(PYREF)
    pages = {f"library/{p}.html" for p in PAGES}
    assert len(questions) >= 40 and len({q.id for q in questions}) == len(questions)
    assert all(q.answerable and set(q.gold_docs) <= pages for q in questions)
    assert len({q.doc for q in questions}) >= 40  # the questions spread over the reference, not a few pages
