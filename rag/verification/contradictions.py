"""What the cited text contradicts in a claim, or leaves unstated: numbers, exact names, quantifiers, negations.

Judged against the window of two sentences that shares most of the claim's words, and the sentence either side
of it. Most checks line a clause of the claim up with the clause of the text that says nearly the same thing, so
"`stash@{1}` is the latest" is judged where the text says which stash is the latest. A contradiction makes the
claim `unsupported`; something merely unstated keeps it from `supported`. Every reason names what each side says.
"""

from __future__ import annotations

import difflib
import re
from collections import Counter
from functools import lru_cache
from typing import Iterable

from rag.verification.claim_terms import ANTONYM, CUE_PATTERN, Terms, terms
from rag.verification.specifics import Specific, contains, matchable, specifics

_CLAUSE_BREAK = re.compile(
    r",(?!\d{3}\b)|[;:\u2014\u2013]|\s-\s|(?<=[.!?])\s+|\n\s*\n|"
    r"\b(?:but|and|or|so|because|while|which|whereas|although|though|since|then|however)\b|"
    r"(?=\b(?:instead of|rather than|unless|except)\b)"
)
_CODE = re.compile(r"`[^`\n]*`")
# A claim's cue group, and the groups of the cited clause that contradict it (unless that clause has the claim's
# group too): "any user" against "only the current user", "always closed" against "closed unless ...".
CONTRADICTING_CUES: dict[str, frozenset[str]] = {
    "all": frozenset({"only", "unless"}),
    "always": frozenset({"only", "unless", "default", "if"}),
    "only": frozenset({"all", "always"}),
    "unless": frozenset({"always"}),
    "default": frozenset({"always"}),
    "must": frozenset({"may"}),
}
# An obligation or a "whatever happens" needs saying outright (by one of these groups).
_MUST_BE_STATED = {"must": frozenset({"must"}), "always": frozenset({"always", "all"})}
_DIGIT_ONE = re.compile(r"(?<![\w.])1(?!\w|[.,]\d)")
_ALIGNED = 0.5  # a claim clause and a window clause sharing this much (Jaccard) say the same thing
_NEGATION_ALIGNED = 0.6  # ... and to call one the negation of the other, this much
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+|\n\s*\n")
# A release named relative to now ("the next major version", "a future release"): a plan or a history the text
# must state, like a version number.
_RELEASE = re.compile(
    r"\b(?:next|future|upcoming|coming|later|subsequent|previous|earlier|prior|newer|older)\s+"
    r"(?:(?:major|minor|stable|feature)\s+)?(?:versions?|releases?)\b",
    re.IGNORECASE,
)
_VERSION_WORD = re.compile(r"\b(?:versions?|releases?)\b", re.IGNORECASE)
# "also X" adds to a set that "X (and nothing else)" closes.
_ADDING = re.compile(r"\b(?:also|as well as|in addition to|additionally)\b", re.IGNORECASE)
_CLOSED = re.compile(r"\b(?:nothing else|nothing more|and no other)\b", re.IGNORECASE)


def contradiction(claim_text: str, claim: Terms, window_text: str, context_text: str) -> str:
    """Why the window (for numbers and names) or its context (for where they sit, negations and cues) contradicts
    the claim, or ""."""
    context = terms(context_text)
    return (
        _number_changed(claim_text, claim, terms(window_text))
        or _name_changed(claim_text, window_text)
        or _swapped(claim_text, claim, context_text)
        or _cue_changed(claim, context_text)
        or _negation(claim_text, claim, context_text, context)
        or _added_to_closed(claim_text, context_text, context)
    )


def unstated(claim_text: str, claim: Terms, window_text: str, window: Terms) -> str:
    """Numbers and exact names of the claim that the window does not state: no `supported` without them."""
    numbers = Counter(claim.numbers) - Counter(window.numbers)
    del numbers["1"]  # "one vector" may well be "a vector": only a different number contradicts it
    text = matchable(window_text)
    names = {s.text for s in specifics(claim_text) if not contains(text, s.text)}
    names |= {i for i in claim.identifiers if i not in window.identifiers and i not in text}
    missing = sorted(numbers) + sorted(names)
    release = _RELEASE.search(claim_text)
    if release and not _VERSION_WORD.search(window_text):
        missing.append(repr(release.group().lower()))
    if missing:
        return f"the best-matching text does not state {_join(missing)}"
    stated = {c.group for c in window.cues}
    strong = [c.word for c in claim.cues if c.group in _MUST_BE_STATED and not _MUST_BE_STATED[c.group] & stated]
    return f"the cited text does not say {strong[0]!r}" if strong else ""


def _added_to_closed(claim_text: str, context_text: str, context: Terms) -> str:
    """The claim adds ("also X") what the text rules out ("... and nothing else"): X is named nowhere near."""
    closed = _CLOSED.search(context_text)
    adding = _ADDING.search(claim_text)
    if not closed or not adding:
        return ""
    added = clauses(claim_text[adding.end() :])
    new = sorted(terms(added[0]).words - context.words) if added else []
    if new:
        return f"the cited text says {closed.group().lower()!r} where the claim adds {' '.join(new)!r}"
    return ""


def _number_changed(claim_text: str, claim: Terms, window: Terms) -> str:
    ours = Counter(claim.numbers) - Counter(window.numbers)
    if not _DIGIT_ONE.search(claim_text):
        del ours["1"]  # "in one call" is no count to contradict "these three parameters" with
    theirs = Counter(window.numbers) - Counter(claim.numbers)
    if ours and theirs:
        return f"the cited text says {_join(theirs)} where the claim says {_join(ours)}"
    return ""


def _name_changed(claim_text: str, window_text: str) -> str:
    """The claim names an option, signal, path... the window does not, where the window names another of its kind.

    "Another" is looked for where the claim's clause sits in the window: the clauses that say the same, or failing
    those, the window's sentence closest to it. A name the window mentions elsewhere is no stand-in.
    """
    window_names = matchable(window_text)
    claim_names = matchable(claim_text)
    parts = clauses(window_text)
    for ours_clause in clauses(claim_text):
        missing = [s for s in specifics(ours_clause) if not contains(window_names, s.text)]
        if not missing:
            continue
        near = _aligned(ours_clause, parts) or [_closest_sentence(ours_clause, window_text)]
        theirs = [s for p in near for s in specifics(p) if not contains(claim_names, s.text)]
        for ours in missing:
            rivals = [s.text for s in theirs if s.kind == ours.kind]
            if rivals:
                closest = max(rivals, key=lambda r: (difflib.SequenceMatcher(None, r, ours.text).ratio(), r))
                return f"the cited text names {ours.kind} {closest!r} where the claim names {ours.text!r}"
    return ""


def _closest_sentence(clause: str, window_text: str) -> str:
    words = terms(clause).words
    return max(_sentences(window_text), key=lambda s: _cover(words, s))


def _sentences(text: str) -> list[str]:
    return [s for s in _SENTENCE_END.split(text) if s.strip()] or [text]


def _sentence_of(clause: str, sentences: list[str]) -> str:
    """The sentence `clause` was cut from (or the one sharing most of its words, when code fences blur the cut)."""
    holding = next((s for s in sentences if clause in s), None)
    return holding or max(sentences, key=lambda s: _cover(terms(clause).words, s))


def _name_words(text: str) -> frozenset[str]:
    return frozenset(w for s in specifics(text) for w in terms(s.text).words)


def _swapped(claim_text: str, claim: Terms, window_text: str) -> str:
    """The window clause that says what a clause of the claim says names another name (or number) in its place.

    "`stash@{1}` is the most recently created stash" against "`stash@{0}` is the most recently created stash,
    `stash@{1}` is the one before it": both names are in the window, but not where the claim puts them.
    """
    parts = clauses(window_text)
    if len(parts) < 2:
        return ""
    for ours_clause in clauses(claim_text):
        named = _things(ours_clause)
        aligned = _aligned(ours_clause, parts) if named else []
        for ours in named:
            if any(_names(p, ours) for p in aligned) or not any(_names(p, ours) for p in parts):
                continue
            rivals = [s for p in aligned for s in _things(p) if _rival(s, ours) and not _names(ours_clause, s)]
            if rivals:
                return f"the cited text says {rivals[0].text!r} where the claim says {ours.text!r}"
    return ""


def _aligned(
    ours: str,
    parts: tuple[str, ...],
    negation: bool = True,
    names: bool = False,
    leave_out: Iterable[str] = (),
    least: float = _ALIGNED,
) -> list[str]:
    """The window clauses that say most nearly what clause `ours` says (ties all kept); none if none is close.

    The words of names are left out of the comparison (they are what _swapped compares) unless `names`; so are
    the words of `leave_out`, as written.
    """
    scored = [(_alignment(ours, p, negation, names, tuple(leave_out)), p) for p in parts]
    best = max((score for score, _ in scored), default=(0.0, 0))
    if best[0] < least or (best[1] < 2 and best[0] < 1.0):
        return []
    return [p for score, p in scored if score == best]


def _rival(theirs: Specific, ours: Specific) -> bool:
    """Whether `theirs` can stand where the claim puts `ours`: a number for a number, a name for a name."""
    return (theirs.kind == "number") == (ours.kind == "number")


def _alignment(
    ours: str, theirs: str, negation: bool = True, names: bool = False, leave_out: tuple[str, ...] = ()
) -> tuple[float, int]:
    """(Jaccard overlap, words shared) of two clauses' content words, as _aligned compares them."""
    a, b = terms(ours), terms(theirs)
    left = {w for word in leave_out for w in terms(word).words}
    if not names:
        left |= _name_words(ours) | _name_words(theirs)
    wa, wb = a.words - left, b.words - left
    if negation:
        wa |= {"\u00ac"} if a.negations % 2 else set()
        wb |= {"\u00ac"} if b.negations % 2 else set()
    union = wa | wb
    return (len(wa & wb) / len(union) if union else 0.0, len(wa & wb))


def _negation(claim_text: str, claim: Terms, window_text: str, window: Terms) -> str:
    """A clause of the claim that says what a window clause says, with a negation added or taken away."""
    parts = clauses(window_text)
    sentences = _sentences(window_text)
    claimed = terms(claim_text).negations % 2
    for ours in clauses(claim_text):
        mine = terms(ours)
        only_names = not mine.words - _name_words(ours)
        if only_names and not mine.negations % 2:
            continue  # a clause that only names something ("--keep-old-files:") states nothing to negate
        aligned = _aligned(ours, parts, negation=False, names=only_names, least=_NEGATION_ALIGNED)
        # The clause and its whole sentence both differ: a list cut into clauses leaves "is not recommended"
        # in the last piece only.
        flips = [p for p in aligned if terms(p).negations % 2 != mine.negations % 2
                 and terms(_sentence_of(p, sentences)).negations % 2 != claimed]  # fmt: skip
        if flips and len(flips) == len(aligned):
            said = " ".join(sorted(terms(ours).words & terms(flips[0]).words)[:4])
            if terms(ours).negations % 2:
                return f"the claim negates what the cited text states ({said})"
            return f"the cited text negates the claim ({said})"
    for ours in clauses(claim_text):
        mine = terms(ours).polar
        for word in sorted(mine - window.polar):
            aligned = _aligned(ours, parts, negation=False, leave_out=ANTONYM[word] | {word})
            swapped = sorted(w for p in aligned for w in ANTONYM[word] & terms(p).polar if w not in claim.polar)
            if swapped:
                return f"the cited text says {swapped[0]!r} where the claim says {word!r}"
    # "but are." against "but are not.": same words, a negation with nothing after it to flip.
    if claim.words == window.words and claim.negations % 2 != window.negations % 2:
        return "the claim and the cited text differ in a negation"
    return ""


def _cue_changed(claim: Terms, window_text: str) -> str:
    """A quantifier or modal cue of the claim that the window's cue on the same words contradicts.

    Each cue governs the few content words after it. Among the window's cues that govern some of the same words,
    the one sharing most of them (then: in the clause most like the claim) decides: "any user" against
    "accessible only to the current user" is a contradiction; "only the refs it advertised" against "all the local
    refs ..., but now only the refs it advertised" is not.
    """
    claim_groups = {c.group for c in claim.cues}
    parts = [(p, terms(p)) for p in clauses(window_text)]
    for ours in claim.cues:
        against = CONTRADICTING_CUES.get(ours.group, frozenset()) - claim_groups
        if not against or not ours.governs:
            continue
        candidates = [
            (len(ours.governs & theirs.governs), _cover(claim.words, part), theirs.group == ours.group, theirs.word)
            for part, t in parts
            for theirs in t.cues
            if (theirs.group in against or theirs.group == ours.group) and ours.governs & theirs.governs
        ]
        if candidates:
            *_, agrees, word = max(candidates)
            if not agrees:
                return f"the cited text says {word!r} where the claim says {ours.word!r}"
    return ""


@lru_cache(maxsize=4096)
def clauses(text: str) -> tuple[str, ...]:
    """`text` cut at punctuation and conjunctions, code spans kept whole; a clause of cues only joins the next."""
    masked = _CODE.sub(lambda m: "x" * len(m.group()), text)
    cuts = [0] + [m.start() for m in _CLAUSE_BREAK.finditer(masked)] + [len(text)]
    pieces = [text[a:b].strip(" ,;:\u2014\u2013\n") for a, b in zip(cuts, cuts[1:])]
    out: list[str] = []
    carry = ""
    for piece in pieces:
        piece = f"{carry} {piece}".strip() if carry else piece
        if piece and not terms(CUE_PATTERN.sub(" ", piece.lower())).words:
            carry = piece
            continue
        carry = ""
        if piece:
            out.append(piece)
    if carry:
        out.append(carry)
    return tuple(out)


def _things(text: str) -> list[Specific]:
    return [*specifics(text), *(Specific(n, "number") for n in dict.fromkeys(terms(text).numbers))]


def _names(text: str, thing: Specific) -> bool:
    if thing.kind == "number":
        return thing.text in terms(text).numbers
    return contains(matchable(text), thing.text)


def _cover(words: frozenset[str], text: str) -> float:
    return len(words & terms(text).words) / len(words) if words else 0.0


def _join(items) -> str:
    return ", ".join(sorted(items))
