"""A question's misspelt words, read as the word one typo away that the index holds: "cahce" as "cache".

A typo costs more than the word: BM25 finds nothing for it, and the decline rule reads a word the docs never hold
as a sign that they do not cover the question ("how do I use the KV cahce?" was declined over docs that explain the
KV cache). So before a search, each word of the query that no indexed chunk holds is replaced by the word one edit
away (a letter dropped, added, changed, or two neighbours swapped) whose terms the most chunks hold, when at least
MIN_CHUNKS do. What is read is the edit whose BM25 terms the index holds, so it may be a stem rather than a word
("cacth" reads as "cach", the stem of "cache", which BM25 matches as "cache").

Only a word that may be a typo is read this way, never one the docs just do not use: a plain lowercase word of
MIN_LETTERS letters or more that is no English word (pyspellchecker's dictionary, British spellings too), nor two of
them joined ("serverless", "blocklist"), nor a word the index holds without its last letter ("systemd", "launchd":
names made from a word) unless its last two letters swapped make one ("statr" is "start"). The edit keeps the first
and the last letter (or swaps the last two), which typos rarely hit and technical names often differ by ("qmail" is
not "mail"). Names are left as written (capitalised, acronyms, with digits or punctuation: LoRA, FAISS,
`--no-deps`), since a name the docs never mention is what the decline rule should see, and "FAISS" is one letter
from "fails". Short words have too many neighbours.
"""

from __future__ import annotations

import re
from functools import cache
from string import ascii_lowercase

from rag.retrieval.terms import token_terms
from rag.retrieval.vocabulary import DocumentFrequencies
from rag.text import plain_words, replace_plain_words

MIN_LETTERS = 5
MIN_CHUNKS = 3
MIN_PART = 3  # two dictionary words of at least this many letters, one longer, joined: a compound, not a typo
# At most this many of a question's unknown words are read; the rest stay as written. More is pasted text (a log
# line, a hash), not a misspelt question: 1,000 unknown words took 4.8 s to read, 0.04 s with the cap.
MAX_UNKNOWN = 8
# British spellings the dictionary (American) lacks: normalise -> normalize, colour -> color, analyse -> analyze
_BRITISH = ((re.compile(r"is(e|ed|es|ing|ation|ations)$"), r"iz\1"), (re.compile(r"our"), "or"), (re.compile(r"yse"), "yze"))


def edits(word: str) -> set[str]:
    """Every string one edit from `word` (lowercase ASCII letters): deleted, swapped with its neighbour, changed,
    added."""
    splits = [(word[:i], word[i:]) for i in range(len(word) + 1)]
    out = {a + b[1:] for a, b in splits if b}
    out |= {a + b[1] + b[0] + b[2:] for a, b in splits if len(b) > 1}
    out |= {a + c + b[1:] for a, b in splits if b for c in ascii_lowercase}
    out |= {a + c + b for a, b in splits for c in ascii_lowercase}
    out.discard(word)
    return out


def _keeps_ends(word: str, edit: str) -> bool:
    """Whether `edit` keeps `word`'s first letter and its last one (or only swaps the last two): typos rarely hit
    either end, and names differ there ("qmail" is not "mail")."""
    return edit[:1] == word[:1] and (edit[-1:] == word[-1:] or (len(edit) == len(word) and edit[-2:] == word[-2:][::-1]))


def _held(word: str, vocabulary: DocumentFrequencies) -> int:
    """How many chunks hold the rarest of `word`'s terms (0 for a word with none: a stopword)."""
    terms = token_terms(word, vocabulary.settings)
    return min(vocabulary.frequencies(terms).values()) if terms else 0


def _held_but_last(word: str, vocabulary: DocumentFrequencies) -> bool:
    """Whether the index holds `word` without its last letter: a name made from a word ("systemd", "launchd")."""
    return _held(word[:-1], vocabulary) > 0


@cache
def _dictionary() -> frozenset[str]:
    """English words (pyspellchecker's dictionary), loaded once, on the first word the index does not hold."""
    from spellchecker import SpellChecker

    return frozenset(SpellChecker(language="en").word_frequency.dictionary)


def is_word(word: str) -> bool:
    """Whether `word` is English as written (American or British spelling) or two English words joined."""
    words = _dictionary()
    if word in words or any(pattern.sub(us, word) in words for pattern, us in _BRITISH):
        return True
    return any(word[:i] in words and word[i:] in words and max(i, len(word) - i) > MIN_PART
               for i in range(MIN_PART, len(word) - MIN_PART + 1))


def corrections(text: str, vocabulary: DocumentFrequencies | None) -> dict[str, str]:
    """Each misspelt word of `text` and the word it reads as (see the module docstring); {} without a vocabulary."""
    if vocabulary is None:
        return {}
    settings = vocabulary.settings
    terms_of = {word: token_terms(word, settings) for word in plain_words(text) if len(word) >= MIN_LETTERS}
    held = vocabulary.frequencies({t for terms in terms_of.values() for t in terms})  # one query for a store
    unknown = [word for word, terms in terms_of.items() if terms and min(held[t] for t in terms) == 0 and not is_word(word)]
    out = {}
    for word in unknown[:MAX_UNKNOWN]:
        swapped = word[:-2] + word[-1] + word[-2]  # the last two letters swapped: "statr" is "start"
        if _held_but_last(word, vocabulary) and _held(swapped, vocabulary) < MIN_CHUNKS:
            continue  # a name made from a word: "systemd", "launchd"
        candidates = {edit: token_terms(edit, settings) for edit in edits(word) if _keeps_ends(word, edit)}
        counts = vocabulary.frequencies({t for terms in candidates.values() for t in terms})
        scored = [(min(counts[t] for t in terms), edit) for edit, terms in candidates.items() if terms]
        best = min(((-n, edit) for n, edit in scored if n >= MIN_CHUNKS), default=None)
        if best is not None:
            out[word] = best[1]
    return out


def respelled(text: str, vocabulary: DocumentFrequencies | None) -> str:
    """`text` with its misspelt words replaced by what they read as (corrections); unchanged when it has none.

    The last answer is remembered: a turn reads its question twice, for the search and for the quotes."""
    global _last
    last = _last
    if last is not None and last[0] == text and last[1] is vocabulary:
        return last[2]
    fixed = corrections(text, vocabulary)
    out = replace_plain_words(text, fixed) if fixed else text
    _last = (text, vocabulary, out)  # one tuple: a reader in another thread sees the old answer or the new whole
    return out


_last: tuple[str, DocumentFrequencies | None, str] | None = None
