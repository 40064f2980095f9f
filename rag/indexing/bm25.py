"""BM25 (rank-bm25's Okapi variant, Lucene's IDF) over precomputed postings, without a Python loop per chunk.

rank_bm25.BM25Okapi computes lengths and term frequencies; its get_scores walks every document's dict for every
query term, which is too slow at 100k chunks. We turn its statistics into term -> (rows, weights) postings once,
so a query costs one numpy add per query term over the chunks that contain it.

Parity with rank-bm25: term-frequency saturation (k1) and length normalisation (b) are the same; the IDF is
Lucene's, log(1 + (N - n + 0.5) / (n + 0.5)), which is above 0 for every n. rank-bm25's log((N - n + 0.5) / (n + 0.5))
is negative once a term is in more than half the chunks, and its epsilon floor is a share of the *average* IDF,
itself negative in a one- or two-chunk folder: there every matching chunk scored below the non-matching ones and
BM25 found nothing. Rankings agree wherever rank-bm25's IDFs are all positive (both are decreasing in n); scores do not.
"""

from __future__ import annotations

import math
from typing import Sequence

import numpy as np
from rank_bm25 import BM25Okapi

K1 = 1.5
B = 0.75
IDF_NAME = "lucene"  # stored with the index: postings built under another IDF are rebuilt, never mixed


def idf(n_docs: int, doc_freq: int) -> float:
    """Lucene's BM25 IDF: always above 0, so a term in every chunk still counts a little."""
    return math.log(1.0 + (n_docs - doc_freq + 0.5) / (doc_freq + 0.5))


class BM25Index:
    """Scores every row for a list of query terms as BM25Okapi.get_scores does, with Lucene's IDF."""

    def __init__(self, docs: Sequence[Sequence[str]], k1: float = K1, b: float = B) -> None:
        self.size = len(docs)
        self._postings: dict[str, tuple[np.ndarray, np.ndarray]] = {}
        if not docs or not any(docs):
            return  # BM25Okapi divides by the total length; nothing can match anyway
        ref = BM25Okapi([list(d) for d in docs], k1=k1, b=b)
        doc_len = np.asarray(ref.doc_len, dtype=np.float64)
        norm = k1 * (1 - b + b * doc_len / ref.avgdl)
        rows: dict[str, list[int]] = {}
        tfs: dict[str, list[int]] = {}
        for row, freqs in enumerate(ref.doc_freqs):
            for term, tf in freqs.items():
                rows.setdefault(term, []).append(row)
                tfs.setdefault(term, []).append(tf)
        for term, term_rows in rows.items():
            idx = np.asarray(term_rows, dtype=np.int32)
            tf = np.asarray(tfs[term], dtype=np.float64)
            weight = idf(self.size, len(term_rows)) * (tf * (k1 + 1) / (tf + norm[idx]))
            self._postings[term] = (idx, weight)

    def __len__(self) -> int:
        return self.size

    def to_arrays(self) -> dict[str, np.ndarray]:
        """The postings as flat arrays (terms, offsets, rows, weights) for np.savez."""
        terms = list(self._postings)
        lengths = [len(self._postings[t][0]) for t in terms]
        offsets = np.zeros(len(terms) + 1, dtype=np.int64)
        np.cumsum(lengths, out=offsets[1:])
        empty_rows, empty_weights = np.zeros(0, np.int32), np.zeros(0, np.float64)
        return {
            "size": np.asarray(self.size, dtype=np.int64),
            "terms": np.asarray(terms, dtype=str) if terms else np.zeros(0, dtype="<U1"),
            "offsets": offsets,
            "rows": np.concatenate([self._postings[t][0] for t in terms]) if terms else empty_rows,
            "weights": np.concatenate([self._postings[t][1] for t in terms]) if terms else empty_weights,
        }

    @classmethod
    def from_arrays(cls, arrays) -> "BM25Index":
        """The index to_arrays() described, without re-reading any text."""
        index = cls.__new__(cls)
        index.size = int(arrays["size"])
        offsets, rows, weights = arrays["offsets"], arrays["rows"], arrays["weights"]
        terms = arrays["terms"].tolist()
        if len(offsets) != len(terms) + 1 or offsets[-1] != len(rows) or len(rows) != len(weights):
            raise ValueError("BM25 postings arrays do not match each other")
        index._postings = {t: (rows[offsets[i] : offsets[i + 1]], weights[offsets[i] : offsets[i + 1]])
                           for i, t in enumerate(terms)}
        return index

    def document_frequencies(self) -> dict[str, int]:
        """How many rows hold each term."""
        return {term: len(rows) for term, (rows, _weights) in self._postings.items()}

    def scores(self, query_terms: Sequence[str]) -> np.ndarray:
        """One score per row; a repeated query term counts again, as in rank_bm25."""
        out = np.zeros(self.size, dtype=np.float64)
        for term in query_terms:
            posting = self._postings.get(term)
            if posting is not None:
                out[posting[0]] += posting[1]
        return out

    @property
    def nbytes(self) -> int:
        """Memory held by the postings arrays (the term strings and dict not counted)."""
        return sum(rows.nbytes + weights.nbytes for rows, weights in self._postings.values())


class ShardedBM25:
    """Several sources' postings side by side, rows in order: each scores its own rows with its own IDF.

    This is what a search over several Lucene shards does by default; it costs nothing to join (no chunk is
    re-read), and a term's IDF differs only between sources, never within one.
    """

    def __init__(self, parts: Sequence["BM25Index | ShardedBM25"]) -> None:
        self.parts = list(parts)
        self.size = sum(len(p) for p in self.parts)

    def __len__(self) -> int:
        return self.size

    def document_frequencies(self) -> dict[str, int]:
        """How many rows of all sources hold each term."""
        out: dict[str, int] = {}
        for part in self.parts:
            for term, n in part.document_frequencies().items():
                out[term] = out.get(term, 0) + n
        return out

    def scores(self, query_terms: Sequence[str]) -> np.ndarray:
        """One score per row, each source's rows scored by that source's postings."""
        if not self.parts:
            return np.zeros(0, dtype=np.float64)
        return np.concatenate([p.scores(query_terms) for p in self.parts])

    @property
    def nbytes(self) -> int:
        return sum(p.nbytes for p in self.parts)
