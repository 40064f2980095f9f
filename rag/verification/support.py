"""How well one chunk supports one claim: overlap and MiniLM cosine with its best window of two sentences.

The score decides between supported, weak and unsupported; then rag.verification.contradictions pushes the verdict down for what
the window contradicts (unsupported) or leaves unstated (at most weak).
"""

from __future__ import annotations

import re
import threading
from collections import OrderedDict
from dataclasses import dataclass, replace
from functools import lru_cache
from typing import NamedTuple, Sequence

import numpy as np

from models.protocols import Embedder
from rag.verification.claim_terms import Terms, coverage, terms
from rag.verification.claims import split_claims
from rag.verification.contradictions import contradiction, unstated
from rag.verification.markup import plain
from rag.types import Chunk
from rag.verification.verdicts import Verdict

SUPPORTED, WEAK, UNSUPPORTED = Verdict.SUPPORTED, Verdict.WEAK, Verdict.UNSUPPORTED

_FENCED = re.compile(r"^\s*(?:```|~~~)[^\n]*\n(.*?)^\s*(?:```|~~~)", re.MULTILINE | re.DOTALL)
_MAX_CANDIDATE_CHARS = 500
WINDOW = 2  # sentences per window: a claim often joins what two adjacent sentences say
COPIED_MIN_WORDS = 3  # a claim all of whose words (3 or more) one sentence states is copied from it
# A window sharing less than this share of the claim's content words is no evidence for it, however close MiniLM
# puts them: its cosine counts as 0 and it is never embedded. Most windows of a cited chunk are about something else.
MIN_OVERLAP = 0.25
SUBJECT_MAX_CHARS = 80  # a longer first line is a sentence of the chunk, not what it is about
MAX_EMBEDDED = 2  # windows embedded per (claim, chunk): the ones sharing most words; the rest count 0


@dataclass(frozen=True)
class Params:
    """Weights of the support score and the two verdict thresholds (fitted: rag.tuned.VERIFIER_FIT)."""

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
    evidence: str  # the best-matching window (one or two sentences) of the chunk
    reason: str = ""  # why the verdict was pushed down, if it was


@dataclass(frozen=True)
class Evidence:
    """Everything needed to judge one (claim, chunk) pair under any Params; computed once, judged cheaply."""

    claim: Terms
    chunk: Terms
    sentences: tuple[str, ...]  # the candidate windows (chunk_windows)
    sentence_terms: tuple[Terms, ...]
    cos: np.ndarray | None  # one per window; None without an embedder
    coverage: np.ndarray  # one per window
    chunk_coverage: float
    claim_text: str = ""
    contexts: tuple[str, ...] = ()  # per window: it and one sentence either side, where contradictions are looked for
    copied: str = ""  # the sentence of the chunk that states every content word, number and cue of the claim
    subject: str = ""  # what the chunk is about: its heading path and a short first line ("-E", "TIMEOUT")


@lru_cache(maxsize=1024)
def chunk_sentences(text: str) -> tuple[str, ...]:
    """The sentences, list items, headings and code blocks of a chunk, markup removed."""
    return tuple(dict.fromkeys(s for s, _, _ in _sentence_spans(text)))


class Window(NamedTuple):
    """Adjacent sentences of a chunk a claim is matched against, and the context its names and cues are checked in."""

    text: str
    context: str  # the window and one sentence either side


@lru_cache(maxsize=1024)
def chunk_windows(text: str) -> tuple[Window, ...]:
    """Each run of WINDOW adjacent sentences of the chunk (all of them if fewer), as written, markup off.

    Measured on the hand-labelled set: runs of two alone recognise more paraphrases at the same precision than
    single sentences, or singles and pairs together, and embed about as many texts as single sentences would.
    """
    spans = _sentence_spans(text)
    plain_text = plain(text)
    located = [i for i, (_, _, end) in enumerate(spans) if end >= 0]

    def between(first: int, last: int) -> str:
        """The text from one sentence to another, spaces tidied, paragraph breaks kept (they end a clause)."""
        first, last = located[max(first, 0)], located[min(last, len(located) - 1)]
        paragraphs = re.split(r"\n\s*\n", plain_text[spans[first][1] : spans[last][2]])
        return "\n\n".join(" ".join(p.split()) for p in paragraphs if p.strip())

    n = min(WINDOW, len(located))
    out: dict[str, Window] = {}
    for k in range(len(located) - n + 1) if located else ():
        window = spans[located[k]][0] if n == 1 else between(k, k + n - 1)
        out.setdefault(window, Window(window, between(k - 1, k + n)))
    for sentence, _, end in spans:
        if end < 0:  # a code block stands alone
            out.setdefault(sentence, Window(sentence, sentence))
    return tuple(out.values())


def _sentence_spans(text: str) -> list[tuple[str, int, int]]:
    """(sentence, start, end) in plain(text); code blocks come last, with no span (-1, -1): they join no run."""
    text = plain(text)
    out = [(c.text, c.start, c.end) for c in split_claims(text, keep_markers=True) if c.text.strip()]
    for block in _FENCED.findall(text):
        if block.strip():
            out.append((block.strip()[:_MAX_CANDIDATE_CHARS], -1, -1))
    return out


def gather(
    pairs: Sequence[tuple[str, Chunk]], embedder: Embedder | None, params: Params | None = None
) -> list[Evidence]:
    """Evidence for each (claim text, chunk) pair; all texts are embedded in one batch call.

    Only the MAX_EMBEDDED windows sharing most of the claim's words (and at least MIN_OVERLAP of them) are
    embedded; the others' cosine counts as 0. With `params`, a window whose score could not reach `weak` even at
    cosine 1 is not embedded either, nor is anything for a claim its words already decide (copied from one sentence,
    or contradicted): that changes no verdict.
    """
    lexical = []
    for claim, chunk in pairs:
        claim_terms = terms(claim)
        windows = chunk_windows(chunk.text)
        sentences = tuple(w.text for w in windows)
        sentence_terms = tuple(terms(s) for s in sentences)
        overlap = np.array([coverage(claim_terms, t) for t in sentence_terms], dtype=np.float32)
        chunk_terms = terms(" ".join((*chunk.heading_path, chunk.text)))
        whole = coverage(claim_terms, chunk_terms)
        copied = ""
        if len(claim_terms.words) >= COPIED_MIN_WORDS:
            copied = next((s for s in chunk_sentences(chunk.text) if coverage(claim_terms, terms(s)) >= 1.0), "")
        ev = Evidence(claim_terms, chunk_terms, sentences, sentence_terms, None, overlap, whole, claim,
                      tuple(w.context for w in windows), copied, chunk_subject(chunk))
        keep = overlap >= MIN_OVERLAP
        if MAX_EMBEDDED and keep.sum() > MAX_EMBEDDED:
            keep &= overlap >= np.sort(overlap[keep])[-MAX_EMBEDDED]
        if params is not None:
            keep &= _could_reach_weak(ev, params)
            if keep.any() and (copied or _contradicted(ev)):
                keep[:] = False  # the words decide the verdict already: MiniLM could not change it
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


def chunk_subject(chunk: Chunk) -> str:
    """The chunk's heading path and its first line when that line is short: the term a definition list defines
    ("-E", "keep_warnings"), a title ("TIMEOUT"), a release ("Changes with nginx 1.19.7"). Names and numbers there
    are stated for every sentence of the chunk."""
    first = plain(chunk.text).strip().split("\n", 1)[0].strip()
    return "\n\n".join([*chunk.heading_path, *([first] if len(first) <= SUBJECT_MAX_CHARS else [])])


def _contradicted(ev: Evidence) -> bool:
    anchor = _anchor(ev)
    return bool(contradiction(ev.claim_text, ev.claim, ev.sentences[anchor], ev.contexts[anchor], ev.subject))


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
    """Score the best-matching window, then push the verdict down for contradicted or unstated specifics."""
    if not ev.sentences:
        return Support(UNSUPPORTED, 0.0, "", "the cited text is empty")
    w_cos = params.w_cos if ev.cos is not None else 0.0
    match = ev.coverage * params.w_sentence
    if ev.cos is not None:
        match = match + ev.cos * w_cos
    total = w_cos + params.w_sentence + params.w_chunk
    best = int(np.argmax(match))
    score = float((match[best] + params.w_chunk * ev.chunk_coverage) / total) if total else 0.0
    window = ev.sentences[best]
    # Contradictions are looked for around the window that shares most of the claim's words and numbers: the
    # one about the same thing, even when MiniLM prefers a neighbour ("124 ... 255", not "0 if it succeeds").
    anchor = _anchor(ev)
    reason = contradiction(ev.claim_text, ev.claim, ev.sentences[anchor], ev.contexts[anchor], ev.subject)
    if reason:
        return Support(UNSUPPORTED, score, window, reason)
    if ev.copied:  # MiniLM scores a copied sentence lower against a window of two; the words say enough
        score, window = 1.0, ev.copied
    verdict = SUPPORTED if score >= params.supported else WEAK if score >= params.weak else UNSUPPORTED
    stated = ev.sentences[anchor]
    reason = _not_a_statement(ev.claim_text, ev.claim) or unstated(ev.claim_text, ev.claim, stated, terms(stated),
                                                                  ev.chunk, ev.subject)
    if reason and verdict == SUPPORTED:
        verdict = WEAK
    return Support(verdict, score, window, reason)


def _anchor(ev: Evidence) -> int:
    """The window sharing most of the claim's words and numbers: words alone decide it, so contradictions are known
    before anything is embedded. Of equals, the first that negates as often as the claim (NO_COLOR's "will not use
    color" and FORCE_COLOR's "will use color" share every word), else the first."""
    best = np.flatnonzero(ev.coverage == ev.coverage.max())
    same = [i for i in best if ev.sentence_terms[i].negations % 2 == ev.claim.negations % 2]
    return int(same[0] if same else best[0])


def _not_a_statement(text: str, claim: Terms) -> str:
    """A question or a bare number asserts nothing the cited text could confirm."""
    if text.rstrip(" *_`\"')").endswith("?"):
        return "the claim is a question, not a statement"
    if not claim.words and all(re.fullmatch(r"[\d.,]+", i) for i in claim.identifiers):
        if claim.numbers:
            return f"the claim is only a number ({', '.join(claim.numbers)}): it says nothing to check"
        return "the claim has no words to check"
    return ""
