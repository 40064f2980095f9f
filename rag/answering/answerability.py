"""Whether the shown excerpts can answer a question at all: a small logistic rule over measured signals.

Signals (`python -m benchmarks.fitting.quote_eval` measures them; docs/decisions.md has the history):
- unknown_name: the question names something (LoRA, FAISS, Docker, WebSocket) that no indexed chunk mentions;
- unknown_share: the idf-weighted share of the question's terms that no indexed chunk holds;
- best_score: the quote scorer's best sentence (rag.answering.extractive);
- best_cosine: the closest sentence by MiniLM cosine, the sentence alone.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Mapping, Sequence

from rag import tuned
from rag.retrieval.terms import TermSettings, index_terms
from rag.retrieval.vocabulary import DocumentFrequencies
from rag.text import ends_sentence, name_words
from rag.verification.support import embed_cached

SIGNALS = ("unknown_name", "unknown_share", "best_score", "best_cosine")
# Logistic weights over SIGNALS and the bias, fitted (rag.tuned); answerable when P(unanswerable) < 0.5.
WEIGHTS = tuple(tuned.ANSWERABILITY_WEIGHTS[name] for name in SIGNALS)
BIAS = tuned.ANSWERABILITY_BIAS

# A word that names something: capitalised inside the question, an acronym, camel case, or with a digit.
_NAMEISH = re.compile(r"[A-Z].*[A-Z]|[a-z][A-Z]|\d")


@dataclass(frozen=True)
class Answerability:
    answerable: bool
    probability: float  # that the question is NOT answerable from the docs
    signals: dict[str, float]
    unknown_names: tuple[str, ...] = ()

    @property
    def reason(self) -> str:
        if self.unknown_names:
            return f"the docs never mention {', '.join(self.unknown_names)}"
        return "no shown sentence comes close to the question" if not self.answerable else ""


def _question_terms(question: str, settings: TermSettings) -> set[str]:
    text = question.replace("can't", "can not").replace("won't", "will not")
    return set(index_terms(re.sub(r"n't\b", " not", text), settings))


def unknown_names(question: str, vocabulary: DocumentFrequencies | None) -> tuple[str, ...]:
    """Name-like words of the question with a term that no indexed chunk holds (exact match, no prefix)."""
    if vocabulary is None:
        return ()
    found = []
    for m in name_words(question):
        word = m.group(1)
        starts = m.start() == 0 or ends_sentence(question[: m.start()])
        nameish = bool(_NAMEISH.search(word)) or (word[0].isupper() and not starts)
        if not nameish or (starts and not _NAMEISH.search(word)):
            continue
        if any(len(t) >= 2 and not vocabulary.frequency(t, prefix=False) for t in index_terms(word, vocabulary.settings)):
            found.append(word)
    return tuple(dict.fromkeys(found))


def unknown_share(question: str, vocabulary: DocumentFrequencies | None) -> float:
    """The idf-weighted share of the question's terms that the index never holds (0 without a vocabulary)."""
    if vocabulary is None or vocabulary.documents <= 0:
        return 0.0
    n = vocabulary.documents
    weights = {t: math.log((n - f + 0.5) / (f + 0.5) + 1) for t in _question_terms(question, vocabulary.settings)
               for f in [vocabulary.frequency(t)]}
    total = sum(weights.values())
    return sum(w for t, w in weights.items() if vocabulary.frequency(t) == 0) / total if total else 0.0


def signals(question: str, scores: Sequence[float], cosines: Sequence[float], vocabulary: DocumentFrequencies | None) -> dict[str, float]:
    """SIGNALS for one question, from the quote scorer's scores and cosines of the shown sentences."""
    return {
        "unknown_name": float(bool(unknown_names(question, vocabulary))),
        "unknown_share": unknown_share(question, vocabulary),
        "best_score": max(scores, default=0.0),
        "best_cosine": max(cosines, default=0.0),
    }


def decide(values: Mapping[str, float], weights: Sequence[float] = WEIGHTS, bias: float = BIAS) -> float:
    """The probability that the question is not answerable from the docs."""
    z = bias + sum(w * values[name] for w, name in zip(weights, SIGNALS))
    return 1.0 / (1.0 + math.exp(-z))


def sentence_cosines(question: str, sentences: Sequence[str], embedder) -> list[float]:
    """MiniLM cosine of each bare sentence to the question (the verifier reuses these vectors); [] without one."""
    if embedder is None or not sentences:
        return []
    vectors = embed_cached([question, *sentences], embedder)
    return [float(vectors[s] @ vectors[question]) for s in sentences]


def assess(question: str, scores: Sequence[float], cosines: Sequence[float], vocabulary: DocumentFrequencies | None) -> Answerability:
    """Answerable unless the signals say the docs do not cover the question; no shown sentence at all: not."""
    values = signals(question, scores, cosines, vocabulary)
    if not len(scores):
        return Answerability(False, 1.0, values)
    p = decide(values)
    return Answerability(p < 0.5, p, values, unknown_names(question, vocabulary))
