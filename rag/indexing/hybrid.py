"""The hybrid retriever: BM25 and dense rankings over the same chunks, fused into one list of hits."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Mapping, NamedTuple, Sequence

import numpy as np

from models.locate import SEMANTIC_OFF
from models.protocols import Embedder
from rag import tuned
from rag.indexing.bm25 import BM25Index, ShardedBM25
from rag.ingest.chunking import indexed_text
from rag.indexing.dense import DenseIndex, embedded_rows, query_vector, standout
from rag.errors import SemanticSearchOff
from rag.retrieval.fusion import BM25_WEIGHT, FUSIONS, Ranked, fuse, top_rows
from rag.indexing.ordering import ORDER, ORDERS, POOL as ORDER_POOL, learned_order
from rag.ingest.sources import source_info
from rag.retrieval.terms import TermSettings, index_terms
from rag.retrieval.vocabulary import TermCounts
from rag.types import Chunk, Hit, RetrieverDefaults, SourceInfo, Update

MODES = ("hybrid", "bm25", "dense") + FUSIONS
DEFAULT_FUSION = tuned.DEFAULT_FUSION
CANDIDATE_DEPTH = 50  # how deep each retriever's ranking goes before fusion
MIN_DENSE_SCORE = tuned.MIN_DENSE_SCORE  # dense hits below this cosine are noise
STANDOUTS_KEPT = 64  # questions whose standout the index remembers from their search (then it starts again)
_NOT_SEEN = object()


def search_mode(mode: str, has_dense: bool, k: int) -> str:
    """The mode a search runs in (BM25 when the index has no dense half), after checking `mode` and `k`."""
    if mode not in MODES:
        raise ValueError(f"unknown search mode {mode!r}: choose one of {', '.join(MODES)}")
    if not has_dense:
        if mode == "dense":
            raise SemanticSearchOff(SEMANTIC_OFF)
        mode = "bm25"
    if k < 1:
        raise ValueError(f"k must be at least 1, got {k}")
    return mode


class HybridIndex(RetrieverDefaults):
    """Search over chunks with BM25, dense embeddings or both; implements rag.types.Retriever.

    With no embedder (MiniLM not installed) there is no dense half: every mode but "dense" ranks by BM25 alone.
    """

    def __init__(
        self,
        chunks: Sequence[Chunk],
        embeddings: np.ndarray,
        embedder: Embedder | None,
        term_settings: TermSettings = TermSettings(),
        fusion: str = DEFAULT_FUSION,
        bm25_weight: float = BM25_WEIGHT,
        min_dense_score: float = MIN_DENSE_SCORE,
        docs_dir: Path | None = None,
        index_dir: Path | None = None,
        update: Update | None = None,
        bm25: BM25Index | ShardedBM25 | None = None,
        sources: Mapping[str, SourceInfo] | None = None,
        current_only: bool = False,
        collection: str = "",
        collections: Mapping[str, str] | None = None,
        order: str = ORDER,
    ) -> None:
        if fusion not in FUSIONS:
            raise ValueError(f"unknown fusion {fusion!r}: choose one of {', '.join(FUSIONS)}")
        if order not in ORDERS:
            raise ValueError(f"unknown order {order!r}: choose one of {', '.join(ORDERS)}")
        if embeddings.shape[0] != len(chunks):
            raise ValueError(f"{len(chunks)} chunks but {embeddings.shape[0]} embedding rows")
        self.chunks = list(chunks)
        self.embedder = embedder
        self.term_settings = term_settings
        self.fusion = fusion
        self.order = order  # "learned": hybrid searches reorder the fused pool (rag.indexing.ordering)
        self.bm25_weight = bm25_weight
        self.min_dense_score = min_dense_score
        self.docs_dir = docs_dir
        self.index_dir = index_dir
        self.update = update  # rag.indexing.build.IndexUpdate: what the last open_index did
        self._rows = {c.chunk_id: row for row, c in enumerate(self.chunks)}
        doc_of_row = [c.doc_id for c in self.chunks]
        self._doc_names = sorted(set(doc_of_row))
        doc_number = {d: i for i, d in enumerate(self._doc_names)}
        self._row_doc = np.asarray([doc_number[d] for d in doc_of_row], dtype=np.int64)
        if bm25 is None:
            bm25 = BM25Index([index_terms(indexed_text(c, term_settings.headings), term_settings) for c in self.chunks])
        elif len(bm25) != len(self.chunks):
            raise ValueError(f"{len(self.chunks)} chunks but BM25 postings for {len(bm25)}")
        self.bm25 = bm25  # built from these chunks with term_settings (or loaded, when the store says so)
        self.dense = DenseIndex(embeddings)
        self.embedded = embedded_rows(self.dense.matrix)  # rows whose embedding is computed; the rest rank by BM25
        # Documents not described (an index built without its files) still get the folder rule.
        given = dict(sources or {})
        self.sources = {d: given.get(d) or source_info(d) for d in self._doc_names}
        self.current_only = current_only  # leave outdated documents out of every search
        self._outdated_row = np.asarray([self.sources[d].outdated for d in doc_of_row], dtype=bool)
        self._vocabulary: TermCounts | None = None  # built on first use
        # query -> standout, remembered by the search that embeds it: the answer that follows asks for it, and a
        # second question vector would cost as much as the search's own (23-64 ms over 11k chunks, load 2-4). The
        # question encoder is the embedder's for the index's life (models.query_tower: one a process).
        self._standouts: dict[str, float | None] = {}
        # The named source of each document (rag.indexing.collections): `collections` per document when the
        # index joins several sources, else `collection` for all of them.
        self.collection_name = collection
        self.collections = dict(collections or {})
        # (index_dir, first row, stored chunk ids) of each source joined here, to save their embeddings apart
        self.parts: tuple[tuple[Path | None, int, list[str]], ...] = ()

    @property
    def dense_coverage(self) -> float:
        """The share of chunks with an embedding (1.0 for an empty index): hybrid for those, BM25 for the rest."""
        return float(self.embedded.mean()) if len(self.embedded) else 1.0

    def with_embeddings(self, embeddings: np.ndarray) -> "HybridIndex":
        """A new index over the same chunks and BM25 postings with other embedding rows (this one is unchanged)."""
        if embeddings.shape != self.dense.matrix.shape:
            raise ValueError(f"expected embeddings of shape {self.dense.matrix.shape}, got {embeddings.shape}")
        twin = copy.copy(self)
        twin._standouts = {}
        twin.dense = DenseIndex(np.array(embeddings, dtype=np.float32, copy=True))
        twin.embedded = embedded_rows(twin.dense.matrix)
        return twin

    def source(self, doc_id: str) -> SourceInfo:
        """The standing of a document: outdated or current, and its expiry."""
        return self.sources.get(doc_id) or source_info(doc_id)

    def collection(self, doc_id: str) -> str:
        """The collection of a document: its source's name, "" for an unnamed one."""
        return self.collections.get(doc_id, self.collection_name)

    def __len__(self) -> int:
        return len(self.chunks)

    @property
    def has_dense(self) -> bool:
        """True when there is an embedder and an embedding row per chunk (MiniLM is installed)."""
        return self.embedder is not None and self.dense.matrix.shape[1] > 0

    @property
    def notice(self) -> str:
        """One line for the TUI header and --json when search is missing a part; "" when it is whole."""
        return "" if self.has_dense else SEMANTIC_OFF

    @property
    def vocabulary(self) -> TermCounts:
        """Document frequencies of the BM25 terms, built on first use."""
        if self._vocabulary is None:
            self._vocabulary = TermCounts.of(self.bm25.document_frequencies(), len(self), self.term_settings)
        return self._vocabulary

    @property
    def doc_ids(self) -> list[str]:
        """Every document id with at least one chunk, sorted."""
        return list(self._doc_names)

    def chunk(self, chunk_id: str) -> Chunk | None:
        row = self._rows.get(chunk_id)
        return None if row is None else self.chunks[row]

    def search(
        self, query: str, k: int = 5, doc_ids: Sequence[str] | None = None, mode: str = "hybrid"
    ) -> list[Hit]:
        """The best `k` chunks for `query`, optionally only from `doc_ids`; [] when nothing matches. A hybrid search
        under the learned order (self.order) reorders the fused first POOL (rag.indexing.ordering)."""
        search_mode(mode, self.has_dense, k)  # a bad mode or k is refused before anything is searched
        if mode == "hybrid" and self.order == "learned":
            return learned_order(query, self._search(query, max(k, ORDER_POOL), doc_ids, mode), k)
        return self._search(query, k, doc_ids, mode)

    def _search(self, query: str, k: int, doc_ids: Sequence[str] | None, mode: str) -> list[Hit]:
        """The best `k` chunks by the fused score (or one retriever's, by `mode`)."""
        mode = search_mode(mode, self.has_dense, k)
        allowed = self._allowed(doc_ids)
        if self.current_only and self._outdated_row.any():
            allowed = ~self._outdated_row if allowed is None else allowed & ~self._outdated_row
        if not query.strip() or not len(self) or (allowed is not None and not allowed.any()):
            return []
        depth = max(CANDIDATE_DEPTH, k)
        lexical_all = self._bm25_scores(query) if mode != "dense" else None
        semantic_all = self._dense_scores(query) if mode != "bm25" else None
        lexical = top_rows(lexical_all, depth, allowed, above=0.0) if lexical_all is not None else Ranked.empty()
        semantic = (top_rows(semantic_all, depth, allowed, above=self.min_dense_score) if semantic_all is not None
                    else Ranked.empty())
        if mode == "bm25":
            fused = list(zip(lexical.rows.tolist(), lexical.scores.tolist()))
        elif mode == "dense":
            fused = list(zip(semantic.rows.tolist(), semantic.scores.tolist()))
        else:
            method = self.fusion if mode == "hybrid" else mode
            unembedded = None if self.embedded.all() else ~self.embedded
            fused = fuse(method, lexical, semantic, self.bm25_weight, unembedded)
        # On a tie an outdated chunk goes after the current ones (the sort is stable otherwise).
        fused = sorted(fused, key=lambda pair: (-round(float(pair[1]), 9), bool(self._outdated_row[pair[0]])))
        bm25_rank = {row: r for r, row in enumerate(lexical.rows.tolist(), start=1)}
        dense_rank = {row: r for r, row in enumerate(semantic.rows.tolist(), start=1)}
        raw = _RawScores(lexical_all, semantic_all, self.embedded)
        return [self._hit(row, float(score), bm25_rank.get(row), dense_rank.get(row), raw) for row, score in fused[:k]]

    def _hit(self, row: int, score: float, bm25_rank: int | None, dense_rank: int | None,
             raw: "_RawScores | None" = None) -> Hit:
        chunk = self.chunks[row]
        info = self.sources[chunk.doc_id]
        bm25_score, dense_score = raw.of(row) if raw is not None else (None, None)
        return Hit(chunk, score, bm25_rank, dense_rank, outdated=info.outdated, expires=info.expires,
                   collection=self.collection(chunk.doc_id), bm25_score=bm25_score, dense_score=dense_score)

    def rank_bm25(self, query: str, depth: int, allowed: np.ndarray | None = None) -> Ranked:
        """Chunks sharing a term with the query, best BM25 score first."""
        return top_rows(self._bm25_scores(query), depth, allowed, above=0.0)

    def rank_dense(self, query: str, depth: int, allowed: np.ndarray | None = None) -> Ranked:
        """Chunks whose embedding is close enough to the query's, most similar first."""
        return top_rows(self._dense_scores(query), depth, allowed, above=self.min_dense_score)

    def _bm25_scores(self, query: str) -> np.ndarray:
        """Every chunk's BM25 score for `query`."""
        return self.bm25.scores(index_terms(query, self.term_settings))

    def _dense_scores(self, query: str) -> np.ndarray:
        """Every chunk's cosine with the question's vector; the query's standout is remembered on the way."""
        if self.embedder is None:
            raise SemanticSearchOff(SEMANTIC_OFF)
        scores = self.dense.scores(query_vector(self.embedder, query))
        if len(self._standouts) >= STANDOUTS_KEPT:
            self._standouts.clear()
        self._standouts[query.strip()] = standout(self._embedded_scores(scores))
        return scores

    def standout(self, query: str) -> float | None:
        """How far the chunk closest to `query` stands out from the rest (rag.types.IndexReader.standout): read
        from the search that embedded the same question, else computed."""
        if not self.has_dense or not query.strip() or not self.embedded.any():
            return None
        remembered = self._standouts.get(query.strip(), _NOT_SEEN)
        if remembered is not _NOT_SEEN:
            return remembered  # type: ignore[return-value]
        return standout(self._embedded_scores(self._dense_scores(query)))

    def _embedded_scores(self, scores: np.ndarray) -> np.ndarray:
        """The scores of the embedded rows (all of them without a copy when every row is embedded)."""
        return scores if self.embedded.all() else scores[self.embedded]

    def _allowed(self, doc_ids: Sequence[str] | None) -> np.ndarray | None:
        if not doc_ids:  # None or empty: no filter
            return None
        names = {doc_ids} if isinstance(doc_ids, str) else set(doc_ids)
        wanted = [i for i, d in enumerate(self._doc_names) if d in names]
        return np.isin(self._row_doc, np.asarray(wanted, dtype=np.int64))


class _RawScores(NamedTuple):
    """Every chunk's BM25 score and cosine of one search (None: that half did not run), for its hits."""

    bm25: np.ndarray | None
    dense: np.ndarray | None
    embedded: np.ndarray

    def of(self, row: int) -> tuple[float | None, float | None]:
        bm25 = float(self.bm25[row]) if self.bm25 is not None else None
        dense = float(self.dense[row]) if self.dense is not None and self.embedded[row] else None
        return bm25, dense
