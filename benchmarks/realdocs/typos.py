"""One typo in each question, for `score --typos`: how the answer stands up to a misspelt question.

The suite's questions are written with care; people type fast. The typo swaps two neighbouring letters (the most
common slip of a typist), never the first letter, in one plain lowercase word of five letters or more that is not a
stopword; the word and the place are chosen by a hash of the question's id, so every run asks the same misspelt
questions. A question with no such word is asked as written.
"""

from __future__ import annotations

import hashlib
from dataclasses import replace

from rag.evaluation import Question
from rag.text import INDEX_STOPWORDS, plain_word_matches

MIN_LETTERS = 5


def misspelt(text: str, key: str) -> str:
    """`text` with one typo chosen by `key` (see the module docstring); as written when no word qualifies."""
    places = [(m, i) for m in plain_word_matches(text) if len(m.group()) >= MIN_LETTERS and m.group() not in INDEX_STOPWORDS
              for i in range(1, len(m.group()) - 1) if m.group()[i] != m.group()[i + 1]]
    if not places:
        return text
    match, i = places[int(hashlib.sha256(key.encode()).hexdigest(), 16) % len(places)]
    word = match.group()
    return text[: match.start()] + word[:i] + word[i + 1] + word[i] + word[i + 2:] + text[match.end():]


def with_typo(question: Question) -> Question:
    """The question with one typo (misspelt, keyed by its id); its evidence and documents unchanged."""
    return replace(question, q=misspelt(question.q, question.id))
