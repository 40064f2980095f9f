"""Retrieval quality on the question set: `python -m benchmarks.fitting.retrieval_eval [--sweep]`.

rag.evaluation.evaluate's Recall@1, Recall@5 and MRR@10 per retriever, at chunk and doc level. `--sweep` also
compares BM25 term variants, fusion weights and the dense floor, which is how the defaults in rag.retrieval.terms
and MIN_DENSE_SCORE (rag/tuned.py) were chosen.
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import asdict
from typing import Any, Sequence

from rag.evaluation import MODES, MemoEmbedder, Question, RetrievalScores, evaluate, load_questions, ungraded
from rag.indexing.hybrid import HybridIndex
from rag.retrieval.terms import TermSettings


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
    parser = argparse.ArgumentParser(prog="python -m benchmarks.fitting.retrieval_eval", description=__doc__.splitlines()[0])
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
