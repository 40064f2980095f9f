"""Exact BM25 that stops early: each query term's postings read best first, until no unread chunk can enter the top.

The store's index postings_impact (rag.postgres.schema) orders a term's postings by their BM25 share at a reference
average length r (stats.impact_ref). At the store's average length a, a posting's share is at most its impact times
max(1, a / r): only the length normalisation depends on a, and it moves by at most that factor. So once the first n
postings of each term are read (Fagin's threshold algorithm):

- a chunk seen nowhere scores at most U, the sum over terms of weight x the best unread impact x max(1, a / r);
- a seen chunk scores at least the shares read, and at most those plus U's parts of the terms it was not seen in;
- the depth best seen chunks, scored in full, give theta, which the depth-th best score reaches at least.

When U < theta no unseen chunk can be among the depth best; every seen chunk whose bound reaches theta is scored in
full from the postings' key, and the depth best of those (with their ties) are the exact ones. Otherwise the next
round reads more of each term; after the last round the caller falls back to rag.postgres.search's pruned reading.
It is exact but, on long questions, slower than that reading, so it is off by default (search.EARLY_STOP).
"""

from __future__ import annotations

from rag.postgres.schema import SCHEMA, impact_key

S = SCHEMA
# Postings read per term, round by round. BUDGET: see benchmarks.shared_store --real and docs/results.md.
ROUNDS = (1000, 8000)
SLACK = 1e-6  # the bound is raised by this share: impacts are float4, scores float8

# One posting's share of a chunk's BM25 score (rag.indexing.bm25: Okapi with K1 and B), for query term i.
SHARE = "i.qtf * i.idf * (p.tf * (%(k1)s + 1)) / (p.tf + %(k1)s * (1 - %(b)s + %(b)s * p.length / s.avgdl))"


def corpus() -> str:
    """The CTEs every BM25 reading starts from: the corpus statistics, the query's terms and their idf."""
    # idf once per query term (MATERIALIZED: not once per posting), in float8: numeric ln() is ~25x slower.
    return f"""
    -- LIMIT 1 tells the planner that stats is one row even before it is analyzed. Guessed at 1,330 rows (a freshly
    -- filled store), the plan hashed every posting of the store: BM25 184 ms instead of 2.7 ms at 2k chunks.
    stats AS MATERIALIZED (
        SELECT chunks::float8 AS n, greatest(total_length, 1)::float8 / greatest(chunks, 1) AS avgdl, impact_ref
        FROM {S}.stats LIMIT 1),
    q AS (SELECT term, count(*)::float8 AS qtf FROM unnest(%(terms)s::text[]) AS term GROUP BY term),
    idf AS MATERIALIZED (  -- rag.indexing.bm25.idf, Lucene's: computed here from df, so nothing stored depends on it
        SELECT q.term, q.qtf, t.df, ln(1 + (s.n - t.df + 0.5::float8) / (t.df + 0.5::float8)) AS idf
        FROM q JOIN {S}.terms t ON t.term = q.term, stats s),"""


def _full(chunks: str) -> str:
    """Every query term's share summed for each chunk of CTE `chunks`, each posting looked up by its key."""
    return f"""
        SELECT c.chunk, sum({SHARE}) AS score FROM {chunks} c CROSS JOIN idf i
        JOIN {S}.postings p ON p.term = i.term AND p.chunk = c.chunk, stats s GROUP BY c.chunk"""


def round_sql(ref: float) -> str:
    """One round: the depth best chunks and their ties with exact scores, and whether they are final (`done`)."""
    key = impact_key(repr(float(ref)), "p")
    return f"""WITH {corpus()}
    top AS MATERIALIZED (  -- each term's n best postings, read in the index's order
        SELECT i.term, p.chunk, p.tf, p.length, p.impact FROM idf i CROSS JOIN LATERAL (
            SELECT p.chunk, p.tf, p.length, {key} AS impact FROM {S}.postings p WHERE p.term = i.term
            ORDER BY {key} DESC LIMIT %(n)s) p),
    edge AS MATERIALIZED (  -- the most an unread posting of each term adds (0 once its list is read to the end)
        SELECT i.term, CASE WHEN count(t.chunk) < %(n)s THEN 0::float8
            ELSE i.qtf * i.idf * min(t.impact) * greatest(1, s.avgdl / {ref!r}::float8) * (1 + {SLACK}) END AS rest
        FROM idf i LEFT JOIN top t ON t.term = i.term, stats s GROUP BY i.term, i.qtf, i.idf, s.avgdl),
    unseen AS MATERIALIZED (SELECT coalesce(sum(rest), 0) AS u FROM edge),
    seen AS MATERIALIZED (
        SELECT p.chunk, sum({SHARE}) AS part, sum(e.rest) AS seen_rest
        FROM top p JOIN idf i ON i.term = p.term JOIN edge e ON e.term = p.term, stats s GROUP BY p.chunk),
    best AS MATERIALIZED (SELECT chunk FROM seen ORDER BY part DESC LIMIT %(depth)s),
    best_full AS MATERIALIZED ({_full("best")}),
    theta AS MATERIALIZED (  -- a hair below, so float rounding never drops a chunk at the bound
        SELECT coalesce((SELECT score FROM best_full ORDER BY score DESC OFFSET %(depth)s - 1 LIMIT 1), 0)
               * (1 - 1e-9) AS t),
    verdict AS MATERIALIZED (SELECT u.u = 0 OR u.u < th.t AS done, th.t FROM unseen u, theta th),
    contenders AS MATERIALIZED (
        SELECT n.chunk FROM seen n, unseen u, verdict v WHERE v.done AND n.part + u.u - n.seen_rest >= v.t),
    scored AS MATERIALIZED ({_full("contenders")}),
    ranked AS (
        SELECT chunk, score FROM scored WHERE score > 0 ORDER BY score DESC FETCH FIRST %(depth)s ROWS WITH TIES)
    SELECT v.done, r.chunk, r.score FROM verdict v LEFT JOIN ranked r ON true"""


def top_scores(conn, ref: float, params: dict, rounds: tuple[int, ...] | None = None) -> list[tuple[int, float]] | None:
    """The depth best chunks and their ties, (id, exact score), read from the impact index in rounds of
    `rounds` postings per term; None when the last round could not prove them (the caller reads otherwise).
    `conn` is in a transaction whose snapshot the caller's later statements share."""
    sql = round_sql(ref)
    for n in rounds or ROUNDS:
        rows = conn.execute(sql, {**params, "n": n}).fetchall()
        if rows and rows[0][0]:
            return [(chunk, score) for _done, chunk, score in rows if chunk is not None]
    return None
