"""How well one chunk supports one claim: lexical overlap, MiniLM cosine, and checks on numbers, negations, identifiers."""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass
from functools import lru_cache
from typing import Sequence

import numpy as np

from models.protocols import Embedder
from rag.claims import split_claims
from rag.types import Chunk

SUPPORTED, WEAK, UNSUPPORTED = "supported", "weak", "unsupported"

_STOPWORDS = frozenset(
    """a an the and or but if then else of to in on at by for with from into onto about as is are was were be
    been being am do does did doing have has had having it its this that these those there here their they them
    he she his her we us our you your i me my what which who whom whose when where why how all any both each
    more most other some such only own same so than too very can could should would will shall may might must
    also just not no nor never via per up out over under again once s t don doesn isn aren wasn won can cannot
    use used uses using""".split()
)
_NEGATORS = frozenset("not no never cannot none nothing neither nor nobody nowhere without".split())
_NOT_NEGATION = re.compile(r"\b(?:not only|whether or not|if not|no matter)\b", re.IGNORECASE)
_NUMBER_WORDS = {
    "zero": "0", "two": "2", "three": "3", "four": "4", "five": "5", "six": "6", "seven": "7",
    "eight": "8", "nine": "9", "ten": "10", "eleven": "11", "twelve": "12", "twenty": "20", "hundred": "100",
}  # fmt: skip
_NUMBER = re.compile(r"(?<![A-Za-z_\d.])\d+(?:[.,]\d+)*")
_THOUSANDS = re.compile(r"^\d{1,3}(?:,\d{3})+$")
_TOKEN = re.compile(r"\S+")
_CODE_SPAN = re.compile(r"`([^`\n]+)`")
_FENCED = re.compile(r"^\s*(?:```|~~~)[^\n]*\n(.*?)^\s*(?:```|~~~)", re.MULTILINE | re.DOTALL)
_ABBREVIATIONS = frozenset({"e.g", "i.e", "etc", "vs", "and/or"})
_MAX_CANDIDATE_CHARS = 500


@dataclass(frozen=True)
class Terms:
    """What a sentence commits to: stemmed content words, numbers, identifiers, and how often it negates."""

    words: frozenset[str]
    numbers: tuple[str, ...]  # sorted, with repeats: "2048 or 2048" differs from "2048 or 512"
    identifiers: frozenset[str]
    negations: int  # not, never, no, n't, ...


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

    verdict: str  # supported | weak | unsupported
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
    chunk_text: str  # lowercased, heading included: identifiers are looked up in it


def stem(word: str) -> str:
    """A crude suffix stripper: both sides get the same treatment, so consistency matters, not linguistics."""
    for suffix in ("ingly", "edly", "ies", "ing", "ed", "es", "s", "ly", "e"):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            word = word[: -len(suffix)] + ("y" if suffix == "ies" else "")
            break
    return word


@lru_cache(maxsize=4096)
def terms(text: str) -> Terms:
    """The content words, numbers, identifiers and negation of `text`."""
    lower = text.lower()
    words = re.findall(r"[a-z][a-z0-9]*", lower)
    content = frozenset(stem(w) for w in words if w not in _STOPWORDS and w not in _NUMBER_WORDS and len(w) > 1)
    numbers = [_normalize_number(m.group()) for m in _NUMBER.finditer(text)]
    numbers += [_NUMBER_WORDS[w] for w in words if w in _NUMBER_WORDS]
    cleaned = _NOT_NEGATION.sub(" ", lower).replace("can't", "can not").replace("won't", "will not")
    negations = sum(w in _NEGATORS for w in re.findall(r"[a-z]+", cleaned)) + cleaned.count("n't")
    return Terms(content, tuple(sorted(numbers)), frozenset(identifiers(text)), negations)


def _normalize_number(raw: str) -> str:
    if _THOUSANDS.match(raw):
        return raw.replace(",", "")
    return raw.rstrip(".,")


def identifiers(text: str) -> set[str]:
    """Code-ish tokens (`n_ctx`, `Q4_K_M`, `llama.cpp`, `--model`, `SmolLM2`, `GGUF`), lowercased."""
    found = {span.strip().lower() for span in _CODE_SPAN.findall(text) if span.strip()}
    for token in _TOKEN.findall(_CODE_SPAN.sub(" ", text)):
        t = token.strip(".,;:!?()[]{}\"'*").removesuffix("()")
        if len(t) < 2 or t.lower() in _ABBREVIATIONS:
            continue
        if (
            "_" in t
            or re.search(r"[A-Za-z]\.[A-Za-z]", t)
            or t.startswith("--")
            or re.search(r"[a-z][A-Z]", t)
            or re.match(r"^[A-Za-z]+\d", t)
            or (t.isupper() and sum(c.isalpha() for c in t) >= 2)
        ):
            found.add(t.lower())
    return found


@lru_cache(maxsize=1024)
def chunk_sentences(text: str) -> tuple[str, ...]:
    """The sentences, list items, headings and code blocks of a chunk: what a claim can be matched against."""
    sentences = [c.text for c in split_claims(text) if c.text]
    for block in _FENCED.findall(text):
        if block.strip():
            sentences.append(block.strip()[:_MAX_CANDIDATE_CHARS])
    return tuple(dict.fromkeys(s for s in sentences if s.strip()))


def gather(pairs: Sequence[tuple[str, Chunk]], embedder: Embedder | None) -> list[Evidence]:
    """Evidence for each (claim text, chunk) pair; all texts are embedded in one batch call."""
    sentence_lists = [chunk_sentences(chunk.text) for _, chunk in pairs]
    vectors: dict[str, np.ndarray] = {}
    if embedder is not None and pairs:
        texts = list(dict.fromkeys([claim for claim, _ in pairs] + [s for ss in sentence_lists for s in ss]))
        matrix = embedder.embed(texts)
        vectors = dict(zip(texts, matrix))
    out = []
    for (claim, chunk), sentences in zip(pairs, sentence_lists):
        claim_terms = terms(claim)
        sentence_terms = tuple(terms(s) for s in sentences)
        full_text = " ".join((*chunk.heading_path, chunk.text))
        chunk_terms = terms(full_text)
        coverage = np.array([_coverage(claim_terms, t) for t in sentence_terms], dtype=np.float32)
        cos = None
        if vectors:
            cos = np.array([float(vectors[claim] @ vectors[s]) for s in sentences], dtype=np.float32)
        out.append(
            Evidence(
                claim_terms, chunk_terms, sentences, sentence_terms, cos, coverage,
                _coverage(claim_terms, chunk_terms), full_text.lower(),
            )
        )
    return out


def _coverage(claim: Terms, other: Terms) -> float:
    if not claim.words:
        return 0.0
    return len(claim.words & other.words) / len(claim.words)


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
    reason = _missing(ev.claim, ev.sentence_terms[best], ev.chunk, ev.chunk_text)
    if reason and verdict == SUPPORTED:
        verdict = WEAK
    return Support(verdict, score, sentence, reason)


def _contradiction(claim: Terms, sentence: Terms) -> str:
    """A changed number or a flipped negation against the best-matching sentence."""
    ours = Counter(claim.numbers) - Counter(sentence.numbers)
    theirs = Counter(sentence.numbers) - Counter(claim.numbers)
    if ours and theirs:
        return f"the cited text says {_join(theirs)} where the claim says {_join(ours)}"
    if claim.negations > sentence.negations:
        return "the claim negates what the cited text states"
    if claim.negations < sentence.negations:
        return "the cited text negates the claim"
    return ""


def _missing(claim: Terms, sentence: Terms, chunk: Terms, chunk_text: str) -> str:
    """Numbers the evidence sentence does not state, or identifiers the chunk never mentions."""
    numbers = Counter(claim.numbers) - Counter(sentence.numbers)
    idents = {i for i in claim.identifiers if i not in chunk.identifiers and i not in chunk_text}
    missing = sorted(numbers) + sorted(idents)
    return f"the cited text does not state {_join(missing)}" if missing else ""


def _join(items) -> str:
    return ", ".join(sorted(items))
