"""Fit the learned order of search hits (rag.indexing.ordering) on the suite's fit packages; report every package
before and after, and write the weights to rag/tuned.py with a diff: `python -m benchmarks.realdocs fit-order
[--dry-run]`.

Each answerable question with an evidence string is searched as the agent's first step does (hybrid index, the
tuned question encoder), and the first POOL hits are kept with their features; a hit is positive when its chunk
holds the evidence. The loss is pairwise logistic: every positive against every negative of its question, each
question weighing the same. Fitting sees the fit packages only; the held-back packages are only reported.

Figure per package: evidence in the first five hits, the retriever's order against the learned one. For a fit package
"after" is leave-one-package-out (weights fitted on the other fit packages), so it is not flattered by its own
questions; a held-back package is scored with the weights fitted on every fit package.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Sequence

import numpy as np

from benchmarks.fitting import tuning
from benchmarks.realdocs.suite import Package
from rag.evaluation import holds_evidence, load_questions
from rag.indexing.ordering import BIAS, FEATURES, POOL, WEIGHTS, features

SHOWN = 5  # the hits search_docs packs by default
EPOCHS = 300
STEP = 1.0
L2 = 1e-3


@dataclass(frozen=True)
class Pool:
    """One question's first POOL hits: their features, best first, and which hold the evidence."""

    package: str
    features: np.ndarray
    labels: np.ndarray


def package_pools(package: Package, tokenizer, embedder, limit: int | None = None, root: Path | None = None) -> list[Pool]:
    """Every answerable question of `package` with evidence, searched as search_docs does, as a Pool (`root`: where
    the suite's package folders are; None: the cache)."""
    from rag.indexing.build import open_index

    index = open_index(package.folder(root), tokenizer, embedder, order="fused")  # the pool as the fused score ranks it
    pools = []
    for q in [q for path in package.questions for q in load_questions(path)][:limit]:
        if not (q.answerable and q.evidence):
            continue
        hits = index.search(q.q, k=POOL)
        labels = np.asarray([holds_evidence(h.text, q.evidence) for h in hits], dtype=bool)
        pools.append(Pool(package.name, features(q.q, hits), labels))
    return pools


def fit(pools: Sequence[Pool], epochs: int = EPOCHS) -> tuple[dict[str, float], float]:
    """Weights by FEATURES name and a bias, on the features' own scale (the logit of a hit at the mean is 0)."""
    usable = [p for p in pools if p.labels.any() and not p.labels.all()]
    if not usable:
        raise ValueError("no question has both a hit holding its evidence and one not: nothing to fit")
    rows = np.concatenate([p.features for p in usable])
    mean, scale = rows.mean(0), rows.std(0) + 1e-9
    diffs, weights = [], []
    for p in usable:
        x = (p.features - mean) / scale
        pairs = (x[p.labels][:, None, :] - x[~p.labels][None, :, :]).reshape(-1, len(FEATURES))
        diffs.append(pairs)
        weights.append(np.full(len(pairs), 1.0 / len(pairs)))
    d, share = np.concatenate(diffs), np.concatenate(weights) / len(usable)
    w = np.zeros(len(FEATURES))
    for _ in range(epochs):
        margin = d @ w
        grad = -(d * (share / (1.0 + np.exp(np.clip(margin, -30, 30))))[:, None]).sum(0) + L2 * w
        w -= STEP * grad
    raw = w / scale
    return {name: round(float(v), 4) for name, v in zip(FEATURES, raw)}, round(float(-(raw * mean).sum()), 4)


def shown_rate(pools: Sequence[Pool], weights: dict[str, float] | None = None) -> float:
    """The share of pools holding the evidence in their first SHOWN hits, in the retriever's order (weights None)
    or by the weights' score."""
    if not pools:
        return float("nan")
    hits = []
    for p in pools:
        if weights is None:
            first = p.labels[:SHOWN]
        else:
            score = p.features @ np.asarray([weights[n] for n in FEATURES])
            first = p.labels[np.argsort(-score, kind="stable")[:SHOWN]]
        hits.append(bool(first.any()))
    return float(np.mean(hits))


def table(packages: Sequence[Package], pools: dict[str, list[Pool]], final: dict[str, float]) -> str:
    """Per package: questions, evidence in the first five before / after, and the pools of each split."""
    fit_names = [p.name for p in packages if p.split == "fit"]
    lines = ["| package | split | questions | retriever's order | learned order |", "|---|---|---|---|---|"]
    after: dict[str, list[bool]] = {"fit": [], "held": []}
    before: dict[str, list[bool]] = {"fit": [], "held": []}
    for p in packages:
        mine = pools[p.name]
        if p.split == "fit":
            others = [x for n in fit_names if n != p.name for x in pools[n]]
            weights = fit(others)[0] if len(fit_names) > 1 else final
        else:
            weights = final
        b, a = shown_rate(mine), shown_rate(mine, weights)
        before.setdefault(p.split, []).extend([b] * len(mine))
        after.setdefault(p.split, []).extend([a] * len(mine))
        lines.append(f"| {p.name} | {p.split} | {len(mine)} | {b:.3f} | {a:.3f} |")
    for split in ("fit", "held"):
        if before.get(split):
            lines.append(f"| pooled | {split} | {len(before[split])} | {np.mean(before[split]):.3f} | "
                         f"{np.mean(after[split]):.3f} |")
    return "\n".join(lines)


def write_constants(weights: dict[str, float], bias: float, packages: Sequence[str], write: bool = True) -> str:
    """The weights and their record (ORDER_FIT) into rag/tuned.py; the diff, "" when unchanged."""
    values = {"ORDER_WEIGHTS": weights, "ORDER_BIAS": bias}
    return tuning.rewrite(tuning.record("ORDER_FIT", "python -m benchmarks.realdocs fit-order", packages, values),
                          write=write)


def main(packages: Sequence[Package], tokenizer, embedder, write: bool = True, limit: int | None = None,
         root: Path | None = None, say: Callable[[str], None] = print) -> int:
    pools = {}
    for p in packages:
        pools[p.name] = package_pools(p, tokenizer, embedder, limit, root)
        say(f"{p.name}: {len(pools[p.name])} questions")
    fit_names = [p.name for p in packages if p.split == "fit"]
    if not fit_names:
        say("error: fit-order fits on fit packages only: name at least one (--split fit or all)")
        return 2
    try:
        weights, bias = fit([x for n in fit_names for x in pools[n]])
    except ValueError as exc:
        say(f"error: {exc}")
        return 1
    say(f"before: {dict(WEIGHTS)} bias {BIAS}")
    say(f"after (fit on {', '.join(fit_names)}): {weights} bias {bias}")
    say(table(packages, pools, weights))
    say(write_constants(weights, bias, fit_names, write=write) or "rag/tuned.py: unchanged")
    return 0
