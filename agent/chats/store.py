"""Saved chats: one append-only JSONL file of events per chat, listed, resumed and exported.

Every line is one event, flushed and fsync'd as it is written, so killing the app loses at most the token
in flight. A torn last line is ignored on load and cut off before the file is appended to again.

A damaged line (garbled bytes, a zero-filled block, an event that does not parse) never hides a chat: it lists and
loads with the turns intact before the damage, marked "damaged after turn N". Reading never writes; only when the
user continues the chat is the file cut back to its intact turns, the damaged original kept beside it.
"""

from __future__ import annotations

import json
import os
import re
import time
import uuid
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any, Callable

from agent.chats.codec import event_from_dict, event_to_dict
from agent.chats.export import chat_json, chat_markdown
from agent.chats.saved import ChatInfo, SavedChat, SavedNote, SavedTurn, chat_text
from agent.errors import AgentError, UsageError
from agent.events import Event, TextDelta, TurnStarted
from models.paths import data_dir
from rag.indexing.store import atomic_write
from rag.types import Chunk

FORMAT_VERSION = 1
NOTE = "note"  # a record of its own, not a turn event: a line the chat noted between turns (a switch)


class ChatStoreError(AgentError):
    """A saved chat cannot be read or written."""


class ChatLog:
    """The file of one chat: `record(event)` appends one durable line.

    A resumed chat's file is opened (and a torn or damaged tail cut off) only at its first new line, so opening
    a chat to read it never changes it.
    """

    def __init__(self, path: Path, meta: dict | None = None) -> None:
        self.path = path
        self.chat_id = path.stem
        self.backup: Path | None = None  # where the damaged original went when the chat was continued
        self._fd = -1
        if meta is not None:
            try:
                self._open()
                if os.fstat(self._fd).st_size == 0:
                    self._write({"type": "chat", "version": FORMAT_VERSION, "created": time.time(), **meta})
            except OSError:
                self.close()  # no descriptor left open on a chat that could not be started
                raise

    def record(self, event: Event) -> None:
        if isinstance(event, TextDelta) and not event.text:
            return
        self._write(event_to_dict(event))

    def note(self, text: str) -> None:
        """A line the chat notes between turns (a switch): a `note` record, which versions before it skip."""
        self._write({"type": NOTE, "text": text, "at": time.time()})

    def _open(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.backup = _cut_to_intact(self.path)
        self._fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)

    def _write(self, data: dict) -> None:
        if self._fd < 0:
            self._open()
        # A lone surrogate cannot be UTF-8: written as the JSON escape \\udcXX, it reads back as itself.
        line = (json.dumps(data, ensure_ascii=False, default=str) + "\n").encode("utf-8", "backslashreplace")
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


class UnsavedLog:
    """The log of a chat whose file could not be created (folder is a file, read-only, disk full): records nothing."""

    chat_id = None

    def __init__(self, reason: str) -> None:
        self.reason = reason

    def record(self, event: Event) -> None:
        pass

    def note(self, text: str) -> None:
        pass

    def close(self) -> None:
        pass


def _cut_to_intact(path: Path) -> Path | None:
    """Before appending: drop a torn last line, or cut a damaged file back to its intact turns.

    Returns where the damaged original was kept (None when nothing was damaged), so nothing is lost.
    """
    if not path.exists():
        return None
    data = path.read_bytes()
    scan = _scan(data)
    if scan.intact_end == len(data):
        return None
    if not scan.damage:  # only a torn last line: the token in flight when the app died
        with open(path, "r+b") as f:
            f.truncate(scan.intact_end)
        return None
    backup = path.with_name(f"{path.name}.damaged-{int(time.time())}")
    atomic_write(backup, data)
    atomic_write(path, data[: scan.intact_end])
    return backup


@dataclass(frozen=True)
class _Scan:
    """The records of a chat file up to its first damaged line, and where its intact part ends (in bytes)."""

    records: list[dict]
    intact_end: int
    damage: str = ""


def _scan(data: bytes) -> _Scan:
    lines = data.split(b"\n")
    records: list[dict] = []
    offset = 0
    turn_record, turn_offset = -1, 0  # the running turn's TurnStarted: its index in records, its byte offset
    finished = True  # whether the running turn has its AnswerFinished
    for i, raw in enumerate(lines):
        start, offset = offset, offset + len(raw) + 1
        if not raw.strip():
            continue
        record, problem = _read_line(raw)
        if record is not None:
            if record["type"] == "TurnStarted":
                turn_record, turn_offset, finished = len(records), start, False
            elif record["type"] == "AnswerFinished":
                finished = True
            records.append(record)
            continue
        if i == len(lines) - 1:  # no newline after it: torn by a kill mid-write, the token in flight
            return _Scan(records, start)
        if turn_record >= 0 and not finished:  # the damage fell inside a turn: keep the turns before it
            return _Scan(records[:turn_record], turn_offset, f"line {i + 1} {problem}")
        return _Scan(records, start, f"line {i + 1} {problem}")
    return _Scan(records, len(data))


def _read_line(raw: bytes) -> tuple[dict | None, str]:
    """One saved record, or None and why the line is not one."""
    try:
        record = json.loads(raw)
    except (ValueError, RecursionError):  # UnicodeDecodeError included; json nests by recursion
        return None, "is not readable JSON"
    if not isinstance(record, dict) or not isinstance(record.get("type"), str):
        return None, "is not a saved event"
    if record["type"] == NOTE:
        return (record, "") if isinstance(record.get("text"), str) else (None, "is a damaged note")
    if record["type"] != "chat":
        try:
            event_from_dict(record)
        except (TypeError, KeyError, ValueError, AttributeError):
            return None, f"is a damaged {record['type']} event"
    return record, ""


def _parse(path: Path) -> SavedChat:
    scan = _scan(path.read_bytes())
    meta: dict = {}
    turns: list[SavedTurn] = []
    notes: list[SavedNote] = []
    for data in scan.records:
        if data["type"] == "chat":
            meta = data
            continue
        if data["type"] == NOTE:
            notes.append(SavedNote(len(turns), data["text"]))
            continue
        event = event_from_dict(data)
        if isinstance(event, TurnStarted):
            turns.append(SavedTurn(event.question, [event]))
        elif event is not None and turns:
            turns[-1].events.append(event)
    stat = path.stat()
    created = meta.get("created")
    created = float(created) if isinstance(created, (int, float)) else stat.st_mtime
    title = turns[0].question if turns else ("(damaged chat)" if scan.damage else "(empty chat)")
    damaged_after = len(turns) if scan.damage else None
    info = ChatInfo(path.stem, title, created, stat.st_mtime, len(turns), path, damaged_after, scan.damage,
                    chat_text(turns))
    return SavedChat(info, meta, turns, notes)


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
        """Saved chats, most recently updated first; a damaged one is listed with its intact turns and a mark."""
        if not self.root.is_dir():
            return []
        infos = []
        for path in self.root.glob("*.jsonl"):
            try:
                infos.append(_parse(path).info)
            except OSError as exc:  # unreadable (permissions): still listed, so the user knows it is there
                why = f"cannot be read ({exc.strerror or exc})"
                infos.append(ChatInfo(path.stem, "(unreadable chat)", 0.0, 0.0, 0, path, 0, why))
        return sorted(infos, key=lambda i: (i.updated, i.chat_id), reverse=True)

    def load(self, chat_id: str) -> SavedChat:
        return _parse(self._path(chat_id))

    def export(
        self, chat_id: str, dest: Path | None = None, lookup: Callable[[str], Chunk | None] | None = None,
        drafts: bool = False, overwrite: bool = False,
    ) -> Path:
        """Write the chat as Markdown with its sources as footnotes (JSON when `dest` ends in .json); returns the
        file written. With `lookup` (the index), citations whose source changed since are marked stale. The
        model's unverified drafts go into the Markdown only with `drafts` (JSON always has them, apart).

        A `dest` that exists is replaced only with `overwrite`: it may be anything of the user's. The default
        place, smoldocs' own exports folder, is brought up to date."""
        chat = self.load(chat_id)
        if dest is not None and not overwrite and (Path(dest).exists() or Path(dest).is_symlink()):
            raise UsageError(f"{dest} already exists: add --force to replace it, or give another file name")
        dest = Path(dest) if dest is not None else self.root.parent / "exports" / f"{chat_id}.md"
        if dest.suffix == ".json":
            data = (json.dumps(chat_json(chat, lookup), ensure_ascii=False, indent=2) + "\n").encode()
        else:
            data = chat_markdown(chat, lookup, drafts).encode()
        try:
            atomic_write(dest, data)  # never a half-written export
        except OSError as exc:  # its own message names the temp file, not the user's path
            raise ChatStoreError(f"cannot write {dest}: {exc.strerror or type(exc).__name__}: choose another place") from None
        return dest

    def _path(self, chat_id: str) -> Path:
        if not re.fullmatch(r"[\w.-]+", chat_id):
            raise ChatStoreError(f"no saved chat named {chat_id!r}: see the chat list (Ctrl+O)")
        path = self.root / f"{chat_id}.jsonl"
        if not path.exists():
            raise ChatStoreError(f"no saved chat named {chat_id!r}: see the chat list (Ctrl+O)")
        return path
