"""What a sentence commits to: content words, numbers, identifiers, negated words and antonyms, for support checks."""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

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
    ("before", "after"), ("always", "never"), ("first", "last"), ("larger", "smaller"), ("more", "less"),
    ("more", "fewer"), ("higher", "lower"), ("faster", "slower"), ("increase", "decrease"),
    ("increases", "decreases"), ("above", "below"), ("minimum", "maximum"), ("enable", "disable"),
    ("enabled", "disabled"), ("include", "exclude"), ("included", "excluded"), ("input", "output"),
    ("inside", "outside"), ("early", "late"), ("earlier", "later"), ("true", "false"), ("same", "different"),
    ("prefill", "decode"),
)  # fmt: skip
ANTONYM: dict[str, set[str]] = {}
for _a, _b in ANTONYMS:
    ANTONYM.setdefault(_a, set()).add(_b)
    ANTONYM.setdefault(_b, set()).add(_a)
_THOUSANDS = re.compile(r"^\d{1,3}(?:,\d{3})+$")
_TOKEN = re.compile(r"\S+")
_CODE_SPAN = re.compile(r"`([^`\n]+)`")
_ABBREVIATIONS = frozenset({"e.g", "i.e", "etc", "vs", "and/or"})


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
    polar = frozenset(w for w in words if w in ANTONYM)
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


def coverage(claim: Terms, other: Terms) -> float:
    """Share of the claim's content words that `other` also has."""
    if not claim.words:
        return 0.0
    return len(claim.words & other.words) / len(claim.words)
