"""BM25 that stops early in the PostgreSQL store: the common terms' lists of best postings (schema version 2).

rag.postgres.schema._top_postings keeps, for each term in more than TOP_POSTINGS chunks, its strongest postings
and a floor no posting left out exceeds; rag.postgres.search._listed reads those lists instead of every posting.
"""

from __future__ import annotations

from pathlib import Path

import psycopg
import pytest

from rag.ingest.corpus import Document
from rag.ingest.sources import SourceInfo
from rag.postgres import ingest as pg_ingest
from rag.postgres.ingest import IMPACT_SQL, Prepared, apply_document, ingest, remove_document, write_documents
from rag.postgres.schema import SCHEMA, connect, ensure_schema
from rag.postgres.search import PgIndex
from rag.types import Chunk
from tests.test_pg_store import _consistent

S = SCHEMA


def _floor_holds(url: str) -> int:
    """Postings left out of their term's list that are stronger than its floor (0 when the bound holds)."""
    with psycopg.connect(url) as conn:
        return conn.execute(
            f"""WITH avg AS (SELECT greatest(total_length, 1)::float8 / greatest(chunks, 1) AS avgdl FROM {S}.stats)
                SELECT count(*) FROM {S}.postings p JOIN {S}.terms t ON t.term = p.term, avg
                WHERE t.floor IS NOT NULL AND {IMPACT_SQL} > t.floor * (1 + 1e-9)
                AND NOT EXISTS (SELECT 1 FROM {S}.top_postings l WHERE l.term = p.term AND l.chunk = p.chunk)"""
        ).fetchone()[0]


def _synthetic_store(url: str, real_index, n: int = 3000) -> None:
    from benchmarks.retrieval import synthetic_chunks
    from benchmarks.shared_store import PER_DOC, synthetic_document

    chunks = synthetic_chunks(real_index.chunks, n)
    conn = connect(url)
    ensure_schema(conn, url)
    items = (synthetic_document(chunks, None, real_index.term_settings, lo) for lo in range(0, n, PER_DOC))
    for _ in write_documents(conn, items):
        pass
    conn.close()


@pytest.mark.real
def test_the_lists_rank_the_top_10_as_the_sum_of_every_posting(pg_url, real_index, monkeypatch):
    """3,000 chunks made from docs_corpus's words, whose questions' terms are then common: with lists of 100
    postings nearly every question's terms are listed, and the top 10 read from them is mostly the full sum's.
    Bags of words drawn at random are the lists' worst case (no term stands out in a chunk); real text is measured
    by benchmarks.shared_store --real."""
    from rag.evaluation import load_questions

    monkeypatch.setattr(pg_ingest, "TOP_POSTINGS", 100)
    _synthetic_store(pg_url, real_index)
    with psycopg.connect(pg_url) as conn:
        listed = conn.execute(f"SELECT count(*) FROM {S}.terms WHERE floor IS NOT NULL").fetchone()[0]
        longest = conn.execute(f"SELECT max(n) FROM (SELECT count(*) AS n FROM {S}.top_postings GROUP BY term) c").fetchone()[0]
    assert listed > 100 and longest == 100 and _floor_holds(pg_url) == 0
    lists, pruned = PgIndex(pg_url, None, lexical="lists"), PgIndex(pg_url, None)
    every = lists.doc_ids
    agreement, exact = [], 0
    for q in [q.q for q in load_questions()][:60]:
        full = [h.chunk_id for h in pruned.search(q, k=10, mode="bm25", doc_ids=every)]
        ours = [h.chunk_id for h in lists.search(q, k=10, mode="bm25")]
        agreement.append(len(set(ours) & set(full)) / len(full))
        exact += ours == full
    # Measured: mean 0.89, 28 of 60 in the same order; a reading that missed the lists would score near 0.
    assert sum(agreement) / len(agreement) >= 0.85 and exact >= 20, (agreement, exact)
    lists.close(), pruned.close()


def _strong(name: str, term: str) -> Prepared:
    """One short chunk that repeats `term`: its posting is the term's strongest."""
    chunk = Chunk(f"{name}#0", name, name, " ".join([term] * 12))
    return Prepared(Document(name, Path(name), "", name), [chunk], [[term] * 12], None, SourceInfo())


@pytest.mark.real
def test_a_new_strong_posting_joins_its_list_and_a_deleted_one_leaves_it(pg_url, real_index, monkeypatch):
    monkeypatch.setattr(pg_ingest, "TOP_POSTINGS", 100)
    _synthetic_store(pg_url, real_index, n=1000)
    with psycopg.connect(pg_url) as conn:
        term = conn.execute(f"SELECT term FROM {S}.terms WHERE floor IS NOT NULL ORDER BY df DESC LIMIT 1").fetchone()[0]
    conn = connect(pg_url)
    assert apply_document(conn, _strong("strong.md", term))
    pg = PgIndex(pg_url, None, lexical="lists")
    assert pg.search(term, k=1, mode="bm25")[0].chunk_id == "strong.md#0" and _floor_holds(pg_url) == 0
    in_list = f"SELECT count(*) FROM {S}.top_postings l JOIN {S}.chunks c ON c.id = l.chunk WHERE c.doc_id = 'strong.md'"
    assert conn.execute(in_list).fetchone()[0] == 1
    assert remove_document(conn, "strong.md") and conn.execute(in_list).fetchone()[0] == 0
    assert pg.search(term, k=1, mode="bm25")[0].chunk_id != "strong.md#0"
    _consistent(pg_url)
    pg.close(), conn.close()


def test_a_version_1_store_is_upgraded_and_gets_its_lists(pg_url, docs, real_tokenizer, monkeypatch):
    monkeypatch.setattr(pg_ingest, "TOP_POSTINGS", 2)  # the seven small pages: their common words get lists
    ingest(pg_url, docs, real_tokenizer, None)
    with psycopg.connect(pg_url, autocommit=True) as conn:  # the tables as schema version 1 made them
        conn.execute(f"DROP TABLE {S}.top_postings")
        conn.execute(f"ALTER TABLE {S}.terms DROP COLUMN floor")
        conn.execute(f"UPDATE {S}.schema_version SET version = 1")
    with pytest.raises(Exception, match="run `smoldocs index --store URL` once to upgrade it to 2"):
        PgIndex(pg_url, None)
    ingest(pg_url, docs, real_tokenizer, None)
    with psycopg.connect(pg_url) as conn:
        assert conn.execute(f"SELECT version FROM {S}.schema_version").fetchone()[0] == 2
        assert conn.execute(f"SELECT count(*) FROM {S}.terms WHERE floor IS NOT NULL").fetchone()[0] > 0
    assert _floor_holds(pg_url) == 0
    pg = PgIndex(pg_url, None)
    assert pg.search("building the index", mode="bm25")
    pg.close()
