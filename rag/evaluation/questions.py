"""Retrieval metrics over the question set: gold chunks from evidence strings, Recall@k, MRR@k."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Collection, Iterable, Mapping, Sequence

from rag.ingest.corpus import default_docs_dir
from rag.types import Chunk

_SPACE = re.compile(r"\s+")


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
