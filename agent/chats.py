"""Saved chats: one append-only JSONL file of events per chat, listed, resumed and exported to Markdown.

Every line is one event, flushed and fsync'd as it is written, so killing the app loses at most the token
in flight. A torn last line is ignored on load and cut off before the file is appended to again.
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
import time
import uuid
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, Callable, Iterable

from agent.errors import AgentError
from agent.events import (
    Answer,
    AnswerFinished,
    CitationVerdict,
    ClaimVerdict,
    ContextBuilt,
    ErrorEvent,
    Event,
    SearchFinished,
    SearchStarted,
    TextDelta,
    TurnStarted,
)
from models.paths import data_dir
from rag.store import atomic_write
from rag.types import Chunk, Hit

FORMAT_VERSION = 1
_EVENT_TYPES = {
    cls.__name__: cls
    for cls in (TurnStarted, SearchStarted, SearchFinished, ContextBuilt, TextDelta, AnswerFinished, ErrorEvent)
}


class ChatStoreError(AgentError):
    """A saved chat cannot be read or written."""


def _known(cls, data: dict) -> dict:
    # Files written by a newer smoldocs may carry fields this one does not know: drop them.
    names = {f.name for f in dataclasses.fields(cls)}
    return {k: v for k, v in data.items() if k in names}


def hit_from_dict(data: dict) -> Hit:
    data = _known(Hit, data)
    data["heading_path"] = tuple(data.get("heading_path", ()))
    return Hit(**data)


def answer_to_dict(answer: Answer) -> dict:
    """A JSON-ready dict of `answer`, nested verdicts included."""
    return dataclasses.asdict(answer)


def answer_from_dict(data: dict) -> Answer:
    """The Answer `answer_to_dict` wrote."""
    data = _known(Answer, data)
    data["citations"] = [CitationVerdict(**_known(CitationVerdict, c)) for c in data.get("citations", [])]
    data["claims"] = [
        ClaimVerdict(**{**_known(ClaimVerdict, c), "citations": tuple(c.get("citations", ()))})
        for c in data.get("claims", [])
    ]
    return Answer(**data)


def event_to_dict(event: Event) -> dict:
    """One event as a JSON-ready dict tagged with its type name."""
    return {"type": type(event).__name__, **dataclasses.asdict(event)}


def event_from_dict(data: dict) -> Event | None:
    """The event `event_to_dict` wrote; None for a type this version does not know."""
    cls = _EVENT_TYPES.get(data.get("type", ""))
    if cls is None:
        return None
    fields = _known(cls, data)
    if cls is AnswerFinished:
        return AnswerFinished(answer_from_dict(fields["answer"]))
    if cls is SearchStarted:
        fields["doc_ids"] = tuple(fields.get("doc_ids", ()))
    if cls is SearchFinished:
        fields["hits"] = tuple(hit_from_dict(h) for h in fields.get("hits", ()))
        fields["packed"] = tuple(fields.get("packed", ()))
        fields["omissions"] = tuple(fields.get("omissions", ()))
    if cls is ContextBuilt:
        fields["omissions"] = tuple(fields.get("omissions", ()))
    return cls(**fields)


@dataclass
class SavedTurn:
    """One question of a saved chat and every event recorded for it."""

    question: str
    events: list[Event] = field(default_factory=list)

    @property
    def answer(self) -> Answer:
        """The final answer; an answer cut off by a kill is what streamed so far, marked cancelled."""
        for event in reversed(self.events):
            if isinstance(event, AnswerFinished):
                return event.answer
        text = "".join(e.text for e in self.events if isinstance(e, TextDelta))
        return Answer(question=self.question, text=text, status="cancelled", model_text=text)

    @property
    def complete_events(self) -> list[Event]:
        """The events, ending in an AnswerFinished even when the app died before writing one."""
        if any(isinstance(e, AnswerFinished) for e in self.events):
            return list(self.events)
        return [*self.events, AnswerFinished(self.answer)]


@dataclass(frozen=True)
class ChatInfo:
    chat_id: str
    title: str  # the first question
    created: float  # epoch seconds
    updated: float
    turns: int
    path: Path

    @property
    def when(self) -> str:
        return datetime.fromtimestamp(self.updated).strftime("%Y-%m-%d %H:%M")


@dataclass
class SavedChat:
    info: ChatInfo
    meta: dict
    turns: list[SavedTurn]


class ChatLog:
    """The open file of one chat: `record(event)` appends one durable line."""

    def __init__(self, path: Path, meta: dict | None = None) -> None:
        self.path = path
        self.chat_id = path.stem
        path.parent.mkdir(parents=True, exist_ok=True)
        _cut_torn_tail(path)
        self._fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        if meta is not None and os.fstat(self._fd).st_size == 0:
            self._write({"type": "chat", "version": FORMAT_VERSION, "created": time.time(), **meta})

    def record(self, event: Event) -> None:
        if isinstance(event, TextDelta) and not event.text:
            return
        self._write(event_to_dict(event))

    def _write(self, data: dict) -> None:
        line = (json.dumps(data, ensure_ascii=False, default=str) + "\n").encode()
        os.write(self._fd, line)
        os.fsync(self._fd)

    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1

    def __enter__(self) -> "ChatLog":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def _cut_torn_tail(path: Path) -> None:
    """Drop a last line a kill left half-written, so the next line starts clean."""
    if not path.exists():
        return
    data = path.read_bytes()
    if data and not data.endswith(b"\n"):
        with open(path, "r+b") as f:
            f.truncate(data.rfind(b"\n") + 1)


def _read_lines(path: Path) -> list[dict]:
    lines = path.read_bytes().split(b"\n")
    records = []
    for i, raw in enumerate(lines):
        if not raw.strip():
            continue
        try:
            records.append(json.loads(raw))
        except ValueError:
            if i == len(lines) - 1:  # torn by a kill mid-write: the token in flight
                continue
            raise ChatStoreError(f"saved chat {path} is damaged at line {i + 1}: delete or repair it")
    return records


def _parse(path: Path) -> SavedChat:
    records = _read_lines(path)
    meta: dict = {}
    turns: list[SavedTurn] = []
    for data in records:
        if data.get("type") == "chat":
            meta = data
            continue
        event = event_from_dict(data)
        if isinstance(event, TurnStarted):
            turns.append(SavedTurn(event.question, [event]))
        elif event is not None and turns:
            turns[-1].events.append(event)
    stat = path.stat()
    created = float(meta.get("created", stat.st_mtime))
    title = turns[0].question if turns else "(empty chat)"
    info = ChatInfo(path.stem, title, created, stat.st_mtime, len(turns), path)
    return SavedChat(info, meta, turns)


class ChatStore:
    """The folder of saved chats, by default `data_dir()/chats`."""

    def __init__(self, root: Path | None = None) -> None:
        self.root = Path(root) if root is not None else data_dir() / "chats"

    def create(self, **meta: Any) -> ChatLog:
        """A new chat file; `meta` (docs folder, model) goes in its first line."""
        stamp = datetime.now().strftime("%Y%m%d-%H%M%S")
        path = self.root / f"{stamp}-{uuid.uuid4().hex[:6]}.jsonl"
        return ChatLog(path, {k: v for k, v in meta.items() if v is not None})

    def reopen(self, chat_id: str) -> ChatLog:
        """The log of a saved chat, to append the next questions of a resumed chat."""
        return ChatLog(self._path(chat_id))

    def list_chats(self) -> list[ChatInfo]:
        """Saved chats, most recently updated first; unreadable files are skipped."""
        if not self.root.is_dir():
            return []
        infos = []
        for path in self.root.glob("*.jsonl"):
            try:
                infos.append(_parse(path).info)
            except (ChatStoreError, OSError):
                continue
        return sorted(infos, key=lambda i: (i.updated, i.chat_id), reverse=True)

    def load(self, chat_id: str) -> SavedChat:
        return _parse(self._path(chat_id))

    def export(self, chat_id: str, dest: Path | None = None, lookup: Callable[[str], Chunk | None] | None = None) -> Path:
        """Write the chat as Markdown with its sources as footnotes; returns the file written."""
        chat = self.load(chat_id)
        dest = Path(dest) if dest is not None else self.root.parent / "exports" / f"{chat_id}.md"
        atomic_write(dest, chat_markdown(chat, lookup).encode())  # never a half-written export
        return dest

    def _path(self, chat_id: str) -> Path:
        if not re.fullmatch(r"[\w.-]+", chat_id):
            raise ChatStoreError(f"no saved chat named {chat_id!r}: see the chat list (Ctrl+O)")
        path = self.root / f"{chat_id}.jsonl"
        if not path.exists():
            raise ChatStoreError(f"no saved chat named {chat_id!r}: see the chat list (Ctrl+O)")
        return path


def excerpts(events: Iterable[Event]) -> dict[int, Hit]:
    """The numbered excerpts one turn showed the model: ledger number -> hit.

    SearchFinished lists the hits in rank order and the numbers of those kept; the kept hits are the ones
    no omission names, in the same order.
    """
    found: dict[int, Hit] = {}
    for event in events:
        if not isinstance(event, SearchFinished) or event.error:
            continue
        left_out = {omitted_rank(o) for o in event.omissions}
        kept = [h for rank, h in enumerate(event.hits, 1) if rank not in left_out]
        for n, hit in zip(event.packed, kept):
            found.setdefault(n, hit)
    return found


def omitted_rank(omission: Any) -> int | None:
    """The rank of the hit an omission names (omissions are rag.packing.Omission, or dicts once saved)."""
    if isinstance(omission, dict):
        return omission.get("rank")
    return getattr(omission, "rank", None)


def omission_reason(omission: Any) -> str:
    """Why a hit was left out, in words: `over budget`."""
    reason = omission.get("reason") if isinstance(omission, dict) else getattr(omission, "reason", omission)
    return str(reason).replace("_", " ")


_MARKER = re.compile(r"\[([1-9][0-9]*(?:[ \t]*,[ \t]*[1-9][0-9]*)*)\]")


def chat_markdown(chat: SavedChat, lookup: Callable[[str], Chunk | None] | None = None) -> str:
    """The chat as Markdown: each question, its answer with `[^n]` footnotes, made-up numbers flagged."""
    out = [f"# {chat.info.title}", ""]
    stamp = datetime.fromtimestamp(chat.info.created).strftime("%Y-%m-%d %H:%M")
    details = [f"saved {stamp}"]
    for key, label in (("docs_dir", "docs"), ("model", "model")):
        if chat.meta.get(key):
            details.append(f"{label}: `{chat.meta[key]}`")
    out += ["_" + " · ".join(details) + "_", ""]
    notes: list[str] = []
    for turn in chat.turns:
        answer = turn.answer
        shown = excerpts(turn.events)
        verdicts = {c.n: c for c in answer.citations}
        labels: dict[int, str] = {}

        def footnote(match: re.Match) -> str:
            parts = []
            for number in (int(p) for p in match.group(1).split(",")):
                verdict = verdicts.get(number)
                if number in answer.unknown or (verdict is not None and verdict.verdict == "made_up"):
                    parts.append(f"[{number}?]")
                    continue
                if number not in labels:
                    labels[number] = str(len(notes) + 1)
                    notes.append(_note(labels[number], number, verdict, shown.get(number), lookup))
                parts.append(f"[^{labels[number]}]")
            return "".join(parts)

        out += [f"## {turn.question}", ""]
        out += [_MARKER.sub(footnote, answer.text.strip()) or "_(no answer)_", ""]
        made_up = sorted(set(answer.unknown) | {c.n for c in answer.citations if c.verdict == "made_up"})
        if made_up:
            listed = ", ".join(f"[{n}]" for n in made_up)
            out += [f"> **Made-up citation{'s' if len(made_up) > 1 else ''}:** {listed} cite no excerpt the answer was given.", ""]
        if answer.status != "answered":
            out += [f"_({answer.status.replace('_', ' ')})_", ""]
    if notes:
        out += notes + [""]
    return "\n".join(out)


def _note(label: str, number: int, verdict: CitationVerdict | None, hit: Hit | None, lookup) -> str:
    chunk_id = (verdict.chunk_id if verdict else None) or (hit.chunk_id if hit else None)
    chunk = lookup(chunk_id) if (lookup and chunk_id) else None
    source = chunk or hit
    if source is not None:
        where = f"{source.uri} lines {source.lines}"
        if source.heading:
            where += f", {source.heading}"
    elif verdict is not None and verdict.uri:
        where = verdict.uri
    else:
        where = f"excerpt {number} (source not recorded)"
    judged = f" — {verdict.verdict.replace('_', ' ')}" if verdict else ""
    return f"[^{label}]: {where}{judged}"
