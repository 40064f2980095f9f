"""What the cited text contradicts in a claim, or leaves unstated: numbers, exact names, quantifiers, negations.

Judged against the window of two sentences that shares most of the claim's words, and the sentence either side
of it. Most checks line a clause of the claim up with the clause of the text that says nearly the same thing, so
"`stash@{1}` is the latest" is judged where the text says which stash is the latest. A contradiction makes the
claim `unsupported`; something merely unstated keeps it from `supported`. Every reason names what each side says.
"""

from __future__ import annotations

import difflib
import itertools
import re
from collections import Counter
from functools import lru_cache
from typing import Iterable

from rag.verification.claim_terms import ANTONYM, CUE_PATTERN, Terms, jaccard, terms
from rag.verification.markup import plain
from rag.verification.specifics import Specific, contains, matchable, specifics
from rag.text import letter_runs, snowball, split_sentences

_CLAUSE_BREAK = re.compile(
    r",(?!\d{3}\b)|[;:\u2014\u2013]|\s-\s|(?<=[.!?])\s+|\n\s*\n|"
    r"\b(?:but|and|or|so|because|while|which|whereas|although|though|since|then|however)\b|"
    r"(?=\b(?:instead of|rather than|unless|except)\b)"
)
_CODE = re.compile(r"`[^`\n]*`")
_CLAUSE_EDGE = " ,;:\u2014\u2013\n"
# A claim's cue group, and the groups of the cited clause that contradict it (unless that clause has the claim's
# group too): "any user" against "only the current user", "always closed" against "closed unless ...".
CONTRADICTING_CUES: dict[str, frozenset[str]] = {
    "all": frozenset({"only", "unless"}),
    "always": frozenset({"only", "unless", "default", "if"}),
    "only": frozenset({"all", "always"}),
    "unless": frozenset({"always"}),
    "default": frozenset({"always"}),
    "must": frozenset({"may"}),
    "either": frozenset({"both"}),  # "if either A or B" widens "if both A and B"
}
# An obligation or a "whatever happens" needs saying outright (by one of these groups).
_MUST_BE_STATED = {"must": frozenset({"must"}), "always": frozenset({"always", "all"})}
_DIGIT_ONE = re.compile(r"(?<![\w.])1(?!\w|[.,]\d)")
_ALIGNED = 0.5  # a claim clause and a window clause sharing this much (Jaccard) say the same thing
_NEGATION_ALIGNED = 0.6  # ... and to call one the negation of the other, this much
# A word negated on one side and stated on the other: the clauses holding it share this many words (it included)
# and this much (Jaccard).
_OBJECT_NEGATED = re.compile(r"\b([a-z]+) (?:no|nothing|none)\b")  # "needs no X" is "does not need X"
_HEAD_SHARED, _HEAD_ALIGNED = 2, 0.4  # 0.3 on claims_unseen.jsonl flagged a held-back paraphrase
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
# A superlative picks one of many ("the oldest connections first"): the text must say which.
_RANKING = {"oldest": {"oldest", "earliest"}, "newest": {"newest", "latest", "recent"},
            "minimum": {"minimum", "min", "least"}, "maximum": {"maximum", "max", "most"}}
# A quantity in words: "one hour", "at most one" must be stated like "60 minutes" would be (a bare "one" need not).
_ONE_UNIT = re.compile(r"\bone (?:millisecond|second|minute|hour|day|week|month|year|byte|kilobyte|megabyte|gigabyte|"
                       r"line|page|cell|character|column|row)s?\b|\b(?:at most|at least|exactly|no more than) one\b",
                       re.IGNORECASE)
# Effects a claim may invent on top of what the text says: a warning, a log line, a deletion, a prompt. Each must
# be in the cited chunk (the word or one of its equivalents, stemmed) for `supported`.
EFFECTS = {snowball(w): {snowball(s) for s in same} for w, *same in (
    ("warn", "warn", "warning"), ("warning", "warn", "warning"), ("log", "log"), ("delete", "delete", "remove"),
    ("hide", "hide", "hidden"), ("prompt", "prompt", "ask"), ("retry", "retry", "again"), ("crash", "crash"),
    ("abort", "abort"), ("compress", "compress"), ("encrypt", "encrypt"))}
# Words that tie two terms in one direction: "A over B", "A then B", "A until B", "A instead of B".
_PIVOT = re.compile(
    r"\b(?:(?:takes?|took)\s+precedence\s+over|(?:(?:is|are)\s+)?preferred\s+over|over|then|until|instead of|"
    r"rather than|in favou?r of|overrides?|before|after)\b"
)
_PIVOT_REACH = 3  # terms either side of a pivot; at 6 shared context outweighed a swapped pair (unseen, fit)
_PIVOT_FILLER = frozenset({"still", "one", "also", "alway", "first"})  # stems that order nothing ("the ones in")
_EXCHANGE_SHARED = 4  # shared by the two crossed clause pairs; 3 flagged a held-back paraphrase (unseen set)
# "the RCS and GLOBAL_RCS options; the former ..., while the second ...": which of the pair each names back to
_PAIR = re.compile(r"\b([\w.$/-]+) and ([\w.$/-]+)\b")
_BACK = re.compile(r"\bthe (former|latter|first|second)\b(?! \w+ (?:of|in)\b)")
_STEMMED_ANTONYM = {snowball(a): {snowball(b) for b in bs} for a, bs in ANTONYM.items()}
# "whether or not X" says X does not matter; a text that makes X a condition ("if X", "whose X") says it does.
_REGARDLESS = re.compile(r"\b(?:whether or not|regardless of whether|no matter whether|no matter if)\b")
_WIDENED_REACH = 4  # content words after "whether or not" that say what does not matter
# "runs every hour, not every minute": a clause of a negation and a few words whose verb is the clause before's
_ELIDED = re.compile(r"(?:but\s+)?(?:not|never)\s+(\S.*)", re.IGNORECASE | re.DOTALL)
_ELIDED_MAX_WORDS = 3  # content words after the negation; more, and the clause says something of its own
_CONDITION = re.compile(r"\b(?:if|when|whenever|whose|that|which|where|unless|provided|as long as)\b")


@lru_cache(maxsize=4096)
def contradiction(claim_text: str, claim: Terms, window_text: str, context_text: str, subject: str = "") -> str:
    """Why the window (for numbers and names) or its context (for where they sit, negations and cues) contradicts
    the claim, or "". `subject`: what the chunk is about (its heading, its first line), whose numbers count as
    stated too ("Changes with nginx 1.19.7")."""
    claim_text = plain(claim_text)  # ":variable:`X`" is the code span `X`, not three clauses
    context = terms(context_text)
    return (
        _number_changed(claim_text, claim, terms(f"{window_text}\n\n{subject}" if subject else window_text))
        or _name_changed(claim_text, window_text)
        or _swapped(claim_text, claim, context_text)
        or _exchanged(claim_text, context_text)
        or _reversed(claim_text, context_text)
        or _cue_changed(claim, context_text)
        or _widened(claim_text, context_text)
        or _negation(claim_text, claim, context_text, context)
        or _added_to_closed(claim_text, context_text, context)
    )


@lru_cache(maxsize=4096)
def unstated(claim_text: str, claim: Terms, window_text: str, window: Terms, chunk: Terms | None = None,
             subject: str = "") -> str:
    """What the claim says that the window does not: numbers and exact names (the chunk's `subject`, its heading or
    first line, counts as stating them), a release, an obligation, an order or comparison, an effect such as a
    warning, or what "also" adds (looked for in the whole `chunk`). No `supported` without them."""
    claim_text = plain(claim_text)
    if subject:
        window = terms(f"{window_text}\n\n{subject}")
        window_text = f"{window_text}\n\n{subject}"
    numbers = Counter(claim.numbers) - Counter(window.numbers)
    if not _ONE_UNIT.search(claim_text):
        del numbers["1"]  # "one vector" may well be "a vector"; "one hour" is a quantity the text must state
    text = matchable(window_text)
    names = {s.text for s in specifics(claim_text) if not contains(text, s.text)}
    names |= {i for i in claim.identifiers
              if i not in window.identifiers and i not in text and matchable(i) not in text}
    missing = sorted(numbers) + sorted(names)
    release = _RELEASE.search(claim_text)
    if release and not _VERSION_WORD.search(window_text):
        missing.append(repr(release.group().lower()))
    if missing:
        return f"the best-matching text does not state {_join(missing)}"
    stated = {c.group for c in window.cues}
    strong = [c.word for c in claim.cues if c.group in _MUST_BE_STATED and not _MUST_BE_STATED[c.group] & stated]
    if strong:
        return f"the cited text does not say {strong[0]!r}"
    written = set(letter_runs(plain(window_text).lower()))
    ranked = sorted(w for w in claim.polar & set(_RANKING) if not _RANKING[w] & written)
    if ranked:
        return f"the cited text does not say {ranked[0]!r}"
    everywhere = chunk.words | window.words if chunk is not None else window.words
    effects = sorted(w for w in claim.words & set(EFFECTS) if not EFFECTS[w] & everywhere)
    if effects:
        return f"the cited text does not say the claim's {effects[0]!r}"
    return ""


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
    return max(split_sentences(window_text), key=lambda s: _cover(words, s))


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
    parts = _filled(clauses(window_text))
    if len(parts) < 2:
        return ""
    for ours_clause in clauses(claim_text):
        named = _things(ours_clause)
        aligned = _aligned(ours_clause, parts) if named else []
        for ours in named:
            if any(_names(p, ours) for p in aligned) or not any(_names(p, ours) for p in parts):
                continue
            rivals = [s for p in aligned for s in _things(p) if _rival(s, ours) and not _names(ours_clause, s)]
            if not rivals and not any(_rival(s, ours) for p in aligned for s in _things(p)):
                # "- `Right arrow`: next page": the aligned clause names nothing; its sentence names the key
                held = [_sentence_of(p, split_sentences(window_text)) for p in aligned]
                if not any(_names(h, ours) for h in held):
                    rivals = [s for h in held for s in _things(h) if _rival(s, ours) and not _names(ours_clause, s)]
            if rivals:
                return f"the cited text says {rivals[0].text!r} where the claim says {ours.text!r}"
    return ""


@lru_cache(maxsize=4096)
def _filled(parts: tuple[str, ...]) -> tuple[str, ...]:
    """`parts` (the clauses of a text) with an elided clause completed from the one before it: "The job runs every
    hour", "not every minute." becomes "The job runs every hour", "The job runs not every minute."; "runs on Linux",
    "not Windows" becomes "runs on not Windows". What the clause repeats is cut where its first word is (else as
    many words as it has), so it negates what the clause before states, of another thing."""
    out = list(parts)
    for k in range(1, len(parts)):
        elided = _ELIDED.fullmatch(parts[k])
        if not elided or not 0 < len(terms(elided[1]).words) <= _ELIDED_MAX_WORDS or parts[k - 1][-1:] in ".!?":
            continue
        before, rest = parts[k - 1].split(), elided[1].split()
        same = [i for i, w in enumerate(before) if i and w.lower() == rest[0].lower()]
        cut = same[-1] if same else max(len(before) - len(rest), 1)
        out[k] = " ".join([*before[:cut], parts[k]])
    return tuple(out)


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
    sentences = split_sentences(window_text)
    claimed = terms(claim_text).negations % 2
    for ours in clauses(claim_text):
        mine = terms(ours)
        only_names = not mine.words - _name_words(ours)
        if only_names and not mine.negations % 2:
            continue  # a clause that only names something ("--keep-old-files:") states nothing to negate
        aligned = _aligned(ours, parts, negation=False, names=only_names, least=_NEGATION_ALIGNED)
        # The clause and its whole sentence both differ: a list cut into clauses leaves "is not recommended"
        # in the last piece only.
        # ... and an antonym in place of the negated word says it again ("not accepted" for "rejected").
        flips = [p for p in aligned if terms(p).negations % 2 != mine.negations % 2
                 and terms(_sentence_of(p, sentences)).negations % 2 != claimed
                 and not _said_by_antonym(ours, p)]
        if flips and len(flips) == len(aligned):
            said = " ".join(sorted(terms(ours).words & terms(flips[0]).words)[:4])
            if terms(ours).negations % 2:
                return f"the claim negates what the cited text states ({said})"
            return f"the cited text negates the claim ({said})"
    for ours in clauses(claim_text):
        polar = terms(ours).polar
        for word in sorted(polar):
            aligned = _aligned(ours, parts, negation=False, leave_out=ANTONYM[word] | {word})
            # the aligned clause has the opposite and not the word ("contains absolute paths" for "relative paths")
            if any(word in terms(p).polar for p in aligned):
                continue
            # "not accepted" says what "rejected" says: an antonym under one more negation is no opposite
            swapped = sorted(w for p in aligned for w in ANTONYM[word] & terms(p).polar
                             if w not in claim.polar and _negated_around(p, w) == _negated_around(ours, word))
            if swapped:
                return f"the cited text says {swapped[0]!r} where the claim says {word!r}"
    flipped = _head_flipped(claim_text, window_text)
    if flipped:
        return flipped
    # "but are." against "but are not.": same words, a negation with nothing after it to flip.
    if claim.words == window.words and claim.negations % 2 != window.negations % 2:
        return "the claim and the cited text differ in a negation"
    return ""


def _said_by_antonym(ours: str, theirs: str) -> bool:
    """Whether `theirs` says `ours` with an antonym under one more negation: "not accepted" and "rejected", "not
    turned on" and "turned off" (but not "always kills" and "never kills": there the antonym is the negation)."""
    mine, other = terms(ours).polar, terms(theirs).polar
    return any(_negated_around(ours, w) != _negated_around(theirs, a) for w in mine - other for a in ANTONYM[w] & other)


def _negated_around(clause: str, word: str) -> int:
    """Whether `clause` negates (oddly often) apart from `word`, which may negate itself ("disabled", "refuses")."""
    return terms(re.sub(rf"(?<![\w-]){re.escape(word)}(?![\w-])", " ", clause.lower())).negations % 2


@lru_cache(maxsize=4096)
def _head_flipped(claim_text: str, context_text: str) -> str:
    """A word the claim states that every clause of the text about the same thing negates, or the other way round:
    "changed buffers are written out" against "changed buffers are not written"; "lines are not kept" against
    "up to 2000 lines are kept". A negation reaches along "or" ("does not create or update a cache entry or remove
    the normal variable"). Where the same two words come in a row on both sides ("it takes effect at once" and
    "it does not take effect until the end") that clause alone says it, however little else the clauses share."""
    held = [(p, terms(p), terms(s), p not in cut) for s in split_sentences(context_text)
            for cut in [clauses(s)] for p in _filled(cut)]
    whole = terms(claim_text)
    moved = {snowball(m[1]) for m in _OBJECT_NEGATED.finditer(plain(claim_text).lower())}
    for ours in _filled(clauses(claim_text)):
        mine = terms(ours)
        phrases = _word_pairs(ours)
        for word in sorted((whole.affirmed | whole.negated) & mine.words - moved):
            about = [(jaccard(mine.words, clause.words), p, clause, sentence, filled)
                     for p, clause, sentence, filled in held
                     if word in clause.words and len(mine.words & clause.words) >= _HEAD_SHARED]
            best = max((score for score, *_ in about), default=0.0)
            closest = [sentence for score, _, _, sentence, _ in about if score == best and best >= _HEAD_ALIGNED]
            # An elided clause filled in ("The tool supports not IPv6") negating as often as the claim's clause
            # ("The tool does not support IPv6") agrees with it, wherever each puts its negation.
            # So does a clause with an antonym in place of the negated word ("turned off" for "not turned on").
            if any(filled and clause.negations % 2 == mine.negations % 2 or _said_by_antonym(ours, p)
                   for score, p, clause, _, filled in about if score == best):
                continue
            if word in whole.affirmed:
                same = [clause if clause.negations else sentence for _, p, clause, sentence, _ in about
                        if any(word in pair for pair in phrases & _word_pairs(p))]
                if (same or closest) and all(word in t.negated for t in same or closest):
                    return f"the cited text negates {word!r}, which the claim states"
            if word in whole.negated and closest and all(word in t.affirmed for t in closest):
                return f"the claim negates {word!r}, which the cited text states"
    return ""


@lru_cache(maxsize=4096)
def _named_back(text: str) -> str:
    """`text` with "the former" and "the latter" (or "the second") replaced by the two things they name back to:
    "the RCS and GLOBAL_RCS options; the former affects all startup files"."""
    out = []
    for sentence in split_sentences(text):
        pair = _PAIR.search(sentence)
        if pair and _BACK.search(sentence, pair.end()):
            head, tail = sentence[: pair.end()], sentence[pair.end() :]
            tail = _BACK.sub(lambda m: pair[1] if m[1] in ("former", "first") else pair[2], tail)
            sentence = head + tail
        out.append(sentence)
    return "\n\n".join(out)


@lru_cache(maxsize=4096)
def _word_pairs(text: str) -> frozenset[tuple[str, str]]:
    """Adjacent content words of `text`, stemmed: "does not take effect until" has ("take", "effect")."""
    words = _first_words(text, len(text))
    return frozenset(zip(words, words[1:]))


@lru_cache(maxsize=4096)
def _exchanged(claim_text: str, context_text: str) -> str:
    """Two words of the claim sit in each other's clause: "imported templates are passed the current context and
    included templates are not" against a sentence that says it of included templates and not of imported ones.

    Each clause of the claim must say, apart from the two words, what the text's clause holding the other word says.
    """
    ours = [frozenset(_terms_in(c)) for c in clauses(claim_text)]
    if len(ours) < 2:
        return ""
    for sentence in split_sentences(_named_back(context_text)):
        parts = [frozenset(_terms_in(p)) for p in clauses(sentence)]
        if len(parts) < 2:
            continue
        for i, j in itertools.permutations(range(len(ours)), 2):
            for x in sorted(ours[i] - ours[j]):
                for y in sorted(ours[j] - ours[i]):
                    has_x = [p for p in parts if x in p and y not in p]
                    has_y = [p for p in parts if y in p and x not in p]
                    if not has_x or not has_y:
                        continue
                    pair = {x, y}
                    mine_x, mine_y = ours[i] - pair, ours[j] - pair
                    # of the text's clauses naming x (or y), the one most like the claim's clause naming the other
                    theirs_x = max((p - pair for p in has_x), key=lambda p: (len(p & mine_y), -len(p)))
                    theirs_y = max((p - pair for p in has_y), key=lambda p: (len(p & mine_x), -len(p)))
                    # The two clauses say parallel things ("A is passed ... and B is not") or the words are opposites
                    parallel = (mine_x & mine_y and theirs_x & theirs_y) or y in _STEMMED_ANTONYM.get(x, ())
                    if (
                        parallel
                        and jaccard(mine_x, theirs_y) > jaccard(mine_x, theirs_x)
                        and jaccard(mine_y, theirs_x) > jaccard(mine_y, theirs_y)
                        and mine_x & theirs_y
                        and mine_y & theirs_x
                        and len(mine_x & theirs_y) + len(mine_y & theirs_x) >= _EXCHANGE_SHARED
                    ):
                        return f"the cited text says {y!r} where the claim says {x!r}, and {x!r} where it says {y!r}"
    return ""


def _reversed(claim_text: str, context_text: str) -> str:
    """A pair the text puts in one direction that the claim turns round: "NO_COLOR takes precedence over
    FORCE_COLOR" against "FORCE_COLOR takes precedence over NO_COLOR"; "A and then B" against "B and then A".

    Around each pivot ("over", "then", "until", "instead of", ...), the content words and names on its two sides are
    compared with those around the same pivot in the text: the claim's left side must not be the text's right.
    """
    for pivot, left, right in _pivots(claim_text):
        best = None
        for their_pivot, their_left, their_right in _pivots(context_text):
            if their_pivot != pivot:
                continue
            crossed = (left & their_right) - their_left, (right & their_left) - their_right
            straight = len((left & their_left) - their_right) + len((right & their_right) - their_left)
            score = (len(crossed[0]) + len(crossed[1]) + straight, straight)
            if best is None or score > best[0]:
                best = (score, crossed, straight)
        if best is None:
            continue
        _, (to_left, to_right), straight = best
        if to_left and to_right and len(to_left) + len(to_right) > straight or (to_left or to_right) and not straight:
            return (f"the cited text puts {' '.join(sorted(to_right))} before {pivot!r} and "
                    f"{' '.join(sorted(to_left))} after it; the claim the other way round")
    # "A until X, B until Y" against "A until Y": clause by clause, the claim pairs the text's subject of one
    # pivot with the object of another.
    theirs = _pivots(context_text, by_clause=True)
    for pivot, left, right in _pivots(claim_text, by_clause=True):
        same_object = [tl for p, tl, tr in theirs if p == pivot and (right & tr) - tl and not left & tl]
        same_subject = [tr for p, tl, tr in theirs if p == pivot and (left & tl) - tr and not right & tr]
        if same_object and same_subject:
            return (f"the cited text says {' '.join(sorted(same_object[0]))} {pivot} {' '.join(sorted(right))}, "
                    f"not {' '.join(sorted(left))}")
    return ""


@lru_cache(maxsize=4096)
def _pivots(text: str, by_clause: bool = False) -> list[tuple[str, frozenset[str], frozenset[str]]]:
    """(pivot, terms before it, terms after it) for each pivot of each sentence (or clause) of `text`, words
    stemmed and names (identifiers) whole, up to _PIVOT_REACH of them either side."""
    out = []
    pieces = split_sentences(plain(text))
    if by_clause:
        pieces = [c for p in pieces for c in clauses(p)]
    for sentence in pieces:
        lower = sentence.lower()
        for m in _PIVOT.finditer(lower):
            before, after = _terms_in(sentence[: m.start()]), _terms_in(sentence[m.end() :])
            pivot = "over" if m.group().endswith("over") else m.group()  # "takes precedence over": over
            out.append((pivot, frozenset(before[-_PIVOT_REACH:]), frozenset(after[:_PIVOT_REACH])))
    return out


@lru_cache(maxsize=4096)
def _terms_in(text: str) -> tuple[str, ...]:
    """The content words (stemmed) and identifiers of `text`, in order."""
    t = terms(text)
    out = []
    for token in re.findall(r"\S+", text):
        key = token.strip(".,;:!?()[]{}\"'*`").lower()
        if key in t.identifiers:
            out.append(key)  # CMAKE_MODULE_PATH is one thing, not "cmake", "module" and "path"
            continue
        out += [w for w in (snowball(x) for x in letter_runs(key)) if w in t.words and w not in _PIVOT_FILLER]
    return tuple(out)


def _widened(claim_text: str, context_text: str) -> str:
    """The claim says "whether or not X" where the text makes X a condition ("if printed", "whose URL starts with
    the given prefix", "only if both bounds are closed")."""
    lower = plain(claim_text).lower()
    m = _REGARDLESS.search(lower)
    if not m or _REGARDLESS.search(plain(context_text).lower()):
        return ""
    said = _first_words(split_sentences(lower[m.end() :])[0], _WIDENED_REACH)
    if len(said) < 2:
        return ""
    for sentence in split_sentences(plain(context_text)):
        for condition in _CONDITION.finditer(sentence.lower()):
            held = _first_words(sentence[condition.end() :], len(said) + 2)
            if len(set(said) & set(held)) * 2 >= len(said):
                return (f"the cited text makes it a condition ({condition.group()} {' '.join(held[:4])}) where the "
                        f"claim says {m.group()!r}")
    return ""


@lru_cache(maxsize=4096)
def _first_words(text: str, n: int) -> tuple[str, ...]:
    """The first `n` content words (stemmed) of `text`."""
    words = terms(text).words
    return tuple(w for w in (snowball(x) for x in letter_runs(plain(text).lower())) if w in words)[:n]


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
    out: list[str] = []
    start = None  # where a clause of cues only began: it joins the next, punctuation kept ("if not, it exits")
    for a, b in zip(cuts, cuts[1:]):
        piece = text[a if start is None else start : b].strip(_CLAUSE_EDGE)
        if piece and not terms(CUE_PATTERN.sub(" ", piece.lower())).words:
            start = a if start is None else start
            continue
        start = None
        if piece:
            out.append(piece)
    if start is not None:
        out.append(text[start:].strip(_CLAUSE_EDGE))
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
