"""Whether a text holds a question's evidence string: the two tests every report uses.

- `holds_evidence`: the evidence string itself is in the text, case and runs of whitespace aside. "Evidence hit"
  of `smoldocs eval` and the quoted-answer rows of quote_eval use it.
- `evidence_sentence`: one sentence carries the evidence although our sentence split may cut it differently:
  it contains the string, or it is a sentence of at least MIN_INSIDE_WORDS words inside the evidence (evidence
  spanning sentences), or it holds at least MIN_WORD_SHARE of the evidence's distinct words. quote_eval's
  "evidence sentence in the top 1 / top 3" uses it.
"""

from __future__ import annotations

import re

from rag.text import alnum_runs

_SPACE = re.compile(r"\s+")
MIN_INSIDE_WORDS = 4
MIN_WORD_SHARE = 0.6


def normalized(text: str) -> str:
    """Lowercase, runs of whitespace as one space, no space at either end."""
    return _SPACE.sub(" ", text).strip().lower()


def holds_evidence(text: str, evidence: str | None) -> bool:
    """Whether `text` holds the evidence string, ignoring case and runs of whitespace."""
    if not evidence:
        return False
    return normalized(evidence) in normalized(text)


def evidence_sentence(sentence: str, evidence: str | None) -> bool:
    """Whether `sentence` carries the evidence in one of the three ways of the module docstring."""
    if not evidence:
        return False
    e, s = normalized(evidence), normalized(sentence)
    if e in s:
        return True
    if len(s.split()) >= MIN_INSIDE_WORDS and s.rstrip(".:") in e:
        return True
    wanted = set(alnum_runs(e))
    return bool(wanted) and len(wanted & set(alnum_runs(s))) / len(wanted) >= MIN_WORD_SHARE
