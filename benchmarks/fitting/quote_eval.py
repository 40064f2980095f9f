"""Quote selection and answerability on the question set: `python -m benchmarks.fitting.quote_eval [--fit]`.

Each question is searched as the agent's search-first step does (hybrid index, k=5, packed into excerpts under
the evidence budget), then every quotable sentence of the shown excerpts is scored.

Selection: an evidence sentence (rag.evaluation.evidence_sentence) in the top 1 / top 3 sentences,
per split.

Quoted answer: the evidence string (rag.evaluation.holds_evidence) in the sentences the extractive answer quotes,
the three best alone and with the best sentence of another excerpt after them (rag.answering.extractive.OTHER_EXCERPT).

Answerability: abstention on unanswerable questions and false abstention on answerable ones, per split.

Splits: questions at even positions of the file fit, odd positions are held back. `--fit` fits the scorer's
weights (a listwise softmax over each question's sentences) and the answerability rule (class-balanced logistic
regression) on the fit split, and prints both splits; without it, the weights in rag.answering.extractive and
rag.answering.answerability are measured as they are.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass, replace
from typing import Sequence

import numpy as np

from rag.answering import answerability as ab
from rag.verification.claim_terms import terms
from rag.answering.extractive import OTHER_EXCERPT, WEIGHTS, RankedSentences, rank_sentences, scores_of, select
from rag.evaluation import Question, evidence_sentence, holds_evidence, load_questions
from rag.excerpts.packing import Ledger
from rag.answering.quote_features import FEATURES
from rag.excerpts.search_tool import search_first

K = 5


@dataclass(frozen=True)
class Case:
    """One question as the quote scorer sees it."""

    question: Question
    position: int  # in the question file: even fits, odd is held back
    ranked: RankedSentences
    hits: np.ndarray  # bool per candidate
    baseline: np.ndarray  # the scorer before #16: 0.6 cosine + 0.4 coverage of the bare sentence
    cosines: list  # of each bare sentence to the question
    vocabulary_signals: dict

    @property
    def fit(self) -> bool:
        return self.position % 2 == 0


def collect(index, tokenizer, embedder, questions: Sequence[Question]) -> list[Case]:
    """Search each question as the agent does and score every shown sentence."""
    cases = []
    for position, q in enumerate(questions):
        result = search_first(index, Ledger(), tokenizer, q.q, K)
        ranked = rank_sentences(q.q, result.citations, index.chunk, embedder)
        hits = np.array([evidence_sentence(c.sentence, q.evidence) for c in ranked.candidates], dtype=bool)
        cosines = ab.sentence_cosines(q.q, [c.sentence for c in ranked.candidates], embedder)
        cases.append(Case(q, position, ranked, hits, _baseline(q.q, ranked, cosines), cosines,
                          _index_signals(q.q, index, ranked.excerpts)))
    return cases


def _baseline(question: str, ranked: RankedSentences, cosines: Sequence[float]) -> np.ndarray:
    """The old score, and -inf for a sentence ending in ":" (the old scorer never quoted one)."""
    asked = terms(question).words
    out = []
    for c, cos in zip(ranked.candidates, cosines):
        coverage = len(asked & terms(c.sentence).words) / len(asked) if asked else 0.0
        out.append(-np.inf if c.sentence.rstrip().endswith(":") else 0.6 * cos + 0.4 * coverage)
    return np.array(out)


def _index_signals(question: str, index, excerpts) -> dict:
    """The signals that read the index (its vocabulary, its standout for the question where it has one) and the
    shown excerpts' words, not the scored sentences."""
    values = ab.signals(question, [], [], index.vocabulary, excerpts, index.standout(question))
    return {name: values[name] for name in ("unknown_name", "unknown_share", "unshown_name", "standout") if name in values}


# -- selection --------------------------------------------------------------------------------------------------

def top_k(cases: Sequence[Case], scores_of_case, ks=(1, 3)) -> tuple[int, ...]:
    """How many answerable cases have a hit among their k best sentences, for each k."""
    out = [0] * len(ks)
    for case in cases:
        if not case.question.answerable or not len(case.hits):
            continue
        scores = scores_of_case(case)
        order = sorted(range(len(scores)), key=lambda i: (-scores[i], case.ranked.candidates[i].n, i))
        for j, k in enumerate(ks):
            out[j] += int(case.hits[order[:k]].any())
    return tuple(out)


def fit_weights(cases: Sequence[Case], l2: float = 0.01, steps: int = 1500, rate: float = 0.5) -> dict[str, float]:
    """Listwise softmax: maximise the probability mass on evidence sentences; weights rescaled to sum to 1."""
    data = [(c.ranked.features.astype(np.float64), c.hits) for c in cases if c.question.answerable and c.hits.any()]
    w = np.zeros(len(FEATURES))
    for _ in range(steps):
        grad = l2 * w
        for x, hit in data:
            s = x @ w
            p = np.exp(s - s.max())
            p /= p.sum()
            q = p * hit
            q /= q.sum()
            grad += (p @ x - q @ x) / len(data)
        w -= rate * grad
    w = np.clip(w, 0.0, None)
    return dict(zip(FEATURES, np.round(w / w.sum(), 2).tolist()))


def rescored(case: Case, weights: dict[str, float]) -> RankedSentences:
    """The case's sentences scored with `weights` instead of the ones they were collected with."""
    return replace(case.ranked, scores=scores_of(case.ranked.features, True, weights))


def quoted_hits(cases: Sequence[Case], other_excerpt: int, weights: dict[str, float] | None = None) -> int:
    """Answerable cases whose quoted answer (as rag.answering.extractive picks it, scored with `weights`; None:
    WEIGHTS) holds the evidence string."""
    weights = weights or WEIGHTS
    hits = 0
    for case in cases:
        if case.question.answerable and case.question.evidence:
            chosen = select(rescored(case, weights), True, other_excerpt=other_excerpt, weights=weights)
            text = " ".join(q.sentence for q in chosen)
            hits += holds_evidence(text, case.question.evidence)
    return hits


# -- answerability ----------------------------------------------------------------------------------------------

def answerability_signals(case: Case, weights: dict[str, float], lexical: bool = False) -> dict[str, float]:
    """ab.SIGNALS of the case, and its standout where the case has one (ab.STANDOUT_SIGNALS); `lexical`: as without
    an embedder (the score without its cosine, no best cosine, no standout)."""
    scores = scores_of(case.ranked.features, not lexical, weights)
    index = {k: v for k, v in case.vocabulary_signals.items() if not (lexical and k == "standout")}
    return {**index, "best_score": float(scores.max(initial=0.0)),
            "best_cosine": 0.0 if lexical else max(case.cosines, default=0.0)}


def fit_answerability(rows: Sequence[tuple[dict, bool]], l2: float = 1.0, steps: int = 3000, rate: float = 0.5,
                      groups: Sequence[str] | None = None, names: Sequence[str] = ab.SIGNALS):
    """Class-balanced logistic regression for "unanswerable" over `names`; (weights, bias) on raw signals.
    `groups` (one name per row, a package): each group's answerable and unanswerable rows weigh the same in all."""
    x = np.array([[r[name] for name in names] for r, _ in rows], dtype=np.float64)
    y = np.array([0.0 if answerable else 1.0 for _, answerable in rows])
    mu, sd = x.mean(0), x.std(0) + 1e-9
    z = (x - mu) / sd
    if groups is None:
        balance = np.where(y == 1, (len(y) - y.sum()) / max(y.sum(), 1), 1.0)
    else:
        names = np.asarray(groups)
        balance = np.zeros(len(y))
        for name in set(groups):
            for label in (0.0, 1.0):
                part = (names == name) & (y == label)
                balance[part] = 1.0 / max(part.sum(), 1)
    balance /= balance.mean()
    w, b = np.zeros(x.shape[1]), 0.0
    for _ in range(steps):
        g = (1 / (1 + np.exp(-(z @ w + b))) - y) * balance
        w -= rate * (z.T @ g / len(y) + l2 * w)
        b -= rate * g.mean()
    raw = w / sd
    return tuple(np.round(raw, 2).tolist()), round(float(b - raw @ mu), 2)


def abstention(rows: Sequence[tuple[dict, bool]], weights, bias, names: Sequence[str] = ab.SIGNALS
               ) -> tuple[int, int, int, int]:
    """(unanswerable declined, unanswerable, answerable declined, answerable), the rule's `weights` over `names`."""
    declined = [(ab.decide(r, weights, bias, names) >= 0.5, answerable) for r, answerable in rows]
    return (sum(d for d, a in declined if not a), sum(not a for _, a in declined),
            sum(d for d, a in declined if a), sum(a for _, a in declined))


def report(cases: Sequence[Case], weights: dict[str, float], ab_weights, ab_bias,
           names: Sequence[str] = ab.SIGNALS) -> list[str]:
    lines = [f"quote scorer weights {weights}", "split     questions  baseline top1/top3  scorer top1/top3"]
    for name, part in (("fit", [c for c in cases if c.fit]), ("held-back", [c for c in cases if not c.fit])):
        n = sum(c.question.answerable for c in part)
        base = top_k(part, lambda c: c.baseline)
        new = top_k(part, lambda c: scores_of(c.ranked.features, True, weights))
        lines.append(f"{name:<9} {n:>9}  {base[0]:>3} / {base[1]:<3}           {new[0]:>3} / {new[1]:<3}")
    lines += ["", f"split     questions  quoted answer: 3 best  + best of another excerpt (x{OTHER_EXCERPT})"]
    for name, part in (("fit", [c for c in cases if c.fit]), ("held-back", [c for c in cases if not c.fit])):
        n = sum(c.question.answerable for c in part)
        lines.append(f"{name:<9} {n:>9}  {quoted_hits(part, 0, weights):>21}  {quoted_hits(part, OTHER_EXCERPT, weights):>31}")
    lines += ["", f"answerability weights {dict(zip(names, ab_weights))} bias {ab_bias}",
              "split      abstention on unanswerable  false abstention on answerable"]
    for name, part in (("fit", [c for c in cases if c.fit]), ("held-back", [c for c in cases if not c.fit])):
        rows = [(answerability_signals(c, weights), c.question.answerable) for c in part]
        un_d, un, an_d, an = abstention(rows, ab_weights, ab_bias, names)
        lines.append(f"{name:<9}  {un_d}/{un} ({100 * un_d / max(un, 1):.0f}%)                 "
                     f"{an_d}/{an} ({100 * an_d / max(an, 1):.1f}%)")
    return lines


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.fitting.quote_eval", description=__doc__.splitlines()[0])
    parser.add_argument("--docs", default=None, help="docs folder (default: bundled docs_corpus/)")
    parser.add_argument("--index", default=None, help="index folder (default: the cache folder of --docs)")
    parser.add_argument("--questions", default=None, help="questions JSONL (default: the bundled set)")
    parser.add_argument("--fit", action="store_true", help="fit the weights on the fit split and report them")
    args = parser.parse_args(argv)

    from models.llama_cpp.embedder import load_embedder  # real components only when run as a program
    from models.llama_cpp.tokenizer import load_tokenizer
    from rag.indexing.build import open_index

    tokenizer, embedder = load_tokenizer(), load_embedder()
    index = open_index(args.docs, tokenizer, embedder, index_dir=args.index)
    questions = load_questions(args.questions) if args.questions else load_questions()
    cases = collect(index, tokenizer, embedder, questions)
    # the rule the agent uses over an embedded index: the one that reads its standout
    weights, ab_weights, ab_bias, names = dict(WEIGHTS), ab.STANDOUT_WEIGHTS, ab.STANDOUT_BIAS, ab.STANDOUT_SIGNALS
    if args.fit:
        weights = fit_weights([c for c in cases if c.fit])
        rows = [(answerability_signals(c, weights), c.question.answerable) for c in cases if c.fit]
        ab_weights, ab_bias = fit_answerability(rows, names=names)
    print("\n".join(report(cases, weights, ab_weights, ab_bias, names)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
