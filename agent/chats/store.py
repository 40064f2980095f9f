"""Saved chats: one append-only JSONL file of events per chat, listed, resumed and exported.

Every line is one event, flushed and fsync'd as it is written, so killing the app loses at most the token
in flight. A torn last line is ignored on load and cut off before the file is appended to again.
"""

from __future__ import annotations

import json
import os
import re
import time
import uuid
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, Callable, Iterable

from agent.chats.codec import event_from_dict, event_to_dict
from agent.errors import AgentError
from agent.events import Answer, AnswerFinished, Event, SearchFinished, TextDelta, TurnStarted
from models.paths import data_dir
from rag.store import atomic_write
from rag.types import Chunk, Hit

FORMAT_VERSION = 1


class ChatStoreError(AgentError):
    """A saved chat cannot be read or written."""


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
        """Write the chat as Markdown with its sources as footnotes (JSON when `dest` ends in .json); returns the
        file written. With `lookup` (the index), citations whose source changed since are marked stale."""
        from agent.chats.export import chat_json, chat_markdown

        chat = self.load(chat_id)
        dest = Path(dest) if dest is not None else self.root.parent / "exports" / f"{chat_id}.md"
        if dest.suffix == ".json":
            data = (json.dumps(chat_json(chat, lookup), ensure_ascii=False, indent=2) + "\n").encode()
        else:
            data = chat_markdown(chat, lookup).encode()
        atomic_write(dest, data)  # never a half-written export
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
        left_out = {o.rank for o in event.omissions}
        kept = [h for rank, h in enumerate(event.hits, 1) if rank not in left_out]
        for n, hit in zip(event.packed, kept):
            found.setdefault(n, hit)
    return found


