"""The naive keyword baseline for docs_corpus: BM25 over fixed 200-word windows, no headings, no stemming.

Run: .venv/bin/python -m benchmarks.naive_baseline

Doc-level Recall@1/@5 on the answerable questions (a hit counts if its doc is the gold doc or an alternative),
next to our BM25-only and hybrid retrievers at the same doc level when a built index is at hand. Needs no
model: the baseline is pure rank_bm25.
"""

from __future__ import annotations

import argparse
import re
from pathlib import Path

import numpy as np
from rank_bm25 import BM25Okapi

from rag.ingest.corpus import default_docs_dir, load_corpus
from rag.evaluation import Question, first_per_doc, load_questions, mean, recall_at_k

WINDOW = 200
_WORD = re.compile(r"\w+")


def windows(text: str, size: int = WINDOW) -> list[str]:
    """Consecutive non-overlapping windows of `size` whitespace words."""
    words = text.split()
    return [" ".join(words[i : i + size]) for i in range(0, len(words), size)]


def plain_terms(text: str) -> list[str]:
    return _WORD.findall(text.lower())


def naive_baseline(docs_dir: Path | None = None, questions: list[Question] | None = None) -> dict:
    """{"windows", "questions", "recall_at_1", "recall_at_5"} of the 200-word-window BM25 at doc level."""
    corpus = load_corpus(docs_dir or default_docs_dir())
    owners, texts = [], []
    for doc in corpus.documents:
        for window in windows(doc.text):
            owners.append(doc.doc_id)
            texts.append(window)
    bm25 = BM25Okapi([plain_terms(t) for t in texts])
    answerable = [q for q in (questions if questions is not None else load_questions()) if q.answerable]
    r1, r5 = [], []
    for q in answerable:
        scores = bm25.get_scores(plain_terms(q.q))
        order = np.argsort(-scores, kind="stable")
        docs = first_per_doc(owners[i] for i in order if scores[i] > 0)
        r1.append(recall_at_k(docs, q.gold_docs, 1))
        r5.append(recall_at_k(docs, q.gold_docs, 5))
    return {"windows": len(texts), "questions": len(answerable), "recall_at_1": mean(r1), "recall_at_5": mean(r5)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ours", action="store_true", help="also run our retrievers (loads the real models)")
    args = parser.parse_args()
    base = naive_baseline()
    print(f"naive baseline: BM25 over {base['windows']} fixed {WINDOW}-word windows, {base['questions']} answerable questions")
    print(f"{'retriever':<34} doc R@1  doc R@5")
    print(f"{'200-word windows, plain BM25':<34} {base['recall_at_1']:.3f}    {base['recall_at_5']:.3f}")
    if args.ours:
        from models.llama_cpp.embedder import load_embedder
        from models.llama_cpp.tokenizer import load_tokenizer
        from rag.indexing.build import open_index
        from rag.evaluation import MemoEmbedder, evaluate

        index = open_index(None, load_tokenizer(), MemoEmbedder(load_embedder()))
        for r in evaluate(index, load_questions(), ("bm25", "dense", index.fusion)):
            if r.level == "doc":
                label = f"ours: {r.name} (heading-aware chunks)"
                print(f"{label:<34} {r.recall_at_1:.3f}    {r.recall_at_5:.3f}")


if __name__ == "__main__":
    main()
