"""Words a PDF hyphenated at a line end, joined back or kept hyphenated by what the rest of the document spells.

PDFium marks a hyphen it found at the end of a line, before a letter on the next, with a marker character and
joins the two lines. That hyphen may be typesetting ("manage-ment") or part of the word ("full-upgrade",
"debian-user"); the document's own other spellings decide.
"""

from __future__ import annotations

import re
from collections import Counter
from typing import Iterable

from rag.text import hyphenated_words

# PDFium's marker for a line-end hyphen: "\x02" from FPDFText_GetBoundedText, "\ufffe" from FPDFText_GetText.
MARKERS = "\x02\ufffe"
_SITE = re.compile(rf"(\w*)[{MARKERS}](\w*)")


def spellings(texts: Iterable[str]) -> Counter[str]:
    """Casefolded words and hyphenated compounds, with each part of a compound also counted on its own."""
    words: Counter[str] = Counter()
    for text in texts:
        for token in hyphenated_words(_SITE.sub(" ", text).casefold()):
            words[token] += 1
            if "-" in token:
                words.update(token.split("-"))
    return words


def join_hyphenated(text: str, words: Counter[str]) -> str:
    """`text` with every line-end hyphen marker resolved: the word joined, or hyphenated as printed.

    Kept hyphenated when the document spells "a-b" elsewhere, or never spells "ab" while both "a" and "b" stand
    as words of their own ("architecture-specific"); joined otherwise ("docu-mentation", "pack-age" when
    "package" occurs).
    """

    def resolve(match: re.Match) -> str:
        left, right = match.group(1), match.group(2)
        if not left or not right:
            return f"{left}-{right}"
        a, b = left.casefold(), right.casefold()
        if words[f"{a}-{b}"]:
            return f"{left}-{right}"
        if words[a + b]:
            return left + right
        if words[a] and words[b]:
            return f"{left}-{right}"
        return left + right

    return _SITE.sub(resolve, text)
