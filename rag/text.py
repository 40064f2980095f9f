"""Words, stems, stopwords and sentences: every way `rag` splits text, each named for the job it does.

As bm25s keeps tokenization in one module, so does this package. The jobs split words differently on purpose (the
index keeps "fs.readFile" whole, a shingle takes every `\\w` run, a claim's content words are lowercase letters
and digits), and each pattern below is the one its callers were measured with: none is unified with another.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Iterator, Mapping

import Stemmer

# --- words -------------------------------------------------------------------------------------------------------

# A word, or words joined by dots and dashes with nothing between them: "fs.readFile", "utf-8", "--no-deps".
_INDEX_TOKEN = re.compile(r"\w+(?:[.\-]+\w+)*")
_WORD_RUN = re.compile(r"\w+")
_HYPHENATED = re.compile(r"\w+(?:-\w+)*")
_LETTER_RUN = re.compile(r"[a-z]+")
_LOWER_WORD = re.compile(r"[a-z][a-z0-9]*")
_WORD_OR_NUMBER = re.compile(r"[a-z][a-z0-9_]*|\d+(?:[.,]\d+)*")
_ALNUM_RUN = re.compile(r"[a-z0-9]+")
_KEY_WORD = re.compile(r"[A-Za-z][A-Za-z0-9_]*")
_PROSE_WORD = re.compile(r"[A-Za-z][\w'.-]*[A-Za-z0-9]|[A-Za-z]")
# Two or more characters, starting with a letter, ending with a letter or digit, not inside a dashed word.
_NAME_WORD = re.compile(r"(?<![\w-])([A-Za-z][\w.-]*[A-Za-z0-9])")
# A lowercase word standing alone: not part of an identifier, a path, an option, a quoted name or a capitalised one.
_PLAIN_WORD = re.compile(r"(?<![\w./`'-])[a-z]+(?![\w/`'-]|\.\w)")


def index_tokens(text: str) -> list[str]:
    """BM25's tokens, before splitting and stemming: words and dotted or dashed chains ("os.path.join", "utf-8")."""
    return _INDEX_TOKEN.findall(text)


def word_runs(text: str) -> list[str]:
    """Every run of word characters, as written: near-duplicate shingles compare these."""
    return _WORD_RUN.findall(text)


def hyphenated_words(text: str) -> list[str]:
    """Words with their hyphenated compounds whole ("full-upgrade"): a PDF's own spellings of its line-end hyphens."""
    return _HYPHENATED.findall(text)


def letter_runs(lower: str) -> list[str]:
    """Runs of lowercase ASCII letters of lowercased text; digits and underscores split ("n_ctx" -> n, ctx)."""
    return _LETTER_RUN.findall(lower)


def lower_words(lower: str) -> list[str]:
    """A claim's words in lowercased text: a letter, then letters and digits ("q4", "utf8"; "n_ctx" -> n, ctx)."""
    return _LOWER_WORD.findall(lower)


def words_and_numbers(lower: str) -> list[str]:
    """Words (underscores kept: "n_ctx") and numbers ("1,024", "0.5") of lowercased text, in order."""
    return _WORD_OR_NUMBER.findall(lower)


def alnum_runs(lower: str) -> list[str]:
    """Runs of lowercase ASCII letters and digits: the words evidence strings are matched by in the reports."""
    return _ALNUM_RUN.findall(lower)


def key_words(text: str) -> list[str]:
    """Words as written, starting with a letter, underscores kept: the words two excerpts' key terms come from."""
    return _KEY_WORD.findall(text)


def prose_words(text: str) -> list[str]:
    """Words of a sentence as written, inner apostrophes, dots and dashes kept ("don't", "e.g", "built-in")."""
    return _PROSE_WORD.findall(text)


def plain_words(text: str) -> list[str]:
    """Lowercase words standing alone, as written ("cache"; not the parts of "fs.readFile", `--no-deps`, "Redis"):
    the words rag.retrieval.spelling may read as another."""
    return _PLAIN_WORD.findall(text)


def plain_word_matches(text: str) -> Iterator[re.Match[str]]:
    """plain_words with where each one is."""
    return _PLAIN_WORD.finditer(text)


def replace_plain_words(text: str, replacements: Mapping[str, str]) -> str:
    """`text` with each plain word (plain_words) that `replacements` names replaced by its value."""
    return _PLAIN_WORD.sub(lambda m: replacements.get(m.group(), m.group()), text)


def name_words(text: str) -> Iterator[re.Match[str]]:
    """Each word of two or more characters that could be a name ("SmolLM2", "llama.cpp"), group 1 the word."""
    return _NAME_WORD.finditer(text)


# --- stems -------------------------------------------------------------------------------------------------------

STEMMERS = ("snowball", "light", "none")
_SNOWBALL = Stemmer.Stemmer("english")


@lru_cache(maxsize=65536)
def snowball(word: str) -> str:
    """The English Snowball (Porter 2) stem of a lowercase word."""
    return _SNOWBALL.stemWord(word)


def light_stem(word: str) -> str:
    """The suffix stripper used before Snowball (plurals, -ing, -ed); kept to measure against."""
    if len(word) <= 3 or not word.isalpha():
        return word
    if word.endswith("ies") and len(word) > 4:
        return word[:-3] + "y"
    if word.endswith("sses"):
        return word[:-2]
    if word.endswith("s") and not word.endswith(("ss", "us", "is")):
        word = word[:-1]
    for suffix in ("ing", "ed"):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            word = word[: -len(suffix)]
            if len(word) > 3 and word[-1] == word[-2] and word[-1] not in "lsz":
                word = word[:-1]  # "running" -> "run"
            break
    return word


def stem(word: str, stemmer: str = "snowball") -> str:
    """`word` (lowercase) stemmed by the named stemmer; digits-only and one-letter words stay as they are."""
    if stemmer == "none" or len(word) < 3 or word.isdigit():
        return word
    return snowball(word) if stemmer == "snowball" else light_stem(word)


# --- stopwords ---------------------------------------------------------------------------------------------------

# Function words only: "not", "off", "before", "after" and the like carry meaning in docs and stay.
INDEX_STOPWORDS = frozenset(
    """a an the is are was were be been being am do does did doing has have had having of in on at to for from
    by with and or as it its itself this that these those i my me you your yours we our ours they them their he
    she his her what which who whom how why when where will would should can could shall may might must there
    here if then than so into about""".split()
)
# Words that do not make a sentence a statement about the subject (is_factual counts what is left).
FACTUAL_STOPWORDS = frozenset(
    """a an the and or but if then else of to in on at by for with from into onto about as is are was were be
    been being am do does did doing have has had having it its it's this that these those there here their
    they them he she his her we us our you your i me my mine what which who whom whose when where why how
    all any both each few more most other some such only own same so than too very can could should would
    will shall may might must also just not no nor never yes via per up down out over under again further
    once let lets let's""".split()
)
# Words a claim and its cited sentence need not share; quantifiers and modals are cues (claim_terms), not these.
CLAIM_STOPWORDS = frozenset(
    """a an the and or but if then else of to in on at by for with from into onto about as is are was were be
    been being am do does did doing have has had having it its this that these those there here their they them
    he she his her we us our you your i me my what which who whom whose when where why how both each
    more most other some such own same so than too very could should would will might
    also just not no nor via per up out over under again once s t don doesn isn aren wasn won
    use used uses using""".split()
)


# --- sentences ---------------------------------------------------------------------------------------------------

_SENTENCE_BREAK = re.compile(r"(?<=[.!?])\s+|\n\s*\n")
# Where a chunk may end between sentences: after terminal or clause punctuation, any closing quote, bracket or
# emphasis, and the space (rag.ingest.chunking cuts at its matches' ends, beside list items, lines and words).
CHUNK_SENTENCE_CUT = re.compile(r"(?<=[.!?:;])[\"')\]*_]*\s+")
_CLAUSE_END = re.compile(r"[.!?;](?:\s|$)")
_ENDS_SENTENCE = re.compile(r"[.?!:;]\s*$")


def split_sentences(text: str) -> list[str]:
    """`text` split after ".", "!" or "?" and at blank lines; the whole text when nothing is left."""
    return [s for s in _SENTENCE_BREAK.split(text) if s.strip()] or [text]


def to_sentence_end(text: str) -> str:
    """`text` up to the end of its first sentence or clause: a ".", "!", "?" or ";" before a space or the end."""
    return _CLAUSE_END.split(text, maxsplit=1)[0]


def ends_sentence(text: str) -> bool:
    """Whether `text` ends with sentence or clause punctuation (trailing space aside): the next word starts one."""
    return bool(_ENDS_SENTENCE.search(text))
