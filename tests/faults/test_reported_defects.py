"""The six defects found by hostile use (issue #17), each reproduced the way the user met it.

Each test failed before its fix; what it asserts is what the user sees: exit code, the one line, search results.
"""

from __future__ import annotations

import errno
import shutil
from pathlib import Path

import pytest

from faults_support import cli, index_args, search_args, search_hits
from rag.indexing import store
def hit_ids(run) -> list[str]:
    assert run.rc == 0, run.err
    return [hit["chunk_id"] for hit in search_hits(run)]


def test_1_a_line_separator_in_a_doc_does_not_make_the_index_unusable(tmp_path):
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "a.md").write_text("# Alpha\n\nalpha words\u2028beta words\u2029gamma\u0085delta.\n", encoding="utf-8")
    (docs / "b.md").write_text("# Other\n\nsomething unrelated entirely.\n", encoding="utf-8")
    built = cli(*index_args(docs, tmp_path / "idx"))
    assert built.rc == 0 and built.err_lines == []
    found = cli(*search_args("alpha beta", docs, tmp_path / "idx"))
    assert found.err_lines == []  # no "unusable ... rebuilding" on every search
    assert hit_ids(found)[0] == "a.md#0"
    text = search_hits(found)[0]["text"]
    assert "\u2028beta" in text and "\u2029gamma\u0085delta" in text


def test_2_a_symlink_loop_is_skipped_and_counted_not_a_traceback(docs, tmp_path):
    (docs / "loop-a").symlink_to(docs / "loop-b")
    (docs / "loop-b").symlink_to(docs / "loop-a")
    (docs / "self.md").symlink_to(docs / "self.md")
    (docs / "sub" / "up").symlink_to(docs)
    run = cli(*index_args(docs, tmp_path / "idx"))
    assert run.rc == 0, run.err
    assert "4 symlink loop" in run.out
    assert hit_ids(cli(*search_args("install guide", docs, tmp_path / "idx")))[0].startswith("guide.md#")


def test_3_a_binary_file_named_md_is_skipped_and_counted(docs, tmp_path):
    shutil.copy("/bin/ls", docs / "x.md")
    run = cli(*index_args(docs, tmp_path / "idx"))
    assert run.rc == 0 and "1 binary" in run.out
    for query in ("install guide", "quantization weights", "GLIBC ELF"):
        assert not [cid for cid in hit_ids(cli(*search_args(query, docs, tmp_path / "idx"))) if cid.startswith("x.md")]


def test_4_a_chat_with_one_bad_line_is_listed_with_its_valid_turns_and_not_rewritten(tmp_path):
    from agent.chats import ChatStore
    from agent.surfaces.tui.chat_list_screen import chat_line
    from tui_support import mixed_turn

    chats = ChatStore(tmp_path)
    with chats.create() as log:
        for question in ("first question", "second question", "third question"):
            for event in mixed_turn(question):
                log.record(event)
    lines = log.path.read_bytes().split(b"\n")
    second = next(i for i, line in enumerate(lines) if b"second question" in line and b"TurnStarted" in line)
    lines[second + 2] = b'{"type": "TextDelta", "te\x00\x00 garbled'
    log.path.write_bytes(b"\n".join(lines))
    damaged = log.path.read_bytes()

    [info] = chats.list_chats()
    assert info.title == "first question" and info.turns == 1 and info.damaged_after == 1
    assert "damaged after turn 1" in chat_line(info, current=False).plain
    chat = chats.load(info.chat_id)
    assert [t.question for t in chat.turns] == ["first question"]
    assert chat.turns[0].answer == mixed_turn("first question")[-1].answer
    chats.reopen(info.chat_id).close()  # opening it to continue is not continuing it yet
    assert log.path.read_bytes() == damaged


def test_5_damage_inside_the_embeddings_file_is_detected_and_rebuilt(docs, tmp_path):
    clean = hit_ids(cli(*search_args("quantization weights", docs, tmp_path / "clean")))
    assert cli(*index_args(docs, tmp_path / "idx")).rc == 0
    emb = next((tmp_path / "idx").glob("embeddings-*.npy"))
    data = bytearray(emb.read_bytes())
    middle = len(data) // 2
    data[middle : middle + 64] = b"\x7f" * 64  # still a loadable .npy: only the numbers change
    emb.write_bytes(bytes(data))
    found = cli(*search_args("quantization weights", docs, tmp_path / "idx"))
    [notice] = found.err_lines
    assert "unusable" in notice and "embeddings" in notice and "rebuilding" in notice
    assert hit_ids(found) == clean


def test_6_an_index_that_cannot_be_saved_exits_non_zero_and_leaves_the_old_one(docs, tmp_path, monkeypatch):
    assert cli(*index_args(docs, tmp_path / "idx")).rc == 0
    before = {p.name: p.read_bytes() for p in (tmp_path / "idx").iterdir()}
    (docs / "new.md").write_text("# New\n\n" + "fresh words about disks. " * 400)
    real_write = store.atomic_write

    def disk_full_on_bm25(path, data):
        if path.name.startswith("bm25-"):
            (path.parent / f".{path.name}.x.tmp").write_bytes(data[:100])  # what reached the disk
            (path.parent / f".{path.name}.x.tmp").unlink()  # atomic_write removes its own temp file
            raise OSError(errno.ENOSPC, "No space left on device")
        real_write(path, data)

    monkeypatch.setattr(store, "atomic_write", disk_full_on_bm25)
    run = cli(*index_args(docs, tmp_path / "idx"))
    assert run.rc != 0
    [line] = run.err_lines
    assert "could not save the index" in line and "No space left on device" in line
    assert "stored in" not in run.out
    assert {p.name: p.read_bytes() for p in (tmp_path / "idx").iterdir()} == before  # no partial files
