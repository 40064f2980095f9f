"""The extractive fallback: quote the sentences of the shown excerpts that best answer the question."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Iterable, Mapping, Protocol

import numpy as np

from models.protocols import Embedder, Reranker
from rag import tuned
from rag.answering.answerability import Answerability, assess, sentence_cosines
from rag.verification.claim_terms import terms
from rag.verification.claims import split_claims
from rag.answering.overrides import CHANGED, overrides
from rag.answering.quote_features import FEATURES, Candidate, candidates, feature_matrix, tuned_cosines
from rag.retrieval.vocabulary import DocumentFrequencies
from rag.retrieval.spelling import respelled
from rag.citations import CitationLike, Lookup, resolved_texts

QUOTE_LABEL = "Quoted from the docs:"
_LABEL_EDGES = " \t*_>#:`\"'"  # markup and punctuation around a line that only repeats the label
# Weights of quote_features.FEATURES (scores_of rescales them to sum to 1, so a score stays in [0, 1]), fitted.
WEIGHTS = {name: tuned.QUOTE_WEIGHTS[name] for name in FEATURES}
# Below this a sentence is not worth quoting. It bounds the words-and-meaning part of the score (coverage and
# cosine): the rank prior and the number cue only order sentences that are close to the question already.
MIN_SCORE = tuned.MIN_QUOTE_SCORE
# The quote encoder's cosine (quote_features.tuned_cosines) joins the score that orders the quotes with this weight;
# what decides whether a sentence is close enough, and the answerability rule, read the score without it.
QUOTE_TOWER_WEIGHT = tuned.QUOTE_TOWER_WEIGHT
# The order's first GATE_EXEMPT sentences are quoted even below MIN_SCORE once any sentence reaches it (with none,
# nothing is quoted: a decline, as before): the sentences the order (score and quote encoder) puts first are its best
# guess, and the gate on coverage and cosine alone dropped the evidence sentence for 9 of 200 fit misses read by hand.
# Fit packages (3,823 graded questions), first 0, 1, 2, 3 exempt: evidence sentence 0.583, 0.583, 0.586, 0.589;
# declines equal; mean words 98.6 -> 99.3.
GATE_EXEMPT = 3
MAX_OVERLAP = 0.8  # a sentence sharing more of its words with one already chosen adds nothing
OTHER_EXCERPT = tuned.OTHER_EXCERPT  # after the best few, the best sentence of an excerpt none of them came from
# With the cross-encoder (models.reranker): the quote scorer's best RERANK_CANDIDATES sentences are read with the
# question by the reranker, and its logit orders them. Nothing reaching the reranker's answer_logit (chosen in
# training on fit questions kept out of it): the excerpts do not answer, a decline. A sentence QUOTE_MARGIN below
# the best one is not quoted.
RERANK_CANDIDATES = 24
QUOTE_MARGIN = 4.0


@dataclass(frozen=True)
class Quote:
    n: int
    sentence: str
    score: float
    passage: tuple[str, ...] = ()  # what is shown: the sentence with its context (Candidate.passage); () = sentence

    @property
    def shown(self) -> str:
        """The quote's block text without the `> ` prefixes: each line of the passage, every factual sentence or
        item followed by its `[n]` (the verifier judges each one against excerpt n), the block ending with one."""
        return _cite_each("\n".join(self.passage or (self.sentence,)), self.n)


@dataclass(frozen=True)
class QuotedAnswer:
    """A quote-only answer: the labelled `> sentence [n]` blocks, and the numbers they cite in order."""

    text: str
    numbers: tuple[int, ...]
    quotes: tuple[Quote, ...] = ()  # the blocks' quotes, in order: a quote the verifier does not hold is left out


def quoted_answer(quotes: list[Quote]) -> QuotedAnswer | None:
    """The QuotedAnswer of `quotes`, or None when there are none."""
    text, numbers = quoted(quotes)
    return QuotedAnswer(text, numbers, tuple(quotes)) if text else None


def is_own_label(sentence: str) -> bool:
    """Whether `sentence` only repeats the label smoldocs prints above quotes: quoted, it would read as ours."""
    return " ".join(sentence.split()).strip(_LABEL_EDGES).casefold() == QUOTE_LABEL.strip(_LABEL_EDGES).casefold()


class Quoter(Protocol):
    """The quotes of the shown excerpts that best answer `question`, or None when none comes close enough."""

    def __call__(self, question: str, shown: Mapping[int, CitationLike], lookup: Lookup) -> QuotedAnswer | None: ...


Standout = Callable[[str], "float | None"]  # the index's standout for a question (rag.types.IndexReader.standout)


class QuoteFallback:
    """The agent's Quoter: `extractive_answer` bound to an embedder (None: word overlap only), answering only when
    rag.answering.answerability says the shown excerpts answer the question. `vocabulary`: the index's term counts
    (HybridIndex.vocabulary; None: the decision rests on the quote scores alone); `standout`: the index's
    IndexReader.standout (None: the rule without it decides)."""

    def __init__(self, embedder: Embedder | None, vocabulary: DocumentFrequencies | None = None,
                 reranker: Reranker | None = None, standout: Standout | None = None) -> None:
        self.embedder = embedder
        self.vocabulary = vocabulary
        self.reranker = reranker
        self.standout = standout

    def __call__(self, question: str, shown: Mapping[int, CitationLike], lookup: Lookup) -> QuotedAnswer | None:
        question = respelled(question, self.vocabulary)  # as search_docs searched it (rag.retrieval.spelling)
        ranked = rank_sentences(question, shown, lookup, self.embedder)
        if self.reranker is not None:
            return self._reranked(question, ranked, self.reranker)
        if not assess_ranked(question, ranked, self.embedder, self.vocabulary, self.standout).answerable:
            return None
        return quoted_answer(select(ranked, self.embedder is not None, other_excerpt=OTHER_EXCERPT))

    def _answers(self, question: str, ranked: "RankedSentences", logits: np.ndarray, reranker: Reranker) -> bool:
        if DECLINE_BY == "reranker":
            return float(logits.max()) >= reranker.answer_logit
        return assess_ranked(question, ranked, self.embedder, self.vocabulary, self.standout).answerable

    def _reranked(self, question: str, ranked: "RankedSentences", reranker: Reranker) -> QuotedAnswer | None:
        """The cross-encoder decides: nothing scoring ANSWER_LOGIT is a decline; its order picks the quotes."""
        logits = rerank(question, ranked, reranker)
        if not len(logits) or not self._answers(question, ranked, logits, reranker):
            return None
        by_reranker = RankedSentences(ranked.candidates, ranked.features, logits)
        chosen = select(by_reranker, self.embedder is not None, other_excerpt=OTHER_EXCERPT,
                        min_score=float(logits.max()) - QUOTE_MARGIN, close=logits, exempt=0)
        text, numbers = quoted(chosen)
        return QuotedAnswer(text, numbers) if text else None


DECLINE_BY = tuned.DECLINE_BY  # "rule": rag.answering.answerability decides (the reranker only orders); "reranker": its answer_logit


def rerank(question: str, ranked: "RankedSentences", reranker: Reranker, k: int = RERANK_CANDIDATES) -> np.ndarray:
    """The reranker's logit for the quote scorer's best `k` sentences (each under its heading path); -inf for the rest."""
    logits = np.full(len(ranked.candidates), -np.inf, dtype=np.float32)
    if not ranked.candidates:
        return logits
    best = np.argsort(-ranked.order, kind="stable")[:k]
    logits[best] = reranker.score(question, [ranked.candidates[i].in_context for i in best])
    return logits


def assess_ranked(
    question: str, ranked: "RankedSentences", embedder: Embedder | None, vocabulary: DocumentFrequencies | None,
    standout: Standout | None = None,
) -> Answerability:
    """rag.answering.answerability's decision over sentences the quote scorer has already ranked (`standout`: the
    index's, asked only when there are sentences and cosines to decide with)."""
    cosines = sentence_cosines(question, [c.sentence for c in ranked.candidates], embedder)
    value = standout(question) if standout is not None and len(cosines) else None
    return assess(question, ranked.scores.tolist(), cosines, vocabulary, ranked.excerpts, value)


def quoted(quotes: list[Quote]) -> tuple[str, tuple[int, ...]]:
    """The quote-only answer's text (label, then `> sentence [n]` blocks) and the numbers it cites, in order."""
    if not quotes:
        return "", ()
    return f"{QUOTE_LABEL}\n\n" + "\n\n".join(quote_blocks(quotes)), tuple(dict.fromkeys(q.n for q in quotes))


def quote_blocks(quotes: Iterable[Quote]) -> list[str]:
    """Each quote's `> line [n]` block, as the quoted answer shows them (after the label, blank lines between)."""
    return ["\n".join(f"> {line}" for line in q.shown.split("\n")) for q in quotes]


def extractive_answer(
    question: str,
    shown_citations: Mapping[int, CitationLike] | Iterable[CitationLike],
    lookup: Lookup,
    embedder: Embedder | None,
    max_sentences: int = 3,
    min_score: float = MIN_SCORE,
    other_excerpt: int = OTHER_EXCERPT,
) -> tuple[str, tuple[int, ...]]:
    """A quote-only answer (label, then `> sentence [n]` blocks) and the citation numbers it uses, in order."""
    return quoted(best_quotes(question, shown_citations, lookup, embedder, max_sentences, min_score, other_excerpt))


def best_quotes(
    question: str,
    shown_citations: Mapping[int, CitationLike] | Iterable[CitationLike],
    lookup: Lookup,
    embedder: Embedder | None,
    max_sentences: int = 3,
    min_score: float = MIN_SCORE,
    other_excerpt: int = 0,
) -> list[Quote]:
    """The sentences of the shown, resolvable excerpts closest to the question, best first, near-duplicates dropped;
    then, when `max_sentences` were found, up to `other_excerpt` more, each the best of an excerpt not yet quoted."""
    ranked = rank_sentences(question, shown_citations, lookup, embedder)
    return select(ranked, embedder is not None, max_sentences, min_score, other_excerpt)


def select(
    ranked: RankedSentences, with_cosine: bool, max_sentences: int = 3, min_score: float = MIN_SCORE, other_excerpt: int = 0,
    weights: dict[str, float] | None = None, close: np.ndarray | None = None, exempt: int = GATE_EXEMPT,
) -> list[Quote]:
    """best_quotes' choice among sentences already scored (benchmarks.fitting.quote_eval measures it on the same rows);
    `weights`: the ones `ranked` was scored with (None: WEIGHTS); `close`: what must reach `min_score` for a
    sentence to be quoted (None: its coverage and cosine part of the score), except the order's first `exempt`."""
    found, scores, ranking = ranked.candidates, ranked.scores, ranked.order
    if not found or max_sentences <= 0:
        return []
    if close is None:
        close = scores_of(ranked.features, with_cosine, weights, only=("coverage", "cosine"))
    order = sorted(range(len(found)), key=lambda i: (-ranking[i], found[i].n, i))
    # only where some sentence passes: with none, the gate stays a decline
    first = set(order[:exempt]) if exempt and bool((np.asarray(close) >= min_score).any()) else set()
    chosen: list[Quote] = []

    def fits(i: int) -> bool:
        # a sentence already shown, quoted or as another quote's context, adds nothing
        return (i in first or close[i] >= min_score) and not any(
            _overlap(found[i].sentence, part) > MAX_OVERLAP for q in chosen for part in (q.passage or (q.sentence,))
        )

    for i in order:
        if len(chosen) >= max_sentences:
            break
        if fits(i):
            chosen.append(Quote(found[i].n, found[i].sentence, float(scores[i]), found[i].passage))
    if len(chosen) < max_sentences:
        return overrides_first(chosen, ranked)
    for _ in range(other_excerpt):
        quoted = {q.n for q in chosen}
        extra = next((i for i in order if found[i].n not in quoted and fits(i)), None)
        if extra is None:
            break
        chosen.append(Quote(found[extra].n, found[extra].sentence, float(scores[extra]), found[extra].passage))
    return overrides_first(chosen, ranked)


def overrides_first(chosen: list[Quote], ranked: RankedSentences) -> list[Quote]:
    """`chosen` with a sentence that overrides a quote (rag.answering.overrides) right before it, taken from the
    candidates when no quote holds it yet: "Compression is enabled by default" never leads the answer while a shown
    excerpt says "Since version 3.0, compression is disabled by default"."""
    found, scores = ranked.candidates, ranked.scores
    changing = [i for i, c in enumerate(found) if CHANGED.search(c.sentence)]
    out: list[Quote] = []
    rest = list(chosen)
    while changing and rest:
        quote = rest.pop(0)
        over = [i for i in changing if overrides(found[i].sentence, quote.sentence)]
        if over and not any(_holds(q, found[i].sentence) for q in (*out, quote) for i in over):
            best = max(over, key=lambda i: (scores[i], -i))
            moved = next((q for q in rest if _holds(q, found[best].sentence)), None)
            if moved is not None:
                rest.remove(moved)
            out.append(moved or Quote(found[best].n, found[best].sentence, float(scores[best]), found[best].passage))
        out.append(quote)
    return out + rest


def _holds(quote: Quote, sentence: str) -> bool:
    """Whether `quote` shows `sentence`, as the quoted sentence or as its context."""
    return any(sentence in part for part in (quote.passage or (quote.sentence,)))


@dataclass(frozen=True)
class RankedSentences:
    """Every candidate sentence with its features and score, in excerpt order (not sorted)."""

    candidates: list[Candidate]
    features: np.ndarray  # one row per candidate, columns FEATURES
    scores: np.ndarray
    tuned: np.ndarray | None = None  # each candidate's quote-encoder cosine (quote_features.tuned_cosines); None: none
    excerpts: tuple[str, ...] | None = None  # the shown, resolvable excerpts' texts (the answerability rule reads them)

    @property
    def order(self) -> np.ndarray:
        """What orders the quotes: the score, plus QUOTE_TOWER_WEIGHT times the quote encoder's cosine."""
        return self.scores if self.tuned is None else self.scores + np.float32(QUOTE_TOWER_WEIGHT) * self.tuned


def rank_sentences(
    question: str, shown_citations: Mapping[int, CitationLike] | Iterable[CitationLike], lookup: Lookup,
    embedder: Embedder | None,
) -> RankedSentences:
    """The quote scorer's view of the shown excerpts: each sentence's features and weighted score."""
    citations = list(shown_citations.values() if isinstance(shown_citations, Mapping) else shown_citations)
    found = [c for c in candidates(citations, lookup) if not is_own_label(c.sentence)]
    features = feature_matrix(question, found, embedder)
    return RankedSentences(found, features, scores_of(features, embedder is not None),
                           tuned_cosines(question, found, embedder), resolved_texts(citations, lookup))


def scores_of(
    features: np.ndarray, with_cosine: bool, weights: dict[str, float] | None = None, only: tuple[str, ...] = FEATURES
) -> np.ndarray:
    """The weighted sum of each row; without an embedder the other weights are scaled up to sum to 1 again.

    `only` keeps those features' terms of that sum (the same scale), for the part of a score they make up."""
    w = np.array([(weights or WEIGHTS)[name] for name in FEATURES], dtype=np.float32)
    if not with_cosine:
        w[FEATURES.index("cosine")] = 0.0
    w = w / w.sum()
    w[[i for i, name in enumerate(FEATURES) if name not in only]] = 0.0
    return features @ w if len(features) else np.zeros(0, dtype=np.float32)


def _cite_each(text: str, n: int) -> str:
    """`text` with ` [n]` after every factual sentence and item, and at its end."""
    marker = f" [{n}]"
    ends = sorted({c.end for c in split_claims(text, keep_markers=True) if c.factual})
    out, last = [], 0
    for end in ends:
        out.append(text[last:end] + marker)
        last = end
    out.append(text[last:])
    cited = "".join(out).rstrip()
    return cited if cited.endswith(marker) else cited + marker


def _overlap(a: str, b: str) -> float:
    wa, wb = terms(a).words, terms(b).words
    return len(wa & wb) / min(len(wa), len(wb)) if wa and wb else float(a == b)
