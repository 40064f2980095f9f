"""What `smoldocs eval` and every report measure with: the question set, the evidence tests, retrieval scores.

The one evaluation module the runtime has; fitting and the reports that choose constants are benchmarks/fitting.

- Questions: one line of questions.jsonl each; gold chunks are the gold doc's chunks holding the evidence string.
- Evidence tests. `holds_evidence`: the evidence string itself is in the text, case, runs of whitespace and the
  lines that open and close a code fence aside (a chunk fences the command a page shows after "use this command:",
  the evidence read off the page does not) ("evidence hit" of `smoldocs eval`, the quoted-answer rows of
  quote_eval). `evidence_sentence`: one sentence carries the evidence although our sentence split may cut it
  differently: it contains the string, or it is a sentence of at least MIN_INSIDE_WORDS words inside the evidence
  (evidence spanning sentences), or it holds at least MIN_WORD_SHARE of the evidence's distinct words (quote_eval's
  "evidence sentence in the top 1 / top 3").
- Retrieval: Recall@1, Recall@5 and MRR@10 at chunk level (a gold chunk holds the evidence string) and at doc level
  (the gold doc or an alternative), for BM25 alone, dense alone, and each fusion.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Collection, Iterable, Mapping, Sequence

import numpy as np

from rag.answering.quote_features import quote_query_vector
from rag.indexing.dense import query_vector
from rag.indexing.hybrid import HybridIndex
from rag.ingest.corpus import default_docs_dir
from rag.markers import FENCE_OPEN
from rag.text import alnum_runs
from rag.types import Chunk

_SPACE = re.compile(r"\s+")
MIN_INSIDE_WORDS = 4
MIN_WORD_SHARE = 0.6
MODES = ("bm25", "dense", "rrf", "weighted")
DEPTH = 10


@dataclass(frozen=True)
class Question:
    """One line of questions.jsonl; `doc` is None for a question the docs cannot answer."""

    id: str
    q: str
    doc: str | None
    evidence: str | None
    difficulty: str
    alt_docs: tuple[str, ...] = ()
    tags: tuple[str, ...] = ()  # what the question exercises: "conflict" (sources disagree), "outdated"

    @property
    def answerable(self) -> bool:
        return self.doc is not None

    @property
    def gold_docs(self) -> tuple[str, ...]:
        return ((self.doc,) if self.doc else ()) + self.alt_docs

    @classmethod
    def from_json(cls, row: Mapping[str, Any]) -> "Question":
        return cls(
            id=str(row["id"]),
            q=str(row["q"]),
            doc=row.get("doc"),
            evidence=row.get("evidence"),
            difficulty=str(row.get("difficulty", "")),
            alt_docs=tuple(row.get("alt_docs") or ()),
            tags=tuple(row.get("tags") or ()),
        )


def question_files(docs_dir: Path | None = None) -> list[Path]:
    """questions.jsonl of the docs folder, or its questions_*.part.jsonl files while they are not merged."""
    root = Path(docs_dir) if docs_dir else default_docs_dir()
    merged = root / "questions.jsonl"
    return [merged] if merged.is_file() else sorted(root.glob("questions_*.part.jsonl"))


def load_questions(paths: Path | Sequence[Path] | None = None) -> list[Question]:
    """Every question of the given JSONL file(s) (default: the bundled set)."""
    if paths is None:
        paths = question_files()
    elif isinstance(paths, (str, Path)):
        paths = [Path(paths)]
    out = []
    for path in paths:
        for line in Path(path).read_text(encoding="utf-8").splitlines():
            if line.strip():
                out.append(Question.from_json(json.loads(line)))
    return out


def _norm(text: str) -> str:
    return _SPACE.sub(" ", text).strip()


def gold_chunk_ids(question: Question | Mapping[str, Any], chunks: Iterable[Chunk]) -> list[str]:
    """Chunks of the gold doc whose text contains the evidence (whitespace-insensitive).

    Evidence cut by a chunk boundary makes both neighbours gold. Unanswerable questions have none.
    """
    if isinstance(question, Mapping):  # a question set's raw line
        doc, evidence = question.get("doc"), question.get("evidence")
    else:
        doc, evidence = question.doc, question.evidence
    if not doc or not evidence:
        return []
    wanted = _norm(evidence)
    own = [c for c in chunks if c.doc_id == doc]
    whole = [c.chunk_id for c in own if wanted in _norm(c.text)]
    if whole:
        return whole
    return sorted(
        {c.chunk_id for a, b in zip(own, own[1:]) if wanted in _norm(a.text + " " + b.text) for c in (a, b)}
    )


def recall_at_k(ranked: Sequence[str], gold: Collection[str], k: int) -> float:
    """1.0 if any gold id is in the first k, else 0.0."""
    return 1.0 if any(r in gold for r in ranked[:k]) else 0.0


def mrr_at_k(ranked: Sequence[str], gold: Collection[str], k: int) -> float:
    """1/rank of the first gold id within the first k, else 0.0."""
    for rank, item in enumerate(ranked[:k], start=1):
        if item in gold:
            return 1.0 / rank
    return 0.0


def first_per_doc(doc_ids: Iterable[str]) -> list[str]:
    """Document ranking from a chunk ranking: each doc at the rank of its best chunk."""
    seen: dict[str, None] = {}
    for d in doc_ids:
        seen.setdefault(d, None)
    return list(seen)


def mean(values: Sequence[float]) -> float:
    return sum(values) / len(values) if values else 0.0


# -- evidence ------------------------------------------------------------------------------------------------

def normalized(text: str) -> str:
    """Lowercase, runs of whitespace as one space, no space at either end."""
    return _SPACE.sub(" ", text).strip().lower()


def holds_evidence(text: str, evidence: str | None) -> bool:
    """Whether `text` holds the evidence string, ignoring case, runs of whitespace and code fences' own lines."""
    if not evidence:
        return False
    wanted = normalized(evidence)
    if wanted in normalized(text):
        return True
    if "```" not in text and "~~~" not in text:  # training data asks this of every chunk of a gold page
        return False
    return wanted in normalized("\n".join(line for line in text.split("\n") if not FENCE_OPEN.match(line)))


def evidence_sentence(sentence: str, evidence: str | None) -> bool:
    """Whether `sentence` carries the evidence in one of the three ways of the module docstring."""
    if not evidence:
        return False
    e, s = normalized(evidence), normalized(sentence)
    if e in s:
        return True
    if len(s.split()) >= MIN_INSIDE_WORDS and s.rstrip(".:") in e:
        return True
    wanted = set(alnum_runs(e))
    return bool(wanted) and len(wanted & set(alnum_runs(s))) / len(wanted) >= MIN_WORD_SHARE


# -- retrieval -----------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class RetrievalScores:
    name: str
    level: str  # "chunk" | "doc"
    n: int
    recall_at_1: float
    recall_at_5: float
    mrr_at_10: float


class MemoEmbedder:
    """Remembers query embeddings, so comparing many variants embeds each question once."""

    def __init__(self, embedder) -> None:
        self.inner = embedder
        self.model_id = embedder.model_id
        self.dim = embedder.dim
        self._memo: dict[str, np.ndarray] = {}
        self._queries: dict[str, np.ndarray] = {}
        self._quote_queries: dict[str, np.ndarray | None] = {}

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        missing = [t for t in dict.fromkeys(texts) if t not in self._memo]
        if missing:
            for text, row in zip(missing, self.inner.embed(missing)):
                self._memo[text] = row
        return np.stack([self._memo[t] for t in texts]) if texts else np.zeros((0, self.dim), np.float32)

    def embed_query(self, text: str) -> np.ndarray:
        """The inner embedder's search-question vector (rag.indexing.dense.query_vector), remembered apart."""
        if text not in self._queries:
            self._queries[text] = query_vector(self.inner, text)
        return self._queries[text]

    def embed_quote_query(self, text: str) -> np.ndarray | None:
        """The inner embedder's quote-scorer question vector (None when it has none), remembered apart."""
        if text not in self._quote_queries:
            self._quote_queries[text] = quote_query_vector(self.inner, text)
        return self._quote_queries[text]


def evaluate(index: HybridIndex, questions: Sequence[Question], modes: Sequence[str] = MODES, name: str = "") -> list[RetrievalScores]:
    """Chunk- and doc-level scores of each mode over the answerable questions that have a gold chunk."""
    graded = [(q, gold_chunk_ids(q, index.chunks)) for q in questions if q.answerable]
    # A question with evidence but no chunk holding it is left out; one without evidence counts at doc level only.
    graded = [(q, gold) for q, gold in graded if gold or not q.evidence]
    rows = []
    for mode in modes:
        per_chunk, per_doc = [], []
        for q, gold in graded:
            hits = index.search(q.q, k=DEPTH, mode=mode)
            chunk_ranking = [h.chunk_id for h in hits]
            doc_ranking = first_per_doc(h.doc_id for h in hits)
            if gold:
                per_chunk.append([recall_at_k(chunk_ranking, gold, k) for k in (1, 5)] + [mrr_at_k(chunk_ranking, gold, DEPTH)])
            per_doc.append([recall_at_k(doc_ranking, q.gold_docs, k) for k in (1, 5)] + [mrr_at_k(doc_ranking, q.gold_docs, DEPTH)])
        label = f"{name}{mode}"
        for level, values in (("chunk", per_chunk), ("doc", per_doc)):
            if not values and level == "chunk" and per_doc:
                continue  # a question set without evidence strings
            cols = list(zip(*values)) if values else [(), (), ()]
            rows.append(RetrievalScores(label, level, len(values), *(round(mean(c), 4) for c in cols)))
    return rows


def ungraded(index: HybridIndex, questions: Sequence[Question]) -> list[str]:
    """Answerable questions whose evidence no chunk holds (a chunking or question-set problem)."""
    return [q.id for q in questions if q.answerable and q.evidence and not gold_chunk_ids(q, index.chunks)]
