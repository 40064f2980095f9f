"""Saved chats damaged in each way: listed (never hidden) with their intact turns, never rewritten until continued."""

from __future__ import annotations

import json

import pytest

from agent.chats import ChatStore
from agent.surfaces.tui.chat_list_screen import chat_line
from tui_support import mixed_turn

QUESTIONS = ("first question", "second question", "third question")


@pytest.fixture(scope="module")
def template(tmp_path_factory) -> bytes:
    """A three-turn chat file, written once (every line is fsync'd, which is slow on some disks)."""
    chats = ChatStore(tmp_path_factory.mktemp("template"))
    with chats.create(docs_dir="docs", model="m") as log:
        for question in QUESTIONS:
            for event in mixed_turn(question):
                log.record(event)
    return log.path.read_bytes()


@pytest.fixture
def saved_chat(tmp_path, template):
    path = tmp_path / "chats" / "20250101-000000-abcdef.jsonl"
    path.parent.mkdir()
    path.write_bytes(template)
    return ChatStore(path.parent), path


def line_of(lines: list[bytes], question: str, offset: int = 0) -> int:
    return next(i for i, line in enumerate(lines) if b"TurnStarted" in line and question.encode() in line) + offset


def replace_line(n_from_question: tuple[str, int], new: bytes):
    def damage(data: bytes) -> bytes:
        lines = data.split(b"\n")
        lines[line_of(lines, *n_from_question)] = new
        return b"\n".join(lines)

    return damage


def zero_block(data: bytes) -> bytes:
    lines = data.split(b"\n")
    at = sum(len(line) + 1 for line in lines[: line_of(lines, "second question", 2)])
    return data[:at] + bytes(300) + data[at + 300 :]  # a block of zeros, as a crash can leave


# (damage, intact turns the user sees, the damage mark's turn or None)
DAMAGES = {
    "torn-last-line": (lambda d: d + b'{"type": "TextDelta", "te', 3, None),
    "garbage-line": (replace_line(("second question", 2), b"not json at all"), 1, 1),
    "zero-block": (zero_block, 1, 1),
    "invalid-utf8": (replace_line(("second question", 1), b'{"type": "TextDelta", "text": "\xff\xfe"}'), 1, 1),
    "json-nested-too-deep": (replace_line(("second question", 2), b"[" * 100_000), 1, 1),  # json recurses
    "json-not-an-object": (replace_line(("third question", 1), b"[1, 2, 3]"), 2, 2),
    "event-missing-fields": (replace_line(("third question", 0), b'{"type": "TurnStarted"}'), 2, 2),
    "answer-malformed": (replace_line(("first question", 5), b'{"type": "AnswerFinished", "answer": 7}'), 0, 0),
    "header-damaged": (replace_line(("first question", -1), b'{"type": "chat", "created": '), 0, 0),
    "emptied": (lambda d: b"", 0, None),
    "random-bytes": (lambda d: bytes(range(256)) * 8 + b"\n" + d[:50], 0, 0),
}


@pytest.mark.parametrize("kind", list(DAMAGES))
def test_a_damaged_chat_is_listed_loaded_and_only_rewritten_when_continued(saved_chat, kind):
    damage, intact, mark = DAMAGES[kind]
    chats, path = saved_chat
    path.write_bytes(damage(path.read_bytes()))
    damaged = path.read_bytes()

    [info] = chats.list_chats()  # never hidden
    assert info.turns == intact and info.damaged_after == mark
    shown = chat_line(info, current=False).plain
    assert ("damaged after turn" in shown) == (mark is not None)
    chat = chats.load(info.chat_id)
    assert [t.question for t in chat.turns] == list(QUESTIONS[:intact])
    for turn, question in zip(chat.turns, QUESTIONS):
        assert turn.answer == mixed_turn(question)[-1].answer  # intact turns come back whole
    log = chats.reopen(info.chat_id)
    assert path.read_bytes() == damaged  # listing, loading and reopening never write

    for event in mixed_turn("a new question"):  # the user continues the chat
        log.record(event)
    log.close()
    again = chats.load(info.chat_id)
    assert [t.question for t in again.turns] == [*QUESTIONS[:intact], "a new question"]
    assert again.info.damaged_after is None
    if mark is not None:
        assert log.backup is not None and log.backup.read_bytes() == damaged  # nothing lost
        assert [i.chat_id for i in chats.list_chats()] == [info.chat_id]  # the copy is not a second chat
    else:
        assert log.backup is None


def test_an_unreadable_chat_is_listed_with_the_reason(saved_chat, monkeypatch):
    chats, path = saved_chat
    real_read = type(path).read_bytes

    def denied(self):
        if self == path:
            raise PermissionError(13, "Permission denied")
        return real_read(self)

    monkeypatch.setattr(type(path), "read_bytes", denied)
    [info] = chats.list_chats()
    assert info.title == "(unreadable chat)" and "Permission denied" in info.damage
    assert "damaged after turn 0" in chat_line(info, current=False).plain


def test_a_lone_surrogate_in_a_question_round_trips(tmp_path):
    chats = ChatStore(tmp_path)
    with chats.create() as log:
        for event in mixed_turn("odd \udc80 question \u2028 here"):
            log.record(event)
    [info] = chats.list_chats()
    assert info.damaged_after is None and info.title == "odd \udc80 question \u2028 here"
    assert json.loads(log.path.read_bytes().split(b"\n")[1])["question"] == "odd \udc80 question \u2028 here"
