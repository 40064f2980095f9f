"""How well one chunk supports one claim: lexical overlap, MiniLM cosine, and checks on numbers, negations, identifiers."""

from __future__ import annotations

import re
import threading
from collections import Counter, OrderedDict
from dataclasses import dataclass, replace
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
_NEGATORS = frozenset("not no never cannot none nothing neither nor nobody nowhere without unable".split())
_NEGATING_PHRASES = re.compile(r"\b(?:rather than|instead of)\b")  # "X rather than Y" says "not Y"
_NOT_NEGATION = re.compile(r"\b(?:whether or not|no matter)\b")
_POLAR_TOKEN = re.compile(r"[a-z][a-z0-9_]*|\d+(?:[.,]\d+)*")
NEAR_COPY = 1.0  # claim and sentence share this much of their words both ways: any change in negations counts
# A negation covers the rest of its clause, so "A, not B" negates B and still supports "A".
_CLAUSE = re.compile(
    r"[,;:()\u2014\u2013]|\s-\s|\b(?:but|and|or|so|because|while|which|whereas|although|though|since|then)\b"
)
_NUMBER_WORDS = {
    "zero": "0", "two": "2", "three": "3", "four": "4", "five": "5", "six": "6", "seven": "7",
    "eight": "8", "nine": "9", "ten": "10", "eleven": "11", "twelve": "12", "twenty": "20", "hundred": "100",
}  # fmt: skip
_NUMBER = re.compile(r"(?<![A-Za-z_\d.])\d+(?:[.,]\d+)*")
# "one" as a count ("one key vector"), not as a pronoun ("the one that", "one of", "one another").
_ONE = re.compile(r"(?<!\bthe )(?<!\bthat )(?<!\bthis )(?<!\bwhich )(?<!\bno )(?<!\bany )(?<!\beach )"
                  r"(?<!\bevery )(?<!\bby )\bone\b(?! of\b)(?! another\b)(?! by one\b)")  # fmt: skip
ANTONYMS: tuple[tuple[str, str], ...] = (
    ("before", "after"), ("first", "last"), ("larger", "smaller"), ("more", "less"), ("more", "fewer"),
    ("higher", "lower"), ("faster", "slower"), ("increase", "decrease"), ("increases", "decreases"),
    ("above", "below"), ("minimum", "maximum"), ("enable", "disable"), ("enabled", "disabled"),
    ("include", "exclude"), ("included", "excluded"), ("input", "output"), ("inside", "outside"),
    ("early", "late"), ("earlier", "later"), ("true", "false"), ("same", "different"), ("prefill", "decode"),
)  # fmt: skip
_ANTONYM: dict[str, set[str]] = {}
for _a, _b in ANTONYMS:
    _ANTONYM.setdefault(_a, set()).add(_b)
    _ANTONYM.setdefault(_b, set()).add(_a)
_THOUSANDS = re.compile(r"^\d{1,3}(?:,\d{3})+$")
_TOKEN = re.compile(r"\S+")
_CODE_SPAN = re.compile(r"`([^`\n]+)`")
_FENCED = re.compile(r"^\s*(?:```|~~~)[^\n]*\n(.*?)^\s*(?:```|~~~)", re.MULTILINE | re.DOTALL)
_ABBREVIATIONS = frozenset({"e.g", "i.e", "etc", "vs", "and/or"})
_MAX_CANDIDATE_CHARS = 500


@dataclass(frozen=True)
class Terms:
    """What a sentence commits to: stemmed content words, numbers, identifiers, and which words it negates."""

    words: frozenset[str]
    numbers: tuple[str, ...]  # sorted, with repeats: "2048 or 2048" differs from "2048 or 512"
    identifiers: frozenset[str]
    negated: frozenset[str]  # content words that occur only under a negation ("not B", "rather than B")
    affirmed: frozenset[str]  # content words that occur only outside any negation
    negations: int
    polar: frozenset[str]  # words of ANTONYMS as written: "before" for "after" is a contradiction too


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
    numbers = [_normalize_number(m.group()) for m in _NUMBER.finditer(text)]
    numbers += [_NUMBER_WORDS[w] for w in words if w in _NUMBER_WORDS]
    numbers += ["1"] * len(_ONE.findall(lower))
    polar = frozenset(w for w in words if w in _ANTONYM)
    return Terms(_content(lower), tuple(sorted(numbers)), frozenset(identifiers(text)), *_polarity(lower), polar)


def _content(lower: str) -> frozenset[str]:
    words = re.findall(r"[a-z][a-z0-9]*", lower)
    return frozenset(stem(w) for w in words if w not in _STOPWORDS and w not in _NUMBER_WORDS and len(w) > 1)


def _polarity(lower: str) -> tuple[frozenset[str], frozenset[str], int]:
    """(words only ever negated, words never negated, number of negations).

    A negation covers the rest of its clause; two in one clause cancel out; one that ends its clause
    ("decoding cannot") covers the words before it.
    """
    text = _NOT_NEGATION.sub(" ", lower).replace("can't", "can not").replace("won't", "will not")
    text = _NEGATING_PHRASES.sub(" not ", re.sub(r"n't\b", " not", text))
    negated: set[str] = set()
    affirmed: set[str] = set()
    count = 0
    for clause in _CLAUSE.split(text):
        marked: list[tuple[str, bool]] = []
        under, since_negation = False, 0
        for token in _POLAR_TOKEN.findall(clause):
            if token in _NEGATORS:
                under, since_negation, count = not under, 0, count + 1
            elif token[0].isdigit():
                marked.append((_normalize_number(token), under))
                since_negation += 1
            elif token not in _STOPWORDS and token not in _NUMBER_WORDS and len(token) > 1:
                marked.append((stem(token), under))
                since_negation += 1
        if under and since_negation == 0:
            marked = [(word, True) for word, _ in marked]
        for word, is_negated in marked:
            (negated if is_negated else affirmed).add(word)
    return frozenset(negated - affirmed), frozenset(affirmed - negated), count


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
        coverage = np.array([_coverage(claim_terms, t) for t in sentence_terms], dtype=np.float32)
        chunk_terms = terms(" ".join((*chunk.heading_path, chunk.text)))
        ev = Evidence(claim_terms, chunk_terms, sentences, sentence_terms, None, coverage, _coverage(claim_terms, chunk_terms))
        keep = np.ones(len(sentences), dtype=bool) if params is None else _could_reach_weak(ev, params)
        lexical.append((claim, ev, keep))
    if embedder is None or not pairs:
        return [ev for _, ev, _ in lexical]
    wanted = [t for claim, ev, keep in lexical if keep.any() for t in (claim, *np.array(ev.sentences)[keep])]
    vectors = _embed_once(wanted, embedder)
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


def _embed_once(texts: list[str], embedder: Embedder) -> dict[str, np.ndarray]:
    """Vectors of `texts`, embedding the ones not seen recently in a single batch call."""
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
        swapped = sorted(w for w in _ANTONYM[word] & sentence.polar if w not in claim.polar)
        if swapped:
            return f"the cited text says {swapped[0]!r} where the claim says {word!r}"
    near_copy = min(_coverage(claim, sentence), _coverage(sentence, claim)) >= NEAR_COPY
    if near_copy and claim.negations % 2 != sentence.negations % 2:
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
