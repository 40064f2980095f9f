"""A sentence that overrides another: "Since version 3.0, compression is disabled by default" overrides
"Compression is enabled by default". A quote must not lead an answer while a shown sentence says it changed.

A sentence overrides another when it says something changed (a version since which, "no longer", "deprecated",
"removed", "has been replaced") about the same thing: it names one of the other's code names, or the two share at
least MIN_SHARED content words and half of the shorter one's (as rag.excerpts.conflicts matches subjects). The
verifier's contradiction rules need not fire: "`x()` is deprecated" contradicts nothing in "Use `x()` to read a
file" and still overrides it.
"""

from __future__ import annotations

import re

from rag.verification.claim_terms import terms

# What says a statement changed: a version from which it holds ("since 3.0", "as of version 3", "in 3.x",
# "starting with release 2"), or the old statement's end ("no longer", "deprecated", "removed", "replaced by").
CHANGED = re.compile(
    r"\b(?:since|as of|starting (?:with|in|from)|from|beginning with)\s+"
    r"(?:(?:version|release)\s+)?v?\d+(?:\.(?:\d+|x))*\b"
    r"|\bin\s+(?:(?:version|release)\s+)?v?\d+\.(?:x|\d+)(?:\.(?:x|\d+))*\b"
    r"|\bno longer\b|\bdeprecated\b|\bobsolete\b|\bsuperseded\b|\b(?:removed|dropped)\s+in\b"
    r"|\b(?:has|have|had)\s+been\s+(?:removed|replaced|dropped|superseded)\b"
    r"|\b(?:was|were|is|are)\s+(?:removed|replaced|dropped)\b|\breplaced\s+by\b",
    re.IGNORECASE,
)
MIN_SHARED = 2  # content words an overriding sentence shares with the one it overrides (absent a shared code name)
MIN_SHARE = 0.5  # ... and that share of the content words of the shorter of the two
# Words of the change itself: sharing them says nothing about being about the same thing.
_CHANGE_WORDS = frozenset(terms("version release deprecated removed replaced dropped superseded obsolete longer").words)


def overrides(later: str, earlier: str) -> bool:
    """Whether `later` says that what `earlier` says has changed (see the module docstring)."""
    if not CHANGED.search(later) or CHANGED.search(earlier) or later.strip() == earlier.strip():
        return False
    new, old = terms(later), terms(earlier)
    if new.identifiers & old.identifiers:
        return True
    ours, theirs = new.words - _CHANGE_WORDS, old.words - _CHANGE_WORDS
    shared = ours & theirs
    return len(shared) >= MIN_SHARED and len(shared) >= MIN_SHARE * min(len(ours), len(theirs))
