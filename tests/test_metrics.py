"""Gold chunks from evidence strings, Recall@k, MRR@k, and the question loader."""

from __future__ import annotations

import json

import pytest

from rag.evaluation import Question, first_per_doc, gold_chunk_ids, load_questions, mrr_at_k, question_files, recall_at_k
from rag.types import Chunk


def chunk(cid: str, text: str) -> Chunk:
    return Chunk(cid, cid.split("#")[0], cid.split("#")[0], text)


CHUNKS = [
    chunk("a.md#0", "The cache stores keys\nand values for every layer."),
    chunk("a.md#1", "It grows linearly with the context."),
    chunk("b.md#0", "The cache stores keys and values for every layer."),
    chunk("a.md#2", "First half of a long sentence that"),
    chunk("a.md#3", "ends in the next chunk."),
]


def test_gold_chunks_are_the_gold_docs_chunks_holding_the_evidence_across_line_breaks():
    q = {"doc": "a.md", "evidence": "stores keys and values"}
    assert gold_chunk_ids(q, CHUNKS) == ["a.md#0"]


def test_evidence_cut_by_a_chunk_boundary_makes_both_neighbours_gold():
    q = Question("q1", "?", "a.md", "long sentence that ends in the next", "detail")
    assert gold_chunk_ids(q, CHUNKS) == ["a.md#2", "a.md#3"]


def test_unanswerable_questions_have_no_gold():
    assert gold_chunk_ids({"doc": None, "evidence": None}, CHUNKS) == []


def test_recall_and_mrr():
    ranked = ["x", "y", "g", "z"]
    assert recall_at_k(ranked, {"g"}, 2) == 0.0 and recall_at_k(ranked, {"g"}, 3) == 1.0
    assert mrr_at_k(ranked, {"g", "z"}, 10) == pytest.approx(1 / 3)
    assert mrr_at_k(ranked, {"g"}, 2) == 0.0


def test_doc_ranking_keeps_each_docs_best_rank():
    assert first_per_doc(["a", "b", "a", "c", "b"]) == ["a", "b", "c"]


def test_part_files_are_read_until_merged(tmp_path):
    rows = [{"id": "x1", "q": "Q?", "doc": "a.md", "evidence": "ev", "difficulty": "keyword", "alt_docs": ["b.md"]}]
    (tmp_path / "questions_b.part.jsonl").write_text(json.dumps(rows[0]) + "\n")
    (tmp_path / "questions_a.part.jsonl").write_text("")
    assert [p.name for p in question_files(tmp_path)] == ["questions_a.part.jsonl", "questions_b.part.jsonl"]
    (tmp_path / "questions.jsonl").write_text(json.dumps(rows[0]) + "\n")
    assert question_files(tmp_path) == [tmp_path / "questions.jsonl"]
    (q,) = load_questions(question_files(tmp_path))
    assert q.gold_docs == ("a.md", "b.md") and q.answerable
