"""The store's early-stopping BM25 (rag.postgres.impact) against a real server, on real text.

Exact means: the depth best chunks, their ranks and scores equal the embedded index's in-process BM25 over the same
chunks, whether the impact index proved them in its first round, in a later one, or gave up (the pruned reading).
"""

from __future__ import annotations

import numpy as np
import psycopg
import pytest

from rag.evaluation import load_questions
from rag.indexing.hybrid import HybridIndex
from rag.ingest.chunking import ChunkSettings
from rag.postgres import impact
from rag.postgres.ingest import check_settings, store_settings, vacuum, write_documents
from rag.postgres.schema import SCHEMA, SCHEMA_VERSION, connect, drop_deferred, ensure_schema, missing_deferred
from rag.postgres.search import PgIndex
from rag.retrieval.terms import TermSettings

S = SCHEMA
DEPTH = 50


@pytest.fixture(scope="module")
def man_chunks():
    """The chunks of 80 real man pages (section 5; docs_corpus's pages where there are none), chunked now."""
    from benchmarks.real_corpus import sample

    chunks = sample(80)
    return sorted(chunks, key=lambda c: c.doc_id)  # the embedded index's row order; sorted() keeps each page's order


@pytest.fixture
def filled(pg_url, man_chunks, real_tokenizer):
    """A store filled from man_chunks as `smoldocs index` fills a new one (impact index built after the load)."""
    from benchmarks.shared_store import real_documents

    conn = connect(pg_url)
    ensure_schema(conn, pg_url)
    check_settings(conn, pg_url, store_settings(real_tokenizer, None, ChunkSettings(), TermSettings()), None)
    for _ in write_documents(conn, real_documents(man_chunks, None, TermSettings())):
        pass
    vacuum(conn)
    conn.close()
    return pg_url


def _queries(chunks) -> list[str]:
    """docs_corpus's questions, and a heading of every tenth chunk (terms these pages surely hold)."""
    headings = [" ".join(c.heading_path[-2:]) for c in chunks[::10] if c.heading_path]
    return [q.q for q in load_questions()][:60] + headings[:60]


def _same(a, b, query: str) -> None:
    """The same scores in the same order; chunks whose scores tie to 1e-9 may swap or trade places at the cut."""
    assert len(a) == len(b) and all(abs(x.score - y.score) < 1e-9 for x, y in zip(a, b)), query
    ours, theirs = {h.chunk_id: h.score for h in a}, {h.chunk_id: h.score for h in b}
    last = b[-1].score if b else 0.0
    assert all(abs(ours.get(c, theirs.get(c)) - last) < 1e-9 for c in ours.keys() ^ theirs.keys()), query


def _recorded(monkeypatch) -> list:
    """Each search's verdict from rag.postgres.impact: its scores, or None when it fell back."""
    seen: list = []
    original = impact.top_scores

    def spy(*args, **kw):
        seen.append(original(*args, **kw))
        return seen[-1]

    monkeypatch.setattr(impact, "top_scores", spy)
    return seen


@pytest.mark.real
@pytest.mark.parametrize("rounds", [None, (2, 6, 20)])
def test_early_stopping_bm25_ranks_exactly_as_the_embedded_index(filled, man_chunks, monkeypatch, rounds):
    """Default rounds stop early for most queries; rounds of 2, 6 and 20 postings a term force later rounds and
    fallbacks. Either way the BM25 ranking at depth 50 is the embedded index's."""
    embedded = HybridIndex(man_chunks, np.zeros((len(man_chunks), 384), np.float32), None)
    monkeypatch.setattr(impact, "ROUNDS", rounds or impact.ROUNDS)
    verdicts = _recorded(monkeypatch)
    pg = PgIndex(filled, None)
    queries = _queries(man_chunks)
    for q in queries:
        _same(pg.search(q, k=DEPTH, mode="bm25"), embedded.search(q, k=DEPTH, mode="bm25"), q)
        # The top 5 as a hybrid search would take them (weighted fusion over the BM25 half alone).
        assert [h.chunk_id for h in pg.search(q, k=5)] == [h.chunk_id for h in embedded.search(q, k=5)], q
    pg.close()
    early = sum(v is not None for v in verdicts)
    assert len(verdicts) == 2 * len(queries)
    if rounds is None:
        assert early >= 0.9 * len(verdicts)
    else:  # 20 postings a term rarely prove 50 chunks
        assert 0 < early < len(verdicts)


@pytest.mark.real
def test_a_round_reads_the_impact_index_in_its_order(filled, man_chunks):
    """The searches spell the impact as the index does, so each term's best postings can come from the index alone,
    in its order (Index Only Scan). On a store this small the planner would rather sort a few hundred postings, so
    sorts and bitmap scans are turned off here: a spelling that did not match the index would leave a sort."""
    from rag.indexing.bm25 import B, K1
    from rag.retrieval.terms import index_terms

    with psycopg.connect(filled, autocommit=True) as conn:
        conn.execute("SET enable_sort = off")
        conn.execute("SET enable_bitmapscan = off")
        ref = conn.execute(f"SELECT impact_ref FROM {S}.stats").fetchone()[0]
        avgdl = conn.execute(f"SELECT total_length::float8 / chunks FROM {S}.stats").fetchone()[0]
        params = {"terms": index_terms("configuration file format", TermSettings()), "depth": DEPTH, "k1": K1,
                  "b": B, "n": 100}
        plan = conn.execute("EXPLAIN (FORMAT JSON) " + impact.round_sql(ref), params).fetchone()[0][0]["Plan"]
    assert ref == pytest.approx(avgdl, abs=0.01)  # the index was built after the load, at the store's length
    nodes = list(_nodes(plan))
    reads = [n for n in nodes if n.get("Index Name") == "postings_impact"]
    assert reads and all(n["Node Type"] == "Index Only Scan" for n in reads)
    assert not any(n["Node Type"] == "Sort" and "::real) DESC" in " ".join(n.get("Sort Key", [])) for n in nodes)


def _nodes(plan: dict):
    yield plan
    for child in plan.get("Plans", ()):
        yield from _nodes(child)


@pytest.mark.real
def test_without_the_impact_index_a_search_falls_back_and_stays_exact(filled, man_chunks, monkeypatch):
    """While a first load has the deferred indexes dropped, stats.impact_ref is NULL and searches read the pruned
    way; the next build puts the index back."""
    embedded = HybridIndex(man_chunks, np.zeros((len(man_chunks), 384), np.float32), None)
    with psycopg.connect(filled, autocommit=True) as conn:
        conn.execute(f"DROP INDEX {S}.postings_impact; UPDATE {S}.stats SET impact_ref = NULL")
    verdicts = _recorded(monkeypatch)
    pg = PgIndex(filled, None)
    for q in _queries(man_chunks)[:20]:
        _same(pg.search(q, k=DEPTH, mode="bm25"), embedded.search(q, k=DEPTH, mode="bm25"), q)
    pg.close()
    assert verdicts == []  # never tried
    conn = connect(filled)
    assert missing_deferred(conn) == ["postings_impact"]
    conn.close()


@pytest.mark.real
def test_a_schema_1_store_is_upgraded_with_its_impact_index(filled, man_chunks):
    """A store of schema 1 (no impact index, no stats.impact_ref) is refused by readers with what to run, and the
    next ingest's ensure_schema adds both at the store's average length."""
    with psycopg.connect(filled, autocommit=True) as conn:
        conn.execute(f"DROP INDEX {S}.postings_impact")
        conn.execute(f"ALTER TABLE {S}.stats DROP COLUMN impact_ref")
        conn.execute(f"UPDATE {S}.schema_version SET version = 1")
    with pytest.raises(Exception, match="run `smoldocs index --store URL` once to upgrade"):
        PgIndex(filled, None)
    conn = connect(filled)
    ensure_schema(conn, filled)
    version, ref, avgdl = conn.execute(f"SELECT (SELECT version FROM {S}.schema_version), impact_ref, "
                                       f"total_length::float8 / chunks FROM {S}.stats").fetchone()
    assert version == SCHEMA_VERSION == 2 and ref == pytest.approx(avgdl, abs=0.01)
    assert missing_deferred(conn) == []
    assert drop_deferred(conn) is False  # the store has chunks: a later load keeps its indexes
    conn.close()
