"""A saved chat exported: Markdown with `[^n]` footnotes naming each source and its verdict, or JSON.

Both mark a citation whose source changed or vanished since the answer was given (with a lookup of the index),
and carry the chat's notes (a switch of folder or model) where they happened between the turns.
"""

from __future__ import annotations

import re
from datetime import datetime
from typing import Callable

from agent.chats.codec import answer_to_dict
from agent.chats.stale import stale_citations
from agent.chats.saved import SavedChat, SavedNote
from agent.events import shown_hits
from rag import markers
from rag.printable import one_line
from rag.types import Chunk, Hit
from rag.verification.verdicts import CitationVerdict, Verdict


def chat_markdown(chat: SavedChat, lookup: Callable[[str], Chunk | None] | None = None, drafts: bool = False) -> str:
    """The chat as Markdown: each question, its answer with `[^n]` footnotes, made-up numbers flagged.

    The model's unverified drafts are left out unless `drafts`; then each follows its answer, marked as such."""
    out = [f"# {_plain(chat.info.title)}", ""]
    stamp = datetime.fromtimestamp(chat.info.created).strftime("%Y-%m-%d %H:%M")
    details = [f"saved {stamp}"]
    for key, label in (("docs_dir", "docs"), ("model", "model")):
        if chat.meta.get(key):
            details.append(f"{label}: `{one_line(str(chat.meta[key]))}`")
    out += ["_" + " · ".join(details) + "_", ""]
    notes: list[str] = []
    for number, turn in enumerate(chat.turns):
        out += _noted(chat.notes, number)
        answer = turn.answer
        shown = shown_hits(turn.events)
        verdicts = {c.n: c for c in answer.citations}
        stale = stale_citations(answer, turn.events, lookup) if lookup else {}
        labels: dict[int, str] = {}

        def footnotes(numbers: tuple[int, ...]) -> str:
            parts = []
            for number in numbers:
                verdict = verdicts.get(number)
                if verdict is not None and verdict.verdict is Verdict.MADE_UP:
                    parts.append(f"[{number}?]")
                    continue
                if number not in labels:
                    labels[number] = str(len(notes) + 1)
                    notes.append(_note(labels[number], number, verdict, shown.get(number), lookup, stale.get(number)))
                parts.append(f"[^{labels[number]}]")
            return "".join(parts)

        out += [f"## {_plain(turn.question)}", ""]
        out += [markers.replace(answer.text.strip(), footnotes) or "_(no answer)_", ""]
        exported = answer.text + (answer.draft if drafts else "")
        made_up = [n for n in answer.unknown if n in markers.numbers(exported)]  # a draft left out flags nothing
        if made_up:
            listed = ", ".join(f"[{n}]" for n in made_up)
            out += [f"> **Made-up citation{'s' if len(made_up) > 1 else ''}:** {listed} cite no excerpt the answer was given.", ""]
        if answer.status != "answered":
            out += [f"_({answer.status.replace('_', ' ')})_", ""]
        if drafts and answer.draft.strip():
            out += ["_Unverified draft (the model's words, not supported by the docs):_", ""]
            out += [markers.replace(answer.draft.strip(), lambda ns: "(" + ", ".join(map(str, ns)) + ")"), ""]
    out += _noted(chat.notes, len(chat.turns))
    if notes:
        out += notes + [""]
    return "\n".join(out)


_MARKDOWN = re.compile(r"([\\`*_\[\]<>])")


def _plain(text: str) -> str:
    """Typed or quoted text as one line of plain Markdown: controls and line breaks escaped (one_line), and the
    Markdown characters too, so a `_` or `[^1]` neither ends italics nor makes a footnote, and a line break in a
    question cannot start a heading or a footnote of its own. Text without them is left as it is."""
    return _MARKDOWN.sub(r"\\\1", one_line(text))


def _noted(notes: list[SavedNote], after: int) -> list[str]:
    """The Markdown lines of the notes made after the first `after` turns: each one short italic line (a note may
    quote a folder name, so it is made plain)."""
    lines = []
    for note in notes:
        if note.after == after:
            lines += ["_" + _plain(note.text) + "_", ""]
    return lines


def _note(label: str, number: int, verdict: CitationVerdict | None, hit: Hit | None, lookup, stale: str | None) -> str:
    chunk_id = (verdict.chunk_id if verdict else None) or (hit.chunk_id if hit else None)
    chunk = lookup(chunk_id) if (lookup and chunk_id) else None
    source = chunk or hit
    if source is not None:
        where = f"{source.uri} {source.where}"
        if source.heading:
            where += f", {source.heading}"
    elif verdict is not None and verdict.uri:
        where = verdict.uri
    else:
        where = f"excerpt {number} (source not recorded)"
    judged = f" — {verdict.verdict.label}" if verdict else ""
    if stale:
        judged += f" — **stale**: {STALE_NOTES[stale]}"
    return f"[^{label}]: {where}{judged}"


STALE_NOTES = {
    "changed": "the source text has changed since this answer",
    "vanished": "the source is no longer in the index",
}


def chat_json(chat: SavedChat, lookup: Callable[[str], Chunk | None] | None = None) -> dict:
    """The chat as one JSON object: each turn's question, answer (as `ask --json` prints it) and stale citations;
    `notes`, when the chat has any, lists each with `after`, the number of turns before it."""
    turns = []
    for turn in chat.turns:
        stale = stale_citations(turn.answer, turn.events, lookup) if lookup else {}
        stale_numbers = {str(n): why for n, why in sorted(stale.items())}
        turns.append({"question": turn.question, "answer": answer_to_dict(turn.answer), "stale": stale_numbers})
    data = {"chat_id": chat.info.chat_id, "title": chat.info.title, "meta": chat.meta, "turns": turns}
    if chat.notes:  # added only when there are notes: a chat without them exports as it always has
        data["notes"] = [{"after": n.after, "text": one_line(n.text)} for n in chat.notes]
    return data
