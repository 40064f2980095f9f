"""Which way of fusing BM25 and dense rankings holds on real docs: chosen on the fit packages, reported on the held.

`python -m benchmarks.realdocs.fusion_sweep [--packages ...]`. Each question's BM25 and dense rankings (depth
rag.indexing.hybrid.CANDIDATE_DEPTH, the dense floor as shipped) are computed once; every fusion below is scored on them
by doc-level Recall@5 and MRR@10. The winner is the best mean over the fit packages (each package weighs the
same, so docs_corpus's 150 questions do not outvote the others); the held-back packages are only reported.

Fusions: the shipped ones through rag.retrieval.fusion.fuse (min-max "weighted" at several BM25 shares, "rrf" at several
k), and two tried here: rrf with a BM25 share, and per-query z-scores (each ranking's scores standardised over
its own candidates) summed with a BM25 share.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass
from typing import Callable, Sequence

import numpy as np

from benchmarks.realdocs.suite import Package, choose_packages, load_packages
from models.llama_cpp.embedder import load_embedder
from models.llama_cpp.tokenizer import load_tokenizer
from rag.evaluation import (
    DEPTH, MemoEmbedder, Question, first_per_doc, gold_chunk_ids, load_questions, mean, mrr_at_k, recall_at_k,
)
from rag.indexing.build import open_index
from rag.retrieval.fusion import Ranked, fuse
from rag.indexing.hybrid import CANDIDATE_DEPTH


@dataclass(frozen=True)
class Fusion:
    name: str
    method: str  # "weighted" | "rrf" (rag.retrieval.fusion), "wrrf", "zscore", "bm25", "dense"
    bm25_weight: float = 0.5
    k: int = 60


GRID = (
    [Fusion("bm25", "bm25"), Fusion("dense", "dense")]
    + [Fusion(f"weighted w={w}", "weighted", w) for w in (0.1, 0.2, 0.3, 0.4, 0.5, 0.6)]
    + [Fusion(f"rrf k={k}", "rrf", 0.5, k) for k in (10, 30, 60, 100)]
    + [Fusion(f"wrrf w={w} k={k}", "wrrf", w, k) for w in (0.3, 0.4) for k in (10, 60)]
    + [Fusion(f"zscore w={w}", "zscore", w) for w in (0.2, 0.3, 0.4, 0.5)]
)


def _rrf(rankings: Sequence[Ranked], weights: Sequence[float], k: int) -> dict[int, float]:
    fused: dict[int, float] = {}
    for ranking, weight in zip(rankings, weights):
        for rank, row in enumerate(ranking.rows.tolist(), start=1):
            fused[row] = fused.get(row, 0.0) + weight / (k + rank)
    return fused


def _zscore(rankings: Sequence[Ranked], weights: Sequence[float]) -> dict[int, float]:
    """Each ranking's scores standardised over its own candidates, then summed with `weights`; a row one ranking
    did not return gets that ranking's lowest z (it scored no better than the worst it returned)."""
    zs = []
    for ranking in rankings:
        sd = float(ranking.scores.std()) if ranking.rows.size else 0.0
        z = (ranking.scores - ranking.scores.mean()) / sd if sd > 0 else np.zeros_like(ranking.scores)
        zs.append(dict(zip(ranking.rows.tolist(), z.tolist())))
    floors = [min(z.values(), default=0.0) for z in zs]
    rows = set().union(*zs)
    return {row: sum(w * z.get(row, floor) for z, w, floor in zip(zs, weights, floors)) for row in rows}


def fused_rows(fusion: Fusion, lexical: Ranked, semantic: Ranked) -> list[int]:
    """Chunk rows best first under one fusion."""
    if fusion.method == "bm25":
        return lexical.rows.tolist()
    if fusion.method == "dense":
        return semantic.rows.tolist()
    if fusion.method == "weighted":
        return [row for row, _ in fuse("weighted", lexical, semantic, fusion.bm25_weight)]
    if fusion.method == "rrf" and fusion.k == 60:
        return [row for row, _ in fuse("rrf", lexical, semantic)]
    weights = (fusion.bm25_weight, 1.0 - fusion.bm25_weight)
    if fusion.method in ("rrf", "wrrf"):
        scores = _rrf((lexical, semantic), weights if fusion.method == "wrrf" else (1.0, 1.0), fusion.k)
    elif fusion.method == "zscore":
        scores = _zscore((lexical, semantic), weights)
    else:
        raise ValueError(f"unknown fusion method {fusion.method!r}")
    return [row for row, _ in sorted(scores.items(), key=lambda item: (-item[1], item[0]))]


@dataclass
class RankingPair:
    question: Question
    lexical: Ranked
    semantic: Ranked


def ranking_pairs(index, questions: Sequence[Question]) -> list[RankingPair]:
    """Both rankings of every answerable question that evaluate() grades (a gold chunk, or no evidence)."""
    out = []
    for q in questions:
        if not q.answerable or (q.evidence and not gold_chunk_ids(q, index.chunks)):
            continue
        out.append(RankingPair(q, index.rank_bm25(q.q, CANDIDATE_DEPTH), index.rank_dense(q.q, CANDIDATE_DEPTH)))
    return out


def doc_scores(index, prepared: Sequence[RankingPair], fusion: Fusion) -> tuple[float, float]:
    """(doc-level Recall@5, doc-level MRR@10) of one fusion."""
    recalls, mrrs = [], []
    for p in prepared:
        # As benchmarks.fitting.retrieval_eval ranks documents: from the first DEPTH chunks.
        rows = fused_rows(fusion, p.lexical, p.semantic)[:DEPTH]
        docs = first_per_doc(index.chunks[r].doc_id for r in rows)
        recalls.append(recall_at_k(docs, p.question.gold_docs, 5))
        mrrs.append(mrr_at_k(docs, p.question.gold_docs, 10))
    return mean(recalls), mean(mrrs)


def sweep_fusions(packages: Sequence[Package], say: Callable[[str], None] = print) -> int:
    tokenizer, embedder = load_tokenizer(), MemoEmbedder(load_embedder())
    results: dict[str, dict[str, tuple[float, float]]] = {}
    split_of = {}
    for package in packages:
        folder = package.folder()
        if not folder.is_dir():
            say(f"{package.name}: no folder {folder}: run `python -m benchmarks.realdocs build` first")
            continue
        index = open_index(folder, tokenizer, embedder)
        questions = [q for path in package.questions for q in load_questions(path)]
        prepared = ranking_pairs(index, questions)
        results[package.name] = {f.name: doc_scores(index, prepared, f) for f in GRID}
        split_of[package.name] = package.split
        say(f"{package.name} ({package.split}): {len(prepared)} questions graded")
    fit = [n for n in results if split_of[n] == "fit"]
    held = [n for n in results if split_of[n] == "held"]

    def macro(names, fusion_name, which=0):
        return mean([results[n][fusion_name][which] for n in names]) if names else float("nan")

    names = list(results)
    say("doc-level Recall@5 (MRR@10 for the fit mean); fit mean chooses, held mean only reports")
    say("| fusion | " + " | ".join(f"{n} ({split_of[n]})" for n in names) + " | fit mean R@5 | fit mean MRR | held mean R@5 |")
    say("|" + "---|" * (len(names) + 4))
    for f in GRID:
        cells = " | ".join(f"{results[n][f.name][0]:.2f}" for n in names)
        say(f"| {f.name} | {cells} | {macro(fit, f.name):.3f} | {macro(fit, f.name, 1):.3f} | {macro(held, f.name):.3f} |")
    best = max(GRID, key=lambda f: (round(macro(fit, f.name), 4), round(macro(fit, f.name, 1), 4)))
    say(f"best on the fit packages: {best.name} (fit R@5 {macro(fit, best.name):.3f}, MRR {macro(fit, best.name, 1):.3f}); "
        f"held R@5 {macro(held, best.name):.3f} vs the shipped weighted w=0.5 {macro(held, 'weighted w=0.5'):.3f}")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.realdocs.fusion_sweep", description=__doc__.splitlines()[0])
    parser.add_argument("--packages", nargs="+", default=None)
    args = parser.parse_args(argv)
    try:
        packages = choose_packages(load_packages(), args.packages)
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    return sweep_fusions(packages)


if __name__ == "__main__":
    sys.exit(main())
