"""The learned order of search hits (rag.indexing.ordering): its features, the reorder, the index's switch, and
the fitting command (benchmarks/realdocs/fit_order.py) on real files with the real embedder."""

from __future__ import annotations

import json

import numpy as np
import pytest

from rag.indexing.ordering import FEATURES, POOL, features, learned_order, learned_scores, orderable
from rag.types import Chunk, Hit


def _hit(n: int, doc: str, text: str, score: float, heading=(), bm25=1.0, cosine=0.5) -> Hit:
    chunk = Chunk(f"{doc}#{n}", doc, doc, text, heading_path=tuple(heading))
    return Hit(chunk, score, bm25_rank=1, dense_rank=1, bm25_score=bm25, dense_score=cosine)


POOL_HITS = [
    _hit(0, "a.md", "Configure the service with a file.", 0.9, ("Setup",), bm25=4.0, cosine=0.6),
    _hit(3, "a.md", "Configure logging: set rotate to weekly.", 0.8, ("Logging",), bm25=2.0, cosine=0.4),
    _hit(1, "b.md", "Configure nothing here.", 0.5, ("Other",), bm25=1.0, cosine=0.2),
]


def test_features_read_the_pool_as_a_whole():
    x = features("How do I rotate logs weekly?", POOL_HITS)
    assert x.shape == (3, len(FEATURES))
    col = {name: x[:, i] for i, name in enumerate(FEATURES)}
    assert col["rank"].tolist() == [1.0, 0.5, pytest.approx(1 / 3)]
    assert col["fused"][0] == 1.0 and col["bm25"].tolist() == [1.0, 0.5, 0.25]
    assert col["cosine_gap"].tolist() == pytest.approx([0.0, -0.2, -0.4])
    assert col["doc_hits"].tolist() == pytest.approx([2 / 3, 2 / 3, 1 / 3])
    assert col["doc_best"].tolist() == [1.0, 1.0, pytest.approx(1 / 3)] and col["doc_lead"].tolist() == [1, 0, 1]
    assert col["ordinal"][1] == pytest.approx(np.log1p(3)) and col["first"].tolist() == [1, 0, 0]
    # "rotate" and "weekly" are held by one hit only: it covers the question, the others do not
    assert col["coverage"][1] > 0.9 and col["coverage"][0] == col["coverage"][2] == 0.0
    assert col["heading_weight"].tolist() == [0.0, pytest.approx(col["heading_weight"][1]), 0.0]


def test_the_learned_order_puts_the_hit_that_answers_first_and_scores_stay_best_first():
    weights = {"coverage": 5.0, "rank": 1.0}
    question = "How do I rotate logs weekly?"
    assert learned_scores(question, POOL_HITS, weights, 0.0).argmax() == 1
    ordered = learned_order(question, POOL_HITS, 2, weights, 0.0)
    assert [h.chunk_id for h in ordered] == ["a.md#3", "a.md#0"]
    assert 0.0 < ordered[1].score < ordered[0].score < 1.0


def test_a_pool_without_raw_scores_keeps_the_retrievers_order():
    bare = [Hit(h.chunk, h.score, 1, 1) for h in POOL_HITS]
    assert not orderable(bare) and orderable(POOL_HITS)
    assert learned_order("rotate logs weekly", bare, 2) == bare[:2]
    assert learned_order("anything", POOL_HITS[:1], 5) == POOL_HITS[:1]


def test_the_index_reports_raw_scores_and_its_learned_order_reorders_the_fused_pool(real_index):
    question = "How do I make the model forget the conversation?"
    fused = real_index._search(question, POOL, None, "hybrid")
    assert all(h.bm25_score is not None and h.dense_score is not None for h in fused)
    by_dense = sorted((h for h in fused if h.dense_rank), key=lambda h: h.dense_rank)
    assert [h.dense_score for h in by_dense] == sorted((h.dense_score for h in by_dense), reverse=True)
    by_bm25 = sorted((h for h in fused if h.bm25_rank), key=lambda h: h.bm25_rank)
    assert [h.bm25_score for h in by_bm25] == sorted((h.bm25_score for h in by_bm25), reverse=True)
    learned = real_index.search(question, k=5)
    assert learned == learned_order(question, fused, 5)
    assert {h.chunk_id for h in learned} <= {h.chunk_id for h in fused}
    assert [h.score for h in learned] == sorted((h.score for h in learned), reverse=True)
    real_index.order = "fused"
    try:
        assert real_index.search(question, k=5) == fused[:5]
        assert real_index.search(question, k=5, mode="weighted") == real_index._search(question, 5, None, "weighted")
    finally:
        real_index.order = "learned"
    with pytest.raises(ValueError, match="choose one of learned, fused"):
        type(real_index)([], np.zeros((0, 384), dtype=np.float32), None, order="best")


def test_the_shipped_order_does_not_lose_evidence_on_the_bundled_questions(real_index):
    """A regression guard on docs_corpus (a fit package): the learned first five hold the evidence at least as
    often as the fused first five."""
    from rag.evaluation import holds_evidence, load_questions

    questions = [q for q in load_questions(real_index.docs_dir / "questions.jsonl") if q.answerable and q.evidence]
    fused = learned = 0
    for q in questions:
        pool = real_index._search(q.q, POOL, None, "hybrid")
        fused += any(holds_evidence(h.text, q.evidence) for h in pool[:5])
        learned += any(holds_evidence(h.text, q.evidence) for h in learned_order(q.q, pool, 5))
    assert len(questions) > 100 and learned >= fused


def test_fit_order_fits_on_a_tiny_fit_package_and_refuses_held_only(tmp_path, real_tokenizer, real_embedder):
    from benchmarks.realdocs.fit_order import main as order_main, package_pools
    from benchmarks.realdocs.suite import Package

    docs = tmp_path / "suite" / "tiny"
    docs.mkdir(parents=True)
    (docs / "kettle.md").write_text("# Kettle\n\nThe kettle is blue.\n\n# Boiling\n\nThe kettle switches itself off "
                                    "when the water boils.\n\n# Lid\n\nThe lid opens with the button on the handle.\n")
    (docs / "toaster.md").write_text("# Toaster\n\nTurn the dial to six for dark toast.\n")
    rows = [{"id": f"k{i}", "q": q, "doc": d, "evidence": e} for i, (q, d, e) in enumerate([
        ("Do I have to turn the kettle off myself?", "kettle.md", "switches itself off when the water boils"),
        ("How do I open the kettle's lid?", "kettle.md", "The lid opens with the button on the handle"),
        ("How do I get darker toast?", "toaster.md", "Turn the dial to six for dark toast"),
        ("Can the toaster be started from my phone app?", None, None),
    ])]
    questions = tmp_path / "q.jsonl"
    questions.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    package = Package(name="tiny", apt=None, format="md", split="fit", source=docs, include=("**/*.md",),
                      questions=(questions,))
    pools = package_pools(package, real_tokenizer, real_embedder, root=tmp_path / "suite")
    assert len(pools) == 3 and all(p.features.shape[1] == len(FEATURES) for p in pools)
    assert all(p.labels.any() for p in pools)  # every evidence string is in some hit
    said: list[str] = []
    assert order_main([package], real_tokenizer, real_embedder, write=False, root=tmp_path / "suite", say=said.append) == 0
    assert any(line.startswith("after (fit on tiny)") for line in said)
    diff = said[-1].splitlines()  # the diff it would write: the record names the package, the weights change
    assert diff[0] == "--- a/rag/tuned.py" and any(line.startswith("+") and '"tiny"' in line for line in diff)
    assert any(line.startswith('-    "cosine": ') for line in diff)
    held = Package(name="tiny", apt=None, format="md", split="held", source=docs, include=("**/*.md",),
                   questions=(questions,))
    said.clear()
    assert order_main([held], real_tokenizer, real_embedder, write=False, root=tmp_path / "suite", say=said.append) == 2
    assert said[-1].startswith("error: fit-order fits on fit packages only")
