"""How well one chunk supports one claim: word overlap and MiniLM cosine with its best sentence, then specifics."""

from __future__ import annotations

import re
import threading
from collections import Counter, OrderedDict
from dataclasses import dataclass, replace
from functools import lru_cache
from typing import Sequence

import numpy as np

from models.protocols import Embedder
from rag.claim_terms import ANTONYM, Terms, coverage, terms
from rag.claims import split_claims
from rag.types import Chunk
from rag.verdicts import Verdict

SUPPORTED, WEAK, UNSUPPORTED = Verdict.SUPPORTED, Verdict.WEAK, Verdict.UNSUPPORTED

_FENCED = re.compile(r"^\s*(?:```|~~~)[^\n]*\n(.*?)^\s*(?:```|~~~)", re.MULTILINE | re.DOTALL)
_MAX_CANDIDATE_CHARS = 500


@dataclass(frozen=True)
class Params:
    """Weights of the support score and the two verdict thresholds (fitted by `python -m rag.calibrate fit`)."""

    w_cos: float  # cosine between claim and sentence
    w_sentence: float  # share of the claim's content words found in the sentence
    w_chunk: float  # share found anywhere in the chunk (heading included)
    supported: float  # score at or above: supported
    weak: float  # score at or above: weak; below: unsupported


@dataclass(frozen=True)
class Support:
    """The verdict of one chunk on one claim, with its evidence."""

    verdict: Verdict  # supported | weak | unsupported
    score: float
    evidence: str  # the best-matching sentence of the chunk
    reason: str = ""  # why the verdict was pushed down, if it was


@dataclass(frozen=True)
class Evidence:
    """Everything needed to judge one (claim, chunk) pair under any Params; computed once, judged cheaply."""

    claim: Terms
    chunk: Terms
    sentences: tuple[str, ...]
    sentence_terms: tuple[Terms, ...]
    cos: np.ndarray | None  # one per sentence; None without an embedder
    coverage: np.ndarray  # one per sentence
    chunk_coverage: float


@lru_cache(maxsize=1024)
def chunk_sentences(text: str) -> tuple[str, ...]:
    """The sentences, list items, headings and code blocks of a chunk: what a claim can be matched against."""
    sentences = [c.text for c in split_claims(text, keep_markers=True) if c.text]
    for block in _FENCED.findall(text):
        if block.strip():
            sentences.append(block.strip()[:_MAX_CANDIDATE_CHARS])
    return tuple(dict.fromkeys(s for s in sentences if s.strip()))


def gather(
    pairs: Sequence[tuple[str, Chunk]], embedder: Embedder | None, params: Params | None = None
) -> list[Evidence]:
    """Evidence for each (claim text, chunk) pair; all texts are embedded in one batch call.

    With `params`, a sentence whose score could not reach `weak` even at cosine 1 is not embedded (its cosine
    counts as 0): verdicts stay exactly the same, and most sentences of a cited chunk are skipped.
    """
    lexical = []
    for claim, chunk in pairs:
        claim_terms = terms(claim)
        sentences = chunk_sentences(chunk.text)
        sentence_terms = tuple(terms(s) for s in sentences)
        overlap = np.array([coverage(claim_terms, t) for t in sentence_terms], dtype=np.float32)
        chunk_terms = terms(" ".join((*chunk.heading_path, chunk.text)))
        whole = coverage(claim_terms, chunk_terms)
        ev = Evidence(claim_terms, chunk_terms, sentences, sentence_terms, None, overlap, whole)
        keep = np.ones(len(sentences), dtype=bool) if params is None else _could_reach_weak(ev, params)
        lexical.append((claim, ev, keep))
    if embedder is None or not pairs:
        return [ev for _, ev, _ in lexical]
    wanted = [t for claim, ev, keep in lexical if keep.any() for t in (claim, *np.array(ev.sentences)[keep])]
    vectors = embed_cached(wanted, embedder)
    out = []
    for claim, ev, keep in lexical:
        cos = np.zeros(len(ev.sentences), dtype=np.float32)
        for i in np.flatnonzero(keep):
            cos[i] = float(vectors[claim] @ vectors[ev.sentences[i]])
        out.append(replace(ev, cos=cos))
    return out


def _could_reach_weak(ev: Evidence, params: Params) -> np.ndarray:
    total = params.w_cos + params.w_sentence + params.w_chunk
    best_case = params.w_cos + params.w_sentence * ev.coverage + params.w_chunk * ev.chunk_coverage
    return best_case >= params.weak * total - 1e-6


_VECTORS: OrderedDict[tuple[str, str], np.ndarray] = OrderedDict()
_VECTORS_LOCK = threading.Lock()
_VECTORS_MAX = 8192  # sentences of recently cited chunks come back turn after turn


def embed_cached(texts: list[str], embedder: Embedder) -> dict[str, np.ndarray]:
    """Vectors of `texts`, embedding the ones not seen recently (per embedder model) in a single batch call."""
    unique = list(dict.fromkeys(texts))
    with _VECTORS_LOCK:
        missing = [t for t in unique if (embedder.model_id, t) not in _VECTORS]
    fresh = dict(zip(missing, embedder.embed(missing))) if missing else {}
    with _VECTORS_LOCK:
        for text, row in fresh.items():
            _VECTORS[(embedder.model_id, text)] = row
        out = {t: fresh[t] if t in fresh else _VECTORS[(embedder.model_id, t)] for t in unique}
        for text in unique:
            _VECTORS.move_to_end((embedder.model_id, text))
        while len(_VECTORS) > _VECTORS_MAX:
            _VECTORS.popitem(last=False)
    return out


def judge(ev: Evidence, params: Params) -> Support:
    """Score the best-matching sentence, then push the verdict down for contradicted or missing specifics."""
    if not ev.sentences:
        return Support(UNSUPPORTED, 0.0, "", "the cited text is empty")
    w_cos = params.w_cos if ev.cos is not None else 0.0
    match = ev.coverage * params.w_sentence
    if ev.cos is not None:
        match = match + ev.cos * w_cos
    best = int(np.argmax(match))
    total = w_cos + params.w_sentence + params.w_chunk
    score = float((match[best] + params.w_chunk * ev.chunk_coverage) / total) if total else 0.0
    verdict = SUPPORTED if score >= params.supported else WEAK if score >= params.weak else UNSUPPORTED
    sentence = ev.sentences[best]
    reason = _contradiction(ev.claim, ev.sentence_terms[best])
    if reason:
        return Support(UNSUPPORTED, score, sentence, reason)
    reason = _missing(ev.claim, ev.sentence_terms[best], sentence.lower())
    if reason and verdict == SUPPORTED:
        verdict = WEAK
    return Support(verdict, score, sentence, reason)


def _contradiction(claim: Terms, sentence: Terms) -> str:
    """A changed number or a flipped negation against the best-matching sentence."""
    ours = Counter(claim.numbers) - Counter(sentence.numbers)
    theirs = Counter(sentence.numbers) - Counter(claim.numbers)
    if ours and theirs:
        return f"the cited text says {_join(theirs)} where the claim says {_join(ours)}"
    if claim.negated & sentence.affirmed:
        return f"the claim negates what the cited text states ({_join(claim.negated & sentence.affirmed)})"
    if claim.affirmed & sentence.negated:
        return f"the cited text negates the claim ({_join(claim.affirmed & sentence.negated)})"
    for word in sorted(claim.polar - sentence.polar):
        swapped = sorted(w for w in ANTONYM[word] & sentence.polar if w not in claim.polar)
        if swapped:
            return f"the cited text says {swapped[0]!r} where the claim says {word!r}"
    # "but are." against "but are not.": same words, a negation with nothing after it to flip.
    if claim.words == sentence.words and claim.negations % 2 != sentence.negations % 2:
        return "the claim and the cited text differ in a negation"
    return ""


def _missing(claim: Terms, sentence: Terms, sentence_text: str) -> str:
    """Numbers or identifiers of the claim that the evidence sentence does not state: no `supported` without them."""
    numbers = Counter(claim.numbers) - Counter(sentence.numbers)
    del numbers["1"]  # "one vector" may well be "a vector": only a different number contradicts it
    idents = {i for i in claim.identifiers if i not in sentence.identifiers and i not in sentence_text}
    missing = sorted(numbers) + sorted(idents)
    return f"the best-matching sentence does not state {_join(missing)}" if missing else ""


def _join(items) -> str:
    return ", ".join(sorted(items))
