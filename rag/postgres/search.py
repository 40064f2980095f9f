"""Hybrid search over the PostgreSQL store: BM25 and pgvector halves, read at once, fused in SQL.

It ranks as rag.indexing.hybrid.HybridIndex does: BM25 with rank_bm25's Okapi formula and Lucene's IDF over postings
made by rag.retrieval.terms, cosine similarity over the same MiniLM embeddings, each cut at CANDIDATE_DEPTH, then fused by
rag.retrieval.fusion's weighted or reciprocal-rank rule, ties broken the same way. A one-sided search is one statement;
a hybrid one reads its BM25 half and its vector half at the same time on two connections, in one exported snapshot,
and fuses them in that snapshot. A document changes in one transaction (rag.postgres.ingest), so a search sees a
document whole, old or new.
"""

from __future__ import annotations

import os
import threading
from concurrent.futures import ThreadPoolExecutor, wait
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Iterable, Self, Sequence, TypeVar

import numpy as np

from models.locate import SEMANTIC_OFF
from models.protocols import Embedder
from models.redaction import redact_url
from rag.errors import SemanticSearchOff, StoreRefused, StoreUnavailable
from rag.postgres.ingest import vector_text
from rag.postgres.schema import (
    SCHEMA,
    check_vector_version,
    check_version,
    connect,
    embedding_dim,
    read_settings,
    unavailable,
)
from rag.ingest.sources import SourceInfo, source_info
from rag.indexing.bm25 import B, K1
from rag.indexing.collections import SEPARATOR
from rag.indexing.dense import STANDOUT_RANK, query_vector, standout
from rag.retrieval.fusion import BM25_WEIGHT, FUSIONS, RRF_K
from rag.indexing.hybrid import CANDIDATE_DEPTH, DEFAULT_FUSION, MIN_DENSE_SCORE, STANDOUTS_KEPT, search_mode
from rag.indexing.ordering import ORDER, ORDERS, POOL as ORDER_POOL, learned_order
from rag.retrieval.terms import TermSettings, index_terms
from rag.retrieval.vocabulary import PREFIX
from rag.types import Chunk, Hit, IndexDefaults, Update

if TYPE_CHECKING:
    import psycopg

S = SCHEMA
_T = TypeVar("_T")
# Searches one PgIndex runs at once, each on two connections of its own: about one per core, at most 8 (16
# connections a process). `smoldocs serve` over a million real chunks, 16 clients, 2 cores (docs/results.md): 7.9-9.4
# calls/s one at a time; 17.8 / 15.3 / 15.4 with 2 / 4 / 8 at once.
SEARCHES = min(8, max(2, os.cpu_count() or 2))
# Candidates an HNSW scan keeps (pgvector's default 40 is below CANDIDATE_DEPTH). Measured with
# benchmarks.shared_store's 100k synthetic chunks (load 17): recall@10 0.685 at 100, 0.785 at 200, 0.887 at 400
# (16 ms), 0.942 at 800 (32 ms). With iterative scans a filtered query keeps scanning until it has its rows.
EF_SEARCH = 400
WORK_MEM = "32MB"  # per search connection; see _configured
# Postings of the rarest query terms read to set the pruning bound (_pruned). benchmarks.shared_store's chunks at
# 200k, the 164 docs_corpus questions, BM25 p50 (load ~1): 107 ms unpruned, 67 ms at 5,000, 80 at 20,000, 119 at 60,000.
# 358k real chunks, 200 suite questions against 5,000, alternating order (load 2.0): BM25 mean 33.6 -> 31.1 and
# 31.1 -> 28.8 ms at 500, 34.6 -> 32.9 and 33.6 -> 30.9 at 1,000, 39.5 -> 37.2 and 33.0 -> 31.3 at 2,000; 33.7 -> 41.2
# at 15,000.
SEED_POSTINGS = 1000
# _pruned's rest: an unread term's postings are looked up by key, contender by contender, when fewer than 1 in
# PROBE_COST of them are wanted, else read whole (a hash join). 358k real chunks, 200 suite questions, each read
# both ways in alternating order (load 1.9-2.0): BM25 mean 32.0 -> 30.9 and 32.3 -> 31.0 ms in two runs.
PROBE_COST = 12
NO_RANK = 1 << 30
CHUNK_COLUMNS = "c.chunk_id, c.doc_id, c.uri, c.body, c.heading, c.line_start, c.line_end, c.page_start, c.page_end"
ROW_ORDER = 'c.doc_id COLLATE "C", c.ordinal'  # the embedded index's row order: files sorted, chunks in order


def _filters(doc_ids: bool, current_only: bool) -> str:
    where = ""
    if doc_ids:
        where += " AND c.doc_id = ANY(%(doc_ids)s::text[])"
    if current_only:
        where += " AND NOT c.outdated"
    return where


# One posting's share of a chunk's BM25 score (rag.indexing.bm25: Okapi with K1 and B), for query term i, whose
# w = qtf * idf * (k1 + 1), c1 = k1 * (1 - b) and c2 = k1 * b / avgdl are computed once (idf, in _lexical).
_SHARE = "i.w * p.tf / (p.tf + i.c1 + i.c2 * p.length)"


def _every_posting() -> str:
    """Every chunk's score from every posting of the query's terms (what a doc_ids filter then cuts down)."""
    return f"""
    lex_scores AS (
        SELECT p.chunk, sum({_SHARE}) AS score FROM idf i JOIN {S}.postings p ON p.term = i.term GROUP BY p.chunk),"""


def _pruned() -> str:
    """The scores of every chunk that can be among the depth best (MaxScore, exact), reading fewer postings.

    A share is below its term's bound qtf * idf * (k1 + 1). The chunks of the rarest terms (about SEED_POSTINGS
    postings) give theta, a score the depth-th best chunk reaches at least. The commonest terms whose bounds sum
    below theta are non-essential: a chunk that has only those scores below theta, so only the essential terms'
    postings are read in full. Of their chunks, those whose partial score plus the non-essential bounds can still
    reach the depth-th best partial score get the non-essential terms' postings: looked up by key, or, for a term
    with fewer than PROBE_COST postings per contender, read whole. Every chunk of the depth best and its ties is
    scored in full, so the ranking equals the full sum's.
    """
    return f"""
    bounds AS MATERIALIZED (
        SELECT term, qtf, idf, w, c1, c2, qtf * idf * (%(k1)s + 1) AS bound,
               sum(qtf * idf * (%(k1)s + 1)) OVER (ORDER BY qtf * idf, term ROWS UNBOUNDED PRECEDING) AS below,
               sum(df) OVER (ORDER BY df, term ROWS UNBOUNDED PRECEDING) - df AS rarer
        FROM idf),
    seed AS MATERIALIZED (
        SELECT p.chunk, sum({_SHARE}) AS score FROM bounds i JOIN {S}.postings p ON p.term = i.term
        WHERE i.rarer < %(seed)s GROUP BY p.chunk),
    theta AS MATERIALIZED (  -- a hair below, so float rounding never drops a chunk at the bound
        SELECT coalesce((SELECT score FROM seed ORDER BY score DESC OFFSET %(depth)s - 1 LIMIT 1), 0) * (1 - 1e-9) AS t),
    split AS MATERIALIZED (SELECT b.*, b.below >= th.t AS essential FROM bounds b, theta th),
    rest_bound AS MATERIALIZED (SELECT coalesce(sum(bound), 0) AS u FROM split WHERE NOT essential),
    partial AS MATERIALIZED (
        SELECT p.chunk, sum({_SHARE}) AS part FROM split i JOIN {S}.postings p ON p.term = i.term
        WHERE i.essential GROUP BY p.chunk),
    theta2 AS MATERIALIZED (
        SELECT greatest(th.t, coalesce((SELECT part FROM partial ORDER BY part DESC OFFSET %(depth)s - 1 LIMIT 1), 0)
                              * (1 - 1e-9)) AS t FROM theta th),
    contenders AS MATERIALIZED (
        SELECT e.chunk, e.part FROM partial e, rest_bound r, theta2 t WHERE e.part + r.u >= t.t),
    unread AS MATERIALIZED (  -- probe: look each contender up by key; else read the term's postings for them
        SELECT i.*, (SELECT count(*) FROM contenders) * %(probe)s < t.df AS probe
        FROM split i JOIN {S}.terms t ON t.term = i.term WHERE NOT i.essential),
    rest AS (
        SELECT chunk, sum(share) AS part FROM (
            SELECT n.chunk, {_SHARE} AS share FROM unread i CROSS JOIN contenders n
            CROSS JOIN LATERAL (SELECT tf, length FROM {S}.postings p WHERE p.term = i.term AND p.chunk = n.chunk
                                OFFSET 0) p
            WHERE i.probe
            UNION ALL
            SELECT p.chunk, {_SHARE} FROM unread i JOIN {S}.postings p ON p.term = i.term
            JOIN contenders n ON n.chunk = p.chunk WHERE NOT i.probe) x GROUP BY chunk),
    lex_scores AS (
        SELECT n.chunk, n.part + coalesce(r.part, 0) AS score FROM contenders n LEFT JOIN rest r ON r.chunk = n.chunk),"""


def _idf() -> str:
    """The query terms' BM25 constants (what _SHARE reads), once per query."""
    return f"""
    -- LIMIT 1 tells the planner that stats is one row even before it is analyzed. Guessed at 1,330 rows (a freshly
    -- filled store), the plan hashed every posting of the store: BM25 184 ms instead of 2.7 ms at 2k chunks.
    stats AS MATERIALIZED (
        SELECT chunks::float8 AS n, greatest(total_length, 1)::float8 / greatest(chunks, 1) AS avgdl FROM {S}.stats
        LIMIT 1),
    q AS (SELECT term, count(*)::float8 AS qtf FROM unnest(%(terms)s::text[]) AS term GROUP BY term),
    idf AS MATERIALIZED (  -- rag.indexing.bm25.idf, Lucene's: computed here from df, so nothing stored depends on it
        SELECT term, qtf, df, idf, qtf * idf * (%(k1)s + 1) AS w, %(k1)s * (1 - %(b)s) AS c1,
               %(k1)s * %(b)s / avgdl AS c2
        FROM (SELECT q.term, q.qtf, t.df, ln(1 + (s.n - t.df + 0.5::float8) / (t.df + 0.5::float8)) AS idf, s.avgdl
              FROM q JOIN {S}.terms t ON t.term = q.term, stats s) f)"""


# Each returned chunk's raw BM25 score and cosine, which the learned order reads (rag.indexing.ordering): the BM25
# score summed from the chunk's own postings of the query terms (0 with none), the cosine NULL for a chunk not
# embedded yet. Without them (`raw` False) both are NULL.
_RAW = (f"coalesce((SELECT sum({_SHARE}) FROM idf i JOIN {S}.postings p ON p.term = i.term AND p.chunk = f.id), 0)"
        " AS lraw, CASE WHEN c.embedding IS NULL THEN NULL ELSE 1 - (c.embedding <=> %(vector)s::vector) END AS sraw")
_NO_RAW = "NULL::float8 AS lraw, NULL::float8 AS sraw"


def _lexical(where: str) -> str:
    # idf once per query term (MATERIALIZED: not once per posting), in float8: numeric ln() is ~25x slower.
    if where:  # every scored chunk is looked up for the filter
        scores = _every_posting()
        ranked = f"""
    lex_rows AS (
        SELECT l.chunk, l.score, c.doc_id, c.ordinal FROM lex_scores l JOIN {S}.chunks c ON c.id = l.chunk
        WHERE l.score > 0{where}),"""
    else:  # the depth best and every tie of the last (rag.retrieval.fusion.top_rows), each looked up by its key
        scores = _pruned()
        ranked = f"""
    lex_rows AS (
        SELECT l.chunk, l.score, c.doc_id, c.ordinal
        FROM (SELECT chunk, score FROM lex_scores WHERE score > 0
              ORDER BY score DESC FETCH FIRST %(depth)s ROWS WITH TIES) l
        CROSS JOIN LATERAL (SELECT doc_id, ordinal FROM {S}.chunks c WHERE c.id = l.chunk OFFSET 0) c),"""
    return f"""{_idf()},{scores}{ranked}
    lex AS (
        SELECT chunk AS id, score, row_number() OVER (ORDER BY score DESC, doc_id COLLATE "C", ordinal) AS rank
        FROM lex_rows ORDER BY score DESC, doc_id COLLATE "C", ordinal LIMIT %(depth)s)"""


def _semantic(where: str) -> str:
    return f"""
    near AS (
        SELECT c.id, c.doc_id, c.ordinal, c.embedding <=> %(vector)s::vector AS distance
        FROM {S}.chunks c WHERE c.embedding IS NOT NULL{where}
        ORDER BY c.embedding <=> %(vector)s::vector LIMIT %(depth)s),
    sem AS (
        SELECT n.id, 1 - n.distance AS score, row_number() OVER (ORDER BY n.distance, n.doc_id COLLATE "C", n.ordinal) AS rank
        FROM near n WHERE 1 - n.distance > %(min_dense)s)"""


def _normalized(name: str) -> str:
    """Min-max normalisation of a ranking's scores over its own candidates (rag.retrieval.fusion.weighted)."""
    return f"""
    {name}n AS (
        SELECT id, rank, score, CASE WHEN max(score) OVER () > min(score) OVER ()
            THEN (score - min(score) OVER ()) / (max(score) OVER () - min(score) OVER ()) ELSE 1.0 END AS norm
        FROM {name})"""


# The fused score of one candidate, as rag.retrieval.fusion.fuse computes it. A chunk without an embedding yet ranks
# by BM25 alone, its BM25 share standing in for the whole score (weighted: full weight; rrf: counted for both).
_SCORES = {
    "bm25": "p.lscore",
    "dense": "p.sscore",
    "weighted": "CASE WHEN p.bm25_rank IS NOT NULL AND c.embedding IS NULL THEN p.lnorm "
                "ELSE coalesce(%(weight)s * p.lnorm, 0) + coalesce((1 - %(weight)s) * p.snorm, 0) END",
    "rrf": "CASE WHEN p.bm25_rank IS NOT NULL AND c.embedding IS NULL THEN 2.0 / (%(rrf_k)s + p.bm25_rank) "
           "ELSE coalesce(1.0 / (%(rrf_k)s + p.bm25_rank), 0) + coalesce(1.0 / (%(rrf_k)s + p.dense_rank), 0) END",
}
_SIDES = {  # each candidate once, with both rankings' ranks and scores (NULL where a ranking lacks it)
    "bm25": "SELECT id, rank AS bm25_rank, NULL::bigint AS dense_rank, score AS lscore, norm AS lnorm, "
            "NULL::float8 AS sscore, NULL::float8 AS snorm FROM lexn",
    "dense": "SELECT id, NULL::bigint AS bm25_rank, rank AS dense_rank, NULL::float8 AS lscore, NULL::float8 AS lnorm, "
             "score AS sscore, norm AS snorm FROM semn",
    "both": "SELECT coalesce(l.id, s.id) AS id, l.rank AS bm25_rank, s.rank AS dense_rank, l.score AS lscore, "
            "l.norm AS lnorm, s.score AS sscore, s.norm AS snorm FROM lexn l FULL JOIN semn s ON s.id = l.id",
}


def _given(name: str) -> str:
    """A ranking its own statement computed (half_sql), passed back in as three arrays."""
    return f"""
    {name} AS (
        SELECT * FROM unnest(%({name}_ids)s::bigint[], %({name}_scores)s::float8[], %({name}_ranks)s::bigint[])
        AS g(id, score, rank))"""


def half_sql(name: str, doc_ids: bool, current_only: bool) -> str:
    """One half of a hybrid search on its own ("lex": BM25, "sem": vectors): its candidates' (id, score, rank)."""
    where = _filters(doc_ids, current_only)
    return f"WITH {_lexical(where) if name == 'lex' else _semantic(where)} SELECT id, score, rank FROM {name}"


def search_sql(method: str, doc_ids: bool, current_only: bool, given: bool = False, raw: bool = False) -> str:
    """The statement for a search by `method` (bm25, dense, weighted, rrf), with the filters asked for; `given`:
    both halves' candidates come as arrays from half_sql, read in the same snapshot (PgIndex._hybrid_rows); `raw`
    (a hybrid method): each row's raw BM25 score and cosine too (_RAW), for the learned order.

    The candidates are materialized before chunks are joined by id: joined on coalesce(lex, sem) in place, the
    planner scanned the chunks table once per candidate (1.4 s per BM25-only search at 20k chunks).
    """
    where = _filters(doc_ids, current_only)
    parts = [_idf()] if raw and given else []
    if method != "dense":
        parts += [_given("lex") if given else _lexical(where), _normalized("lex")]
    if method != "bm25":
        parts += [_given("sem") if given else _semantic(where), _normalized("sem")]
    sides = _SIDES[method if method in ("bm25", "dense") else "both"]
    return f"""WITH {",".join(parts)},
    pairs AS MATERIALIZED ({sides}),
    fused AS (
        SELECT p.id, p.bm25_rank, p.dense_rank, ({_SCORES[method]})::float8 AS score
        FROM pairs p JOIN {S}.chunks c ON c.id = p.id)
    SELECT f.score, f.bm25_rank, f.dense_rank, c.outdated, d.expires, {_RAW if raw else _NO_RAW}, {CHUNK_COLUMNS}
    FROM fused f JOIN {S}.chunks c ON c.id = f.id JOIN {S}.documents d ON d.doc_id = c.doc_id
    WHERE f.score IS NOT NULL
    ORDER BY round(f.score::numeric, 9) DESC, c.outdated, f.score DESC,
             least(coalesce(f.bm25_rank, {NO_RANK}), coalesce(f.dense_rank, {NO_RANK})), {ROW_ORDER}
    LIMIT %(k)s"""


def _configured(conn: psycopg.Connection) -> psycopg.Connection:
    """A search connection's settings."""
    # Iterative scans: a doc_ids filter still returns its k rows from the HNSW index, exactly ordered.
    conn.execute("SET hnsw.iterative_scan = strict_order")
    conn.execute(f"SET hnsw.ef_search = {EF_SEARCH}")
    # BM25 sums every posting of the query's terms: with the default 4MB the aggregate and its sort spilled
    # to disk (benchmarks.shared_store's chunks, 200k, 80 questions: p50 131 ms at 4MB, 94 ms at 32MB).
    conn.execute(f"SET work_mem = '{WORK_MEM}'")
    # Plan each search for its own terms: psycopg prepares a statement run 5 times, and PostgreSQL's
    # generic plan for it, blind to the terms, scanned every posting (BM25 p50 838 ms at 20k chunks).
    conn.execute("SET plan_cache_mode = force_custom_plan")
    return conn


def _in_snapshot(conn: psycopg.Connection, snapshot: str, sql: str, params: dict) -> list[tuple]:
    """The rows of `sql` read in another connection's exported snapshot (the vector half of a hybrid search)."""
    from psycopg import sql as q

    conn.execute(q.SQL("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY; SET TRANSACTION SNAPSHOT {}").format(
        q.Literal(snapshot)))
    rows = conn.execute(sql, params).fetchall()
    conn.execute("COMMIT")
    return rows


def _arrays(name: str, rows: list[tuple]) -> dict:
    """A half's (id, score, rank) rows as the three arrays search_sql(given=True) reads."""
    return {f"{name}_ids": [r[0] for r in rows], f"{name}_scores": [float(r[1]) for r in rows],
            f"{name}_ranks": [r[2] for r in rows]}


def _chunk(row: Sequence) -> Chunk:
    chunk_id, doc_id, uri, body, heading, line_start, line_end, page_start, page_end = row
    return Chunk(chunk_id, doc_id, uri, body, tuple(heading), line_start, line_end, page_start, page_end)


class _NotOpened(StoreUnavailable):
    """A new connection the server did not open (down, or too many connections): PgIndex shares open ones."""


class _Pair:
    """One search's connections, opened when first used: the statement's, and a hybrid search's second one, which
    reads the vector half beside the BM25 half."""

    def __init__(self, url: str) -> None:
        self.url = url
        self._conn: psycopg.Connection | None = None
        self._side: psycopg.Connection | None = None

    def conn(self) -> psycopg.Connection:
        if self._conn is None or self._conn.closed or self._conn.broken:
            self._conn = self._open()
        return self._conn

    def side(self) -> psycopg.Connection:
        if self._side is None or self._side.closed or self._side.broken:
            self._side = self._open()
        return self._side

    def _open(self) -> psycopg.Connection:
        try:
            conn = connect(self.url)
        except StoreUnavailable as exc:
            raise _NotOpened(str(exc)) from None
        return _configured(conn)

    def close(self) -> None:
        for conn in (self._conn, self._side):
            if conn is not None:
                conn.close()
        self._conn = self._side = None


class StoreVocabulary:
    """rag.retrieval.vocabulary.DocumentFrequencies read from the store's `terms` table, always current."""

    def __init__(self, index: "PgIndex") -> None:
        self._index = index
        self.settings = index.term_settings

    @property
    def documents(self) -> int:
        return len(self._index)

    def frequency(self, term: str, prefix: bool = True) -> int:
        exact = self._index._one(f"SELECT df FROM {S}.terms WHERE term = %s", (term,))
        if exact or not prefix or len(term) < PREFIX:
            return int(exact or 0)
        return int(self._index._one(f"SELECT coalesce(sum(df), 0) FROM {S}.terms WHERE prefix = %s",
                                    (term[:PREFIX],)) or 0)

    def frequencies(self, terms: Iterable[str]) -> dict[str, int]:
        """Chunks holding each of `terms`, exactly (no prefix), in one query."""
        wanted = list(dict.fromkeys(terms))
        if not wanted:
            return {}
        found = dict(self._index._rows(f"SELECT term, df FROM {S}.terms WHERE term = ANY(%s::text[])", (wanted,)))
        return {term: int(found.get(term) or 0) for term in wanted}


class PgIndex(IndexDefaults):
    """A rag.types.Retriever over a PostgreSQL store that rag.postgres.ingest keeps fresh; a search reads no files.

    With no embedder (MiniLM not installed) every mode but "dense" ranks by BM25 alone, as HybridIndex does.
    """

    def __init__(
        self,
        url: str,
        embedder: Embedder | None,
        fusion: str = DEFAULT_FUSION,
        bm25_weight: float = BM25_WEIGHT,
        min_dense_score: float = MIN_DENSE_SCORE,
        current_only: bool = False,
        docs_dir: Path | None = None,
        update: Update | None = None,
        order: str = ORDER,
    ) -> None:
        if fusion not in FUSIONS:
            raise ValueError(f"unknown fusion {fusion!r}: choose one of {', '.join(FUSIONS)}")
        self.url = url
        self.embedder = embedder
        self.fusion = fusion
        if order not in ORDERS:
            raise ValueError(f"unknown order {order!r}: choose one of {', '.join(ORDERS)}")
        self.order = order  # "learned": hybrid searches reorder the fused pool (rag.indexing.ordering), as HybridIndex
        self.bm25_weight = bm25_weight
        self.min_dense_score = min_dense_score
        self.current_only = current_only
        self.docs_dir = docs_dir
        self.index_dir = redact_url(url)  # where the index lives, as shown to people
        self.update = update  # rag.indexing.build.IndexUpdate of the ingest this process ran, if any
        # Up to SEARCHES searches at once (a server's clients, the TUI's threads), each on a pair of connections
        # of its own; the pairs are kept for the next search. When the server refuses a new connection (its
        # max_connections, or the role's limit, reached) while this index holds others, searches share those.
        self._cond = threading.Condition()  # guards the fields below; never held during a search
        self._idle: list[_Pair] = []
        self._busy = 0
        self._cap = SEARCHES
        self._closed = False
        self._worker: ThreadPoolExecutor | None = None
        pair = _Pair(url)
        try:
            conn = pair.conn()
            check_version(conn, url)
            check_vector_version(conn, url)
            settings = read_settings(conn)
            dim = embedding_dim(conn)
        except Exception as exc:
            pair.close()
            if isinstance(exc, (StoreRefused, StoreUnavailable)):
                raise
            raise unavailable(exc, url, during="while opening the index") from None
        self._idle.append(pair)
        self.term_settings = TermSettings(**settings.get("bm25_terms", {}))
        self.settings = settings
        model = settings.get("embedding_model")
        if embedder is not None and model is not None and model != embedder.model_id:
            self.close()
            raise StoreRefused(f"the store {self.index_dir} holds embeddings of {model}, but this smoldocs embeds "
                               f"queries with {embedder.model_id}: use the same embedder as the ingester")
        if embedder is not None and dim and dim != int(embedder.dim):
            self.close()
            raise StoreRefused(f"the store {self.index_dir} holds {dim}-dimensional embeddings; {embedder.model_id} "
                               f"gives {embedder.dim}: use the same embedder as the ingester")
        self._vocabulary = StoreVocabulary(self)
        self._vectors: dict[str, str] = {}  # question -> its vector, for the standout after its search

    # -- the connections -------------------------------------------------------------------------------------
    def _guarded(self, work: Callable[[_Pair], _T], during: str = "during a search") -> _T:
        """work(pair) on a pair of connections of its own; a driver error is one line, and that pair and every
        idle one are closed, so the next call starts on new connections (a restarted server costs one failed
        search, not the session; no transaction is left open)."""
        import psycopg

        while True:
            pair = self._take()
            try:
                result = work(pair)
            except _NotOpened:
                self._give(pair, keep=False)
                with self._cond:
                    if not self._busy and not self._idle:
                        raise  # nothing to share: the server is down or refuses this index altogether
                    self._cap = max(1, self._busy + len(self._idle))  # share what is open
                continue
            except psycopg.Error as exc:
                self._give(pair, keep=False)
                self._drop_idle()
                raise unavailable(exc, self.url, during=during) from None
            except BaseException:  # an interrupt mid-search: no connection is left inside its transaction
                self._give(pair, keep=False)
                raise
            self._give(pair, keep=True)
            return result

    def _take(self) -> _Pair:
        """An idle pair, a new one while fewer than the cap are open, or the next one a search gives back."""
        with self._cond:
            while True:
                if self._closed:
                    raise StoreUnavailable(f"the store {self.index_dir} was closed")
                if self._idle:
                    pair = self._idle.pop()
                    break
                if self._busy < self._cap:
                    pair = _Pair(self.url)
                    break
                self._cond.wait()
            self._busy += 1
            return pair

    def _give(self, pair: _Pair, keep: bool) -> None:
        with self._cond:
            self._busy -= 1
            if keep and not self._closed:
                self._idle.append(pair)
            else:
                pair.close()
            self._cond.notify()

    def _drop_idle(self) -> None:
        with self._cond:
            idle, self._idle = self._idle, []
            self._cap = SEARCHES  # new connections next time (a restarted server may take more)
            self._cond.notify_all()
        for pair in idle:
            pair.close()

    def _rows(self, sql: str, params=None, during: str = "during a search") -> list[tuple]:
        return self._guarded(lambda pair: pair.conn().execute(sql, params).fetchall(), during)

    def _hybrid_rows(self, method: str, doc_ids: bool, params: dict, raw: bool = False) -> list[tuple]:
        """A hybrid search with its halves read at once on two connections, in one exported snapshot, then fused
        by a third statement in it: it costs about the slower half instead of their sum. `raw`: with each row's raw
        BM25 score and cosine (search_sql)."""

        def work(pair: _Pair) -> list[tuple]:
            conn, side = pair.conn(), pair.side()
            cursor = conn.execute("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY; SELECT pg_export_snapshot()")
            cursor.nextset()
            snapshot = cursor.fetchall()[0][0]
            with self._cond:
                if self._worker is None:
                    self._worker = ThreadPoolExecutor(SEARCHES, thread_name_prefix="smoldocs-pg")
                worker = self._worker
            sem_sql = half_sql("sem", doc_ids, self.current_only)
            vector_half = worker.submit(_in_snapshot, side, snapshot, sem_sql, params)
            try:
                lex = conn.execute(half_sql("lex", doc_ids, self.current_only), params).fetchall()
            finally:
                wait([vector_half])  # never leave the side connection busy behind an error
            given = {**params, **_arrays("lex", lex), **_arrays("sem", vector_half.result())}
            rows = conn.execute(search_sql(method, doc_ids, self.current_only, given=True, raw=raw), given).fetchall()
            conn.execute("COMMIT")
            return rows

        return self._guarded(work)

    def _one(self, sql: str, params=None):
        rows = self._rows(sql, params)
        return rows[0][0] if rows else None

    def close(self) -> None:
        """Closes the idle connections now and each busy one when its search ends; a later search is refused."""
        with self._cond:
            self._closed = True
            worker, self._worker = self._worker, None
            self._cond.notify_all()  # a search waiting for a pair is refused
        self._drop_idle()
        if worker is not None:
            worker.shutdown()

    # -- what callers ask of an index ------------------------------------------------------------------------
    def __len__(self) -> int:
        return int(self._one(f"SELECT chunks FROM {S}.stats") or 0)

    @property
    def has_dense(self) -> bool:
        """True when queries can be embedded (MiniLM is installed); chunks not embedded yet rank by BM25."""
        return self.embedder is not None

    @property
    def notice(self) -> str:
        return "" if self.has_dense else SEMANTIC_OFF

    @property
    def dense_coverage(self) -> float:
        """The share of chunks with an embedding (1.0 for an empty store; 0.0 without an embedder)."""
        chunks, embedded = self._rows(f"SELECT chunks, embedded FROM {S}.stats")[0]
        if not chunks:
            return 1.0
        return float(embedded) / float(chunks) if self.has_dense else 0.0

    @property
    def vocabulary(self) -> StoreVocabulary:
        return self._vocabulary

    def standout(self, query: str) -> float | None:
        """rag.types.IndexReader.standout over the store's embedded chunks: the nearest STANDOUT_RANK by pgvector's
        index, as the vector half of a search reads them."""
        if self.embedder is None or not query.strip():
            return None
        rows = self._rows(
            f"SELECT 1 - (c.embedding <=> %(vector)s::vector) FROM {S}.chunks c WHERE c.embedding IS NOT NULL "
            f"ORDER BY c.embedding <=> %(vector)s::vector LIMIT %(rank)s",
            {"vector": self._vector(query), "rank": STANDOUT_RANK})
        return standout(np.array([row[0] for row in rows], dtype=np.float32))

    def _vector(self, query: str) -> str:
        """The question's vector as pgvector reads it, remembered for the standout asked after its search."""
        if self.embedder is None:
            raise SemanticSearchOff(SEMANTIC_OFF)
        key = query.strip()
        if key not in self._vectors:
            if len(self._vectors) >= STANDOUTS_KEPT:
                self._vectors.clear()
            self._vectors[key] = vector_text(query_vector(self.embedder, query))
        return self._vectors[key]

    @property
    def doc_ids(self) -> list[str]:
        """Every document id with at least one chunk, sorted."""
        rows = self._rows(f'SELECT doc_id FROM {S}.documents WHERE chunk_count > 0 ORDER BY doc_id COLLATE "C"')
        return [r[0] for r in rows]

    @property
    def chunks(self) -> list[Chunk]:
        """Every chunk, in the embedded index's order (an evaluation's gold lookup; reads the whole store)."""
        rows = self._rows(f"SELECT {CHUNK_COLUMNS} FROM {S}.chunks c ORDER BY {ROW_ORDER}")
        return [_chunk(r) for r in rows]

    def document_chunks(self, doc_id: str) -> list[Chunk]:
        """The chunks of one document, in order ([] for an unknown one)."""
        rows = self._rows(f"SELECT {CHUNK_COLUMNS} FROM {S}.chunks c WHERE c.doc_id = %s ORDER BY c.ordinal", (doc_id,))
        return [_chunk(r) for r in rows]

    def snapshot(self) -> Self:
        """Itself: every search is one statement over one snapshot of the store."""
        return self

    def source(self, doc_id: str) -> SourceInfo:
        """The standing of a document: outdated or current, and its expiry."""
        rows = self._rows(f"SELECT outdated, why, superseded_by, expires, notice FROM {S}.documents WHERE doc_id = %s",
                          (doc_id,))
        if not rows:
            return source_info(doc_id)
        outdated, why, superseded_by, expires, notice = rows[0]
        return SourceInfo(outdated, why, superseded_by, expires, notice)

    def collection(self, doc_id: str) -> str:
        """The collection of a document of a store filled from several sources (its id's `notes:`), else ""."""
        name = doc_id.split(SEPARATOR, 1)[0] if SEPARATOR in doc_id else ""
        return name if name in self.settings.get("collections", ()) else ""

    def chunk(self, chunk_id: str) -> Chunk | None:
        rows = self._rows(f"SELECT {CHUNK_COLUMNS} FROM {S}.chunks c WHERE c.chunk_id = %s", (chunk_id,))
        return _chunk(rows[0]) if rows else None

    def search(
        self, query: str, k: int = 5, doc_ids: Sequence[str] | None = None, mode: str = "hybrid"
    ) -> list[Hit]:
        """The best `k` chunks for `query`, optionally only from `doc_ids`; [] when nothing matches. A hybrid search
        under the learned order (self.order) reorders the fused first POOL, as HybridIndex.search does."""
        learned = mode == "hybrid" and self.order == "learned"
        mode = search_mode(mode, self.has_dense, k)
        if not query.strip():
            return []
        method = self.fusion if mode == "hybrid" else mode
        learned = learned and method in ("weighted", "rrf")  # no dense half: BM25's order, as HybridIndex keeps it
        wanted, k = k, max(k, ORDER_POOL) if learned else k
        names = [doc_ids] if isinstance(doc_ids, str) else list(doc_ids or ())
        vector = None
        if method != "bm25":
            vector = self._vector(query)  # SemanticSearchOff without an embedder
        params = {
            "terms": index_terms(query, self.term_settings), "vector": vector, "doc_ids": names,
            "depth": max(CANDIDATE_DEPTH, k), "k": k, "k1": K1, "b": B,
            "min_dense": self.min_dense_score, "weight": self.bm25_weight, "rrf_k": RRF_K, "seed": SEED_POSTINGS, "probe": PROBE_COST,
        }
        if method in ("weighted", "rrf"):
            rows = self._hybrid_rows(method, bool(names), params, raw=learned)
        else:
            rows = self._rows(search_sql(method, bool(names), self.current_only), params)
        hits = []
        for score, bm25_rank, dense_rank, outdated, expires, lraw, sraw, *chunk in rows:
            hits.append(Hit(_chunk(chunk), float(score), bm25_rank, dense_rank, outdated, expires,
                            collection=self.collection(chunk[1]), bm25_score=None if lraw is None else float(lraw),
                            dense_score=None if sraw is None else float(sraw)))
        return learned_order(query, hits, wanted) if learned else hits
