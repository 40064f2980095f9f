"""Retrieval quality on the question set: `python -m rag.evaluation.retrieval_eval [--sweep]`.

Recall@1, Recall@5 and MRR@10 at chunk level (a gold chunk holds the evidence string) and at doc level
(the gold doc or an alternative), for BM25 alone, dense alone, and each fusion. `--sweep` also compares
BM25 term variants and fusion weights, which is how the defaults in rag.retrieval.terms and rag.retrieval.fusion were chosen.
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import asdict, dataclass
from typing import Any, Sequence

import numpy as np

from rag.indexing.hybrid import HybridIndex
from rag.evaluation.questions import Question, first_per_doc, gold_chunk_ids, load_questions, mean, mrr_at_k, recall_at_k
from rag.retrieval.terms import TermSettings

MODES = ("bm25", "dense", "rrf", "weighted")
DEPTH = 10


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

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        missing = [t for t in dict.fromkeys(texts) if t not in self._memo]
        if missing:
            for text, row in zip(missing, self.inner.embed(missing)):
                self._memo[text] = row
        return np.stack([self._memo[t] for t in texts]) if texts else np.zeros((0, self.dim), np.float32)


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


def variant(index: HybridIndex, **changes) -> HybridIndex:
    """The same chunks and embeddings searched with other term settings or fusion parameters."""
    options: dict[str, Any] = dict(
        term_settings=index.term_settings, fusion=index.fusion, bm25_weight=index.bm25_weight,
        min_dense_score=index.min_dense_score,
    )
    options.update(changes)
    return HybridIndex(index.chunks, index.dense.matrix, index.embedder, docs_dir=index.docs_dir, **options)


# Terms before issue #18 (the light suffix stripper, words only) and now (Snowball, identifiers whole and split).
TERMS_BEFORE = TermSettings(stemmer="light", identifiers=False)
TERMS_AFTER = TermSettings()


def compare_terms(index: HybridIndex, questions: Sequence[Question]) -> list[RetrievalScores]:
    """BM25 alone and the default fusion, with the old terms and the new, at chunk and doc level."""
    modes = ("bm25", index.fusion) if index.has_dense else ("bm25",)
    rows = []
    for label, settings in (("before", TERMS_BEFORE), ("+identifiers", TermSettings(stemmer="light")),
                            ("+snowball", TermSettings(identifiers=False)), ("after", TERMS_AFTER),
                            ("after, dotted names whole", TermSettings(wholes="token"))):
        rows += evaluate(variant(index, term_settings=settings), questions, modes, name=f"terms {label}: ")
    return rows


def sweep(index: HybridIndex, questions: Sequence[Question]) -> list[RetrievalScores]:
    """BM25 term variants, then fusion weights and the dense floor, all at chunk level."""
    rows = []
    for label, settings in (
        ("plain", TermSettings(stem=False, stopwords=False, headings=False)),
        ("+headings", TermSettings(stem=False, stopwords=False, headings=True)),
        ("+headings+stem", TermSettings(stem=True, stopwords=False, headings=True)),
        ("+headings+stopwords", TermSettings(stem=False, stopwords=True, headings=True)),
        ("+headings+stem+stopwords", TermSettings(stem=True, stopwords=True, headings=True)),
    ):
        sub = variant(index, term_settings=settings)
        rows += [r for r in evaluate(sub, questions, MODES[:1] + MODES[2:], name=f"terms {label}: ") if r.level == "chunk"]
    for weight in (0.3, 0.4, 0.5, 0.6, 0.7):
        sub = variant(index, bm25_weight=weight)
        rows += [r for r in evaluate(sub, questions, ("weighted",), name=f"bm25 weight {weight}: ") if r.level == "chunk"]
    for floor in (0.0, 0.2, 0.25, 0.3, 0.35):
        sub = variant(index, min_dense_score=floor)
        rows += [r for r in evaluate(sub, questions, MODES[1:], name=f"dense floor {floor}: ") if r.level == "chunk"]
    return rows


def format_table(rows: Sequence[RetrievalScores]) -> str:
    width = max([len(r.name) for r in rows] + [10])
    lines = [f"{'retriever':<{width}}  level  {'n':>4}  R@1    R@5    MRR@10"]
    for r in rows:
        lines.append(f"{r.name:<{width}}  {r.level:<5}  {r.n:>4}  {r.recall_at_1:.3f}  {r.recall_at_5:.3f}  {r.mrr_at_10:.3f}")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m rag.evaluation.retrieval_eval", description=__doc__.splitlines()[0])
    parser.add_argument("--docs", default=None, help="docs folder (default: bundled docs_corpus/)")
    parser.add_argument("--index", default=None, help="index folder (default: the cache folder of --docs)")
    parser.add_argument("--questions", default=None, help="questions JSONL (default: the bundled set)")
    parser.add_argument("--sweep", action="store_true", help="also compare term variants, weights and floors")
    parser.add_argument("--compare-terms", action="store_true", help="BM25 and fusion with the old and new terms")
    parser.add_argument("--json", action="store_true", help="print rows as JSON")
    args = parser.parse_args(argv)

    from models.llama_cpp.embedder import optional_embedder  # real components only when run as a program
    from models.llama_cpp.tokenizer import load_tokenizer
    from rag.indexing.build import open_index

    embedder = optional_embedder()
    memo = MemoEmbedder(embedder) if embedder is not None else None
    index = open_index(args.docs, load_tokenizer(), memo, index_dir=args.index)
    questions = load_questions(args.questions) if args.questions else load_questions()
    if args.compare_terms:
        rows = compare_terms(index, questions)
    else:
        rows = evaluate(index, questions, MODES if index.has_dense else ("bm25",))
    if args.sweep:
        rows += sweep(index, questions)
    missing = ungraded(index, questions)
    if args.json:
        print(json.dumps([asdict(r) for r in rows], indent=1))
    else:
        answerable = sum(q.answerable for q in questions)
        print(f"{len(questions)} questions, {answerable} answerable, {len(index)} chunks; default fusion {index.fusion}")
        print(format_table(rows))
    if missing:
        print(f"no chunk holds the evidence of: {', '.join(missing)}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
