"""What an answer shows: only what the verifier supports. Everything else the model wrote is its unverified draft.

The model's words are split into claims and judged against the excerpts they cite; a claim that is not
`supported` is held back in the draft (the TUI shows it collapsed, `ask --json` under its own key, the Markdown
export leaves it out unless asked). In quote decoding the copied references are shown (they are the excerpts' own
words, cited by the system), and each claim written after one is judged against the chunk that reference cites.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from typing import Sequence

from agent.turn.quoting import QuoteUnit
from rag import markers
from rag.answering.extractive import QUOTE_LABEL, QuotedAnswer, quote_blocks, quoted_answer
from rag.verification.verdicts import ClaimVerdict, Judge, Verdict, Verification


@dataclass(frozen=True)
class Display:
    text: str  # what is shown as the answer
    draft: str  # the model's words that were not verified
    claims: tuple[ClaimVerdict, ...] = ()  # every claim of the model's, judged
    written: Verification | None = None  # free text: the verdicts of everything the model wrote, shown or not
    # The verdicts of `text` as shown, when they were judged piece by piece (quote decoding); None: the verdicts
    # that chose each shown claim, in `written`, stand (free text). Either way nothing shown is judged twice.
    checked: Verification | None = None


def close_code(text: str) -> str:
    """Close a code fence or span the model left open, so text appended after it is not swallowed by it."""
    if text.count("```") % 2:
        text += "\n```"
    elif text.count("`") % 2:
        text += "`"
    return text


def _tidy(text: str) -> str:
    text = re.sub(r"[ \t]+\n", "\n", text)
    text = re.sub(r"\n{3,}", "\n\n", text).strip()
    return text if re.search(r"\w", text) else ""


def free_display(model_text: str, judge: Judge, shown, lookup) -> Display:
    """Free, guarded or constrained text: supported claims shown in their order, the rest as the draft."""
    if not model_text.strip():
        return Display("", "", (), Verification((), ()))
    written = judge(model_text, shown, lookup)
    shown_parts: list[str] = []
    draft_parts: list[str] = []
    last = 0
    for c in written.claims:
        if c.verdict is not Verdict.SUPPORTED or not c.end > c.start >= last:
            continue
        between = model_text[last : c.start]
        draft_parts.append(between)
        if shown_parts:
            shown_parts.append("\n\n" if "\n" in between else " ")
        shown_parts.append(close_code(model_text[c.start : c.end].strip()))
        last = c.end
    draft_parts.append(model_text[last:])
    return Display("".join(shown_parts).strip(), _tidy("".join(draft_parts)), written.claims, written)


def cited_claim(unit: QuoteUnit) -> str:
    """The claim after a reference, carrying that reference's number unless it cites something itself."""
    claim = unit.claim.strip()
    return claim if markers.find(claim) else f"{claim} [{unit.n}]"


def quote_display(units: Sequence[QuoteUnit], judge: Judge, shown, lookup) -> Display:
    """References shown (cited by the system) unless the verifier judges one unsupported (then it and its claim
    are held back in the draft); each claim shown only when all of it is supported.

    `written` carries the claims' verdicts but no citation verdicts: a number the system gave a claim to check it
    is not the model's citation, and an unsupported claim held back must not weaken its reference's verdict."""
    blocks: list[str] = []
    draft: list[str] = []
    judged: list[ClaimVerdict] = []
    checked = Verification((), ())  # the shown blocks' verdicts, each at its place in the shown text
    for unit in units:
        reference = f"> {unit.reference} [{unit.n}]"
        verification = judge(reference, shown, lookup)
        if any(v.verdict is Verdict.UNSUPPORTED for v in verification.claims):
            draft.append(" ".join(filter(None, (unit.reference, unit.claim.strip()))))
            continue
        checked = checked.merged(at(verification, _next_block(blocks)))
        blocks.append(reference)
        if not unit.claim.strip():
            continue
        claim = cited_claim(unit)
        verification = judge(claim, shown, lookup)
        judged += verification.claims
        if verification.claims and all(v.verdict is Verdict.SUPPORTED for v in verification.claims):
            checked = checked.merged(at(verification, _next_block(blocks)))
            blocks.append(claim)
        else:
            draft.append(unit.claim.strip())
    # The claims keep their verdicts (judged against their reference's chunk); no citation verdicts come from them.
    return Display("\n\n".join(blocks), "\n\n".join(draft), tuple(judged), Verification(tuple(judged), ()), checked)


def _next_block(blocks: Sequence[str]) -> int:
    """Where the next block starts in the shown text: after the blocks so far and a blank line each."""
    return sum(len(b) + 2 for b in blocks)


def at(verification: Verification, offset: int) -> Verification:
    """`verification` of a piece of a text, its claims' spans moved to where the piece starts in that text."""
    claims = tuple(replace(c, start=c.start + offset, end=c.end + offset) for c in verification.claims)
    return replace(verification, claims=claims)


def verified_quotes(
    answer: QuotedAnswer | None, judge: Judge, shown, lookup
) -> tuple[QuotedAnswer | None, Verification | None]:
    """The quoted answer less every quote holding a claim the verifier judges unsupported (a document's own
    sentence can be one: a fragment, a line that reads as something else), with the verdicts of what is left; None
    when nothing is left."""
    if answer is None:
        return None, None
    verification = judge(answer.text, shown, lookup)
    if not answer.quotes:
        return answer, verification
    kept, start = [], len(QUOTE_LABEL) + 2  # each block follows the label (or the block before) and a blank line
    for quote, block in zip(answer.quotes, quote_blocks(answer.quotes)):
        end = start + len(block)
        if not any(c.verdict is Verdict.UNSUPPORTED and start <= c.start < end for c in verification.claims):
            kept.append(quote)
        start = end + 2
    if len(kept) == len(answer.quotes):
        return answer, verification
    left = quoted_answer(kept)
    return (left, judge(left.text, shown, lookup)) if left else (None, None)
