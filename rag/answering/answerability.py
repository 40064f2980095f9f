"""Whether the shown excerpts can answer a question at all: a small logistic rule over measured signals.

Signals (`python -m benchmarks.fitting.quote_eval` measures them; docs/decisions.md has the history):
- unknown_name: the question names something (LoRA, FAISS, Docker, WebSocket) that no indexed chunk mentions;
- unknown_share: the idf-weighted share of the question's terms that no indexed chunk holds;
- best_score: the quote scorer's best sentence (rag.answering.extractive);
- best_cosine: the closest sentence by MiniLM cosine, the sentence alone;
- unshown_name: the question names something that no shown excerpt mentions (the docs may, elsewhere): "Can a
  stick table be backed by Redis?" when the excerpts about stick tables never say Redis;
- standout: how far the chunk closest to the question (by the search's question vector) stands out from the rest
  of the index: its cosine minus the fifth closest's (rag.types.IndexReader.standout). A question the docs answer
  usually has a passage much closer than the next ones; one they do not meets many passages at about the same
  distance. The embedded index and the PostgreSQL store compute it; where an index cannot (no embedded chunks,
  fewer than five), the rule without it decides.
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

SIGNALS = ("unknown_name", "unknown_share", "best_score", "best_cosine", "unshown_name")
# Logistic weights over SIGNALS and the bias, fitted (rag.tuned); answerable when P(unanswerable) < 0.5. The rule
# where the index cannot say how far its closest chunk stands out.
WEIGHTS = tuple(tuned.ANSWERABILITY_WEIGHTS[name] for name in SIGNALS)
BIAS = tuned.ANSWERABILITY_BIAS
# The rule where it can: STANDOUT_SIGNALS, fitted on the same questions with the same share of answerable ones declined.
STANDOUT_SIGNALS = (*SIGNALS, "standout")
STANDOUT_WEIGHTS = tuple(tuned.ANSWERABILITY_STANDOUT_WEIGHTS[name] for name in STANDOUT_SIGNALS)
STANDOUT_BIAS = tuned.ANSWERABILITY_STANDOUT_BIAS
# Without an embedder (BM25 only: no MiniLM) no sentence has a cosine and the score is its words alone: a rule fitted
# the same way with best_cosine 0 (rag.tuned), since the one above then declines every question.
LEXICAL_WEIGHTS = tuple(tuned.ANSWERABILITY_LEXICAL_WEIGHTS[name] for name in SIGNALS)
LEXICAL_BIAS = tuned.ANSWERABILITY_LEXICAL_BIAS

# A word that names something: capitalised inside the question, an acronym, camel case, or with a digit.
_NAMEISH = re.compile(r"[A-Z].*[A-Z]|[a-z][A-Z]|\d")


@dataclass(frozen=True)
class Answerability:
    answerable: bool
    probability: float  # that the question is NOT answerable from the docs
    signals: dict[str, float]
    unknown_names: tuple[str, ...] = ()
    unshown_names: tuple[str, ...] = ()  # named in the question, in no shown excerpt (the unknown ones among them)

    @property
    def reason(self) -> str:
        if self.unknown_names:
            return f"the docs never mention {', '.join(self.unknown_names)}"
        if self.answerable:
            return ""
        if self.unshown_names:
            return f"no shown excerpt mentions {', '.join(self.unshown_names)}"
        return "no shown sentence comes close to the question"


def _question_terms(question: str, settings: TermSettings) -> set[str]:
    text = question.replace("can't", "can not").replace("won't", "will not")
    return set(index_terms(re.sub(r"n't\b", " not", text), settings))


def _names(question: str) -> list[str]:
    """The question's name-like words: capitalised inside a sentence, acronyms, camel case, with a digit."""
    found = []
    for m in name_words(question):
        word = m.group(1)
        starts = m.start() == 0 or ends_sentence(question[: m.start()])
        nameish = bool(_NAMEISH.search(word)) or (word[0].isupper() and not starts)
        if nameish and not (starts and not _NAMEISH.search(word)):
            found.append(word)
    return found


def unknown_names(question: str, vocabulary: DocumentFrequencies | None) -> tuple[str, ...]:
    """Name-like words of the question with a term that no indexed chunk holds (exact match, no prefix)."""
    if vocabulary is None:
        return ()
    found = [word for word in _names(question)
             if any(len(t) >= 2 and not vocabulary.frequency(t, prefix=False) for t in index_terms(word, vocabulary.settings))]
    return tuple(dict.fromkeys(found))


def unshown_names(question: str, excerpts: Sequence[str], settings: TermSettings = TermSettings()) -> tuple[str, ...]:
    """Name-like words of the question with a term that none of the shown excerpts' texts holds."""
    shown: set[str] = set()
    for text in excerpts:
        shown.update(index_terms(text, settings))
    found = [word for word in _names(question) if any(len(t) >= 2 and t not in shown for t in index_terms(word, settings))]
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


def signals(question: str, scores: Sequence[float], cosines: Sequence[float], vocabulary: DocumentFrequencies | None,
            excerpts: Sequence[str] | None = None, standout: float | None = None) -> dict[str, float]:
    """SIGNALS for one question, from the quote scorer's scores and cosines of the shown sentences and the shown
    excerpts' texts (None: not known, and a name counts as unshown only where the index lacks it); with the index's
    `standout` for the question, STANDOUT_SIGNALS."""
    return _values(question, scores, cosines, vocabulary, *_named(question, vocabulary, excerpts), standout)


def _named(question: str, vocabulary: DocumentFrequencies | None,
           excerpts: Sequence[str] | None) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The question's unknown names and its unshown ones (without excerpts: the unknown ones), each found once."""
    unknown = unknown_names(question, vocabulary)
    return unknown, unknown if excerpts is None else unshown_names(question, excerpts, _settings(vocabulary))


def absent_names(question: str, excerpts: Sequence[str], vocabulary: DocumentFrequencies | None
                 ) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """What a decline can tell its reader: the question's names that no indexed chunk holds (none without the
    index's term counts), and the others that none of the shown excerpts' texts holds."""
    unknown, unshown = _named(question, vocabulary, excerpts)
    return unknown, tuple(name for name in unshown if name not in unknown)


def _values(question: str, scores: Sequence[float], cosines: Sequence[float], vocabulary: DocumentFrequencies | None,
            unknown: tuple[str, ...], unshown: tuple[str, ...], standout: float | None = None) -> dict[str, float]:
    values = {
        "unknown_name": float(bool(unknown)),
        "unknown_share": unknown_share(question, vocabulary),
        "best_score": max(scores, default=0.0),
        "best_cosine": max(cosines, default=0.0),
        "unshown_name": float(bool(unshown)),
    }
    return values if standout is None else values | {"standout": float(standout)}


def _settings(vocabulary: DocumentFrequencies | None) -> TermSettings:
    return vocabulary.settings if vocabulary is not None else TermSettings()


def decide(values: Mapping[str, float], weights: Sequence[float] = WEIGHTS, bias: float = BIAS,
           names: Sequence[str] = SIGNALS) -> float:
    """The probability that the question is not answerable from the docs (`weights` over `names`)."""
    z = bias + sum(w * values[name] for w, name in zip(weights, names, strict=True))
    return 1.0 / (1.0 + math.exp(-z))


def rule(values: Mapping[str, float], embedded: bool) -> tuple[Sequence[float], float, Sequence[str]]:
    """(weights, bias, signal names) of the rule that decides: with a standout value the rule that reads it, with
    sentence cosines (an embedder) the rule without, with neither the lexical rule."""
    if not embedded:
        return LEXICAL_WEIGHTS, LEXICAL_BIAS, SIGNALS
    if "standout" in values:
        return STANDOUT_WEIGHTS, STANDOUT_BIAS, STANDOUT_SIGNALS
    return WEIGHTS, BIAS, SIGNALS


def sentence_cosines(question: str, sentences: Sequence[str], embedder) -> list[float]:
    """MiniLM cosine of each bare sentence to the question (the verifier reuses these vectors); [] without one."""
    if embedder is None or not sentences:
        return []
    vectors = embed_cached([question, *sentences], embedder)
    return [float(vectors[s] @ vectors[question]) for s in sentences]


def assess(question: str, scores: Sequence[float], cosines: Sequence[float], vocabulary: DocumentFrequencies | None,
           excerpts: Sequence[str] | None = None, standout: float | None = None) -> Answerability:
    """Answerable unless the signals say the docs do not cover the question; no shown sentence at all: not.
    `excerpts`: the shown excerpts' texts (see signals); `standout`: the index's for the question (None: not known);
    no `cosines` (no embedder): the lexical rule decides (see rule)."""
    unknown, unshown = _named(question, vocabulary, excerpts)
    values = _values(question, scores, cosines, vocabulary, unknown, unshown, standout if len(cosines) else None)
    if not len(scores):
        return Answerability(False, 1.0, values)
    p = decide(values, *rule(values, bool(len(cosines))))
    return Answerability(p < 0.5, p, values, unknown, unshown if excerpts is not None else ())
