"""What a sentence commits to: content words, numbers, identifiers, quantifiers, negated words and antonyms."""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from typing import NamedTuple

from rag.text import CLAIM_STOPWORDS, lower_words, snowball, to_sentence_end, words_and_numbers
from rag.verification.markup import plain

# Quantifiers and modality are content: "only the user" and "any user" say different things. Each cue word or
# phrase maps to its group; a claim's group that the cited clause contradicts is a contradiction (rag.verification.contradictions).
CUES: dict[str, str] = {
    "all": "all", "any": "all", "every": "all", "everyone": "all", "everything": "all", "anyone": "all",
    "anything": "all", "whichever": "all", "regardless": "always", "always": "always",
    "whenever": "always", "whatever": "always", "even if": "always", "even when": "always", "unconditionally": "always",
    "in all cases": "always", "no matter": "always", "only": "only", "solely": "only", "exclusively": "only",
    "unless": "unless", "except": "unless", "by default": "default", "if": "if", "when": "if",
    "must": "must", "required": "must", "shall": "must", "not only": "also", "either": "either", "both": "both",
    "whether or not": "always", "regardless of whether": "always",
    "may": "may", "can": "may", "is allowed": "may", "never": "never", "cannot": "cannot",
}
CUE_PATTERN = re.compile(r"\b(?:" + "|".join(sorted(map(re.escape, CUES), key=len, reverse=True)) + r")\b")
_CUE_REACH, _CUE_BACK = 4, 3  # content words after and before a cue that it governs
_CUE_WORDS = frozenset(cue for cue in CUES if " " not in cue and cue != "required")
_NEGATORS = frozenset(
    "not no never cannot none nothing neither nor nobody nowhere without unable refuses refuse refrains refrain "
    "disabled disable disables unless except".split()
)
# These negate without naming what: "unless X" and "none of" scope a clause but have no word they deny.
_MODAL_NEGATORS = frozenset("not never cannot".split())
_HEADLESS_NEGATORS = frozenset("unless except none nothing neither nor nobody nowhere".split())
_NEGATING_PHRASES = re.compile(r"\b(?:rather than|instead of)\b")  # "X rather than Y" says "not Y"
_NOT_NEGATION = re.compile(r"\b(?:whether or not|no matter)\b")
_UN_WORD = re.compile(r"\bun(affected|changed|modified|touched|used|set by)\b")
# options, code and quoted strings ('command not found: cmd'): no negation inside
_UNPOLAR = re.compile(r"`[^`\n]*`|(?<![\w-])--?[a-z][\w-]*|(?<![\w'])'[^'\n]{1,60}'(?![\w'])")
# A negation covers the rest of its clause, so "A, not B" negates B and still supports "A".
_CLAUSE = re.compile(
    r"[,;:()\u2014\u2013]|\s-\s|\b(?:but|and|or|so|because|while|which|whereas|although|though|since|then)\b"
)
_NUMBER_WORDS = {
    "zero": "0", "two": "2", "three": "3", "four": "4", "five": "5", "six": "6", "seven": "7",
    "eight": "8", "nine": "9", "ten": "10", "eleven": "11", "twelve": "12", "twenty": "20", "hundred": "100",
}
_NUMBER = re.compile(r"(?<![A-Za-z_\d.])\d+(?:[.,]\d+)*")
# "one" as a count ("one key vector"), not as a pronoun ("the one that", "one of", "one another").
_ONE = re.compile(r"(?<!\bthe )(?<!\bthat )(?<!\bthis )(?<!\bwhich )(?<!\bno )(?<!\bany )(?<!\beach )"
                  r"(?<!\bevery )(?<!\bby )\bone\b(?! of\b)(?! another\b)(?! by one\b)")
ANTONYMS: tuple[tuple[str, str], ...] = (
    ("before", "after"), ("always", "never"), ("first", "last"), ("larger", "smaller"), ("more", "less"),
    ("more", "fewer"), ("higher", "lower"), ("faster", "slower"), ("increase", "decrease"),
    ("increases", "decreases"), ("above", "below"), ("minimum", "maximum"), ("enable", "disable"),
    ("enabled", "disabled"), ("include", "exclude"), ("included", "excluded"), ("input", "output"),
    ("inside", "outside"), ("early", "late"), ("earlier", "later"), ("true", "false"), ("same", "different"),
    ("prefill", "decode"), ("public", "private"), ("local", "remote"), ("absolute", "relative"),
    ("foreground", "background"), ("synchronous", "asynchronous"), ("older", "newer"), ("oldest", "newest"),
    ("required", "optional"), ("explicit", "implicit"), ("explicitly", "implicitly"), ("accept", "reject"),
    ("allow", "deny"), ("uppercase", "lowercase"), ("success", "failure"), ("succeeds", "fails"),
    ("stops", "continues"), ("stop", "continue"), ("long", "short"), ("kept", "discarded"), ("keep", "discard"),
    # #36: opposites a probe found passing, and their kin
    ("mandatory", "optional"), ("accepts", "rejects"), ("accepted", "rejected"), ("accepting", "rejecting"),
    ("allowed", "forbidden"), ("allowed", "refused"), ("allowed", "denied"), ("allows", "forbids"),
    ("granted", "denied"), ("grants", "denies"), ("automatically", "manually"), ("automatic", "manual"),
    ("positive", "negative"), ("preserved", "stripped"), ("preserves", "strips"), ("acquired", "released"),
    ("acquires", "releases"), ("parallel", "sequentially"), ("parallel", "sequential"), ("parallel", "serially"),
    ("concurrently", "sequentially"), ("paused", "resumed"), ("pauses", "resumes"), ("stable", "unstable"),
    ("sensitive", "insensitive"), ("opt-in", "opt-out"),
    ("turned on", "turned off"), ("turns on", "turns off"), ("turn on", "turn off"), ("switched on", "switched off"),
    ("switches on", "switches off"), ("switch on", "switch off"), ("on by default", "off by default"),
)
ANTONYM: dict[str, set[str]] = {}
for _a, _b in ANTONYMS:
    ANTONYM.setdefault(_a, set()).add(_b)
    ANTONYM.setdefault(_b, set()).add(_a)
# Antonyms of more than one word ("turned on", "opt-in"): their words alone ("on", "in") are no opposites.
_POLAR_PHRASE = re.compile(r"(?<![\w-])(?:" + "|".join(sorted((re.escape(w) for w in ANTONYM if not w.isalpha()),
                                                           key=len, reverse=True)) + r")(?![\w-])")
_THOUSANDS = re.compile(r"^\d{1,3}(?:,\d{3})+$")
_TOKEN = re.compile(r"\S+")
_CODE_SPAN = re.compile(r"`([^`\n]+)`")
_CODEISH = re.compile(r"[A-Za-z]\.[A-Za-z]|[a-z][A-Z]|^[A-Za-z]+\d")  # llama.cpp, SmolLM, Q4
_ABBREVIATIONS = frozenset({"e.g", "i.e", "etc", "vs", "and/or"})


class Cue(NamedTuple):
    """A quantifier or modal cue: its group, the content words it governs (stemmed), and the cue as written."""

    group: str
    governs: frozenset[str]
    word: str


@dataclass(frozen=True)
class Terms:
    """What a sentence commits to: stemmed content words, numbers, identifiers, and which words it negates."""

    words: frozenset[str]
    numbers: tuple[str, ...]  # sorted, with repeats: "2048 or 2048" differs from "2048 or 512"
    identifiers: frozenset[str]
    negated: frozenset[str]  # words a negation governs ("not B", "rather than B"), never also stated outside one
    affirmed: frozenset[str]  # content words that occur only outside any negation
    negations: int
    polar: frozenset[str]  # words of ANTONYMS as written: "before" for "after" is a contradiction too
    cues: tuple["Cue", ...] = ()  # in order


@lru_cache(maxsize=4096)
def terms(text: str) -> Terms:
    """The content words, numbers, identifiers, quantifier cues and negation of `text` (markup removed)."""
    text = plain(text)
    lower = _unnegated(text.lower())
    words = lower_words(lower)
    numbers = [_normalize_number(m.group()) for m in _NUMBER.finditer(text)]
    numbers += [_NUMBER_WORDS[w] for w in words if w in _NUMBER_WORDS]
    numbers += ["1"] * len(_ONE.findall(lower))
    polar = frozenset(w for w in words if w in ANTONYM) | frozenset(_POLAR_PHRASE.findall(lower))
    return Terms(_content(lower), tuple(sorted(numbers)), frozenset(identifiers(text)), *_polarity(lower), polar,
                 cues(lower))


def _content(lower: str) -> frozenset[str]:
    words = lower_words(lower)
    return frozenset(snowball(w) for w in words if _is_content(w))


def _is_content(word: str) -> bool:
    return word not in CLAIM_STOPWORDS and word not in _CUE_WORDS and word not in _NUMBER_WORDS and len(word) > 1


def cues(lower: str) -> tuple[Cue, ...]:
    """Each quantifier or modal cue of lowercased `lower`, with the content words it governs.

    A cue governs the next few content words up to the end of its sentence ("only local clients"); near the end
    of a sentence, the last few before it in its clause as well ("fsmonitor is always disabled").
    """
    found = []
    for m in CUE_PATTERN.finditer(lower):
        rest = to_sentence_end(lower[m.end() :])
        before = _CLAUSE.split(lower[: m.start()])[-1]
        after = [w for w in lower_words(rest) if _is_content(w)][:_CUE_REACH]
        ahead = [w for w in lower_words(before) if _is_content(w)][-_CUE_BACK:]
        # a condition governs what follows it, never the clause it conditions ("returns an error if spaces ...")
        ahead = ahead if len(after) < 2 and CUES[m.group()] not in ("if", "unless") else []
        found.append(Cue(CUES[m.group()], frozenset(snowball(w) for w in after + ahead), m.group()))
    return tuple(found)


def _unnegated(lower: str) -> str:
    """"unaffected" as "not affected", so it negates the word the text without the prefix states."""
    return _UN_WORD.sub(r"not \1", lower)


def _polarity(lower: str) -> tuple[frozenset[str], frozenset[str], int]:
    """(words a negation governs, words outside every negation, number of negations).

    A negation covers the rest of its clause and governs its first content word ("does not ignore case":
    "ignore"); two in one clause cancel out; one that ends its clause ("decoding cannot") governs the word before
    it. Options and code spans are left out: the "no" of `--no-prune` negates nothing.
    """
    text = _NOT_NEGATION.sub(" ", _UNPOLAR.sub(" ", lower)).replace("can't", "can not").replace("won't", "will not")
    text = _NEGATING_PHRASES.sub(" not ", re.sub(r"n't\b", " not", text))
    heads: set[str] = set()
    scoped: set[str] = set()
    free: set[str] = set()
    count = 0
    carried = False
    pieces = _CLAUSE.split(text)
    separators = [m.group() for m in _CLAUSE.finditer(text)] + [""]
    for clause, separator in zip(pieces, separators):
        marked: list[tuple[str, bool]] = []
        under, since_negation, stated_negation, trailing = carried, 0, carried, False
        for token in words_and_numbers(clause):
            if token in _NEGATORS:
                under, since_negation, count = not under, 0 if token not in _HEADLESS_NEGATORS else 1, count + 1
                stated_negation = token not in _HEADLESS_NEGATORS
                trailing = token in _MODAL_NEGATORS
                continue
            word = _normalize_number(token) if token[0].isdigit() else snowball(token) if _is_content(token) else ""
            if word:
                if under and since_negation == 0:
                    heads.add(word)
                marked.append((word, under))
                since_negation += 1
        if under and since_negation == 0:
            marked = [(word, True) for word, _ in marked]
            if marked and trailing:  # "decoding cannot": the word before; "the filesystem is disabled": none
                heads.add(marked[-1][0])
        for word, is_negated in marked:
            (scoped if is_negated else free).add(word)
        # "does not create or update a cache entry or remove the variable": the negation reaches along "or"
        carried = under and separator.strip() in ("or", "nor") and bool(marked) and stated_negation
    return frozenset(heads - free), frozenset(free - scoped), count


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
        if "_" in t or t.startswith("--") or _CODEISH.search(t) or (t.isupper() and sum(map(str.isalpha, t)) >= 2):
            found.add(t.lower())
    return found


def jaccard(a: frozenset[str] | set[str], b: frozenset[str] | set[str]) -> float:
    """Shared words over all words of two sets; 0 for two empty ones."""
    return len(a & b) / len(a | b) if a | b else 0.0


def coverage(claim: Terms, other: Terms) -> float:
    """Share of the claim's content words, numbers and quantifier cues that `other` also has."""
    if not claim.words:
        return 0.0
    ours = claim.words | {c.group for c in claim.cues if c.group != "if"} | {f"#{n}" for n in claim.numbers}
    theirs = other.words | {c.group for c in other.cues} | {f"#{n}" for n in other.numbers}
    return len(ours & theirs) / len(ours)
