"""Hostile file names and contents: every Unicode line break, NUL, invalid UTF-8, a 10 MB line, 10k tiny files."""

from __future__ import annotations

import os

from faults_support import cli, index_args, search_args, search_hits

# Every code point str.splitlines() breaks at, then CRLF.
LINE_BREAKS = ["\n", "\r", "\v", "\f", "\x1c", "\x1d", "\x1e", "\x85", "\u2028", "\u2029", "\r\n"]


def hits(run) -> list[dict]:
    assert run.rc == 0, run.err
    return search_hits(run)


def test_every_line_break_in_contents_and_names_round_trips(tmp_path):
    docs = tmp_path / "docs"
    docs.mkdir()
    body = "".join(f"word{i}{brk}" for i, brk in enumerate(LINE_BREAKS))
    (docs / "breaks.md").write_text(f"# Breaks\n\n{body}end.\n", encoding="utf-8", newline="")
    for i, brk in enumerate(LINE_BREAKS):
        (docs / f"name{brk}{i}.md").write_text(f"# Named {i}\n\nunique{i} token here.\n", encoding="utf-8")
    built = cli(*index_args(docs, tmp_path / "idx"))
    assert built.rc == 0 and built.err_lines == []
    assert f"{1 + len(LINE_BREAKS)} files" in built.out
    found = hits(cli(*search_args("word9 word3", docs, tmp_path / "idx", "-k", "1")))
    assert found[0]["doc_id"] == "breaks.md" and "word8\u2028word9" in found[0]["text"]
    for i, brk in enumerate(LINE_BREAKS):
        run = cli(*search_args(f"unique{i}", docs, tmp_path / "idx", "-k", "1"))
        assert run.err_lines == []  # the stored index loads every time: no rebuild notice
        assert hits(run)[0]["doc_id"] == f"name{brk}{i}.md"


def test_nul_bytes_invalid_utf8_and_undecodable_names(tmp_path):
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "nul.md").write_bytes(b"# NUL\n\nnulword text\x00 more text.\n")
    (docs / "late-nul.md").write_bytes(b"# Late\n\n" + b"lateword filler. " * 600 + b"\x00 after the sniffed head.\n")
    (docs / "latin1.md").write_bytes("# Caf\u00e9\n\ncr\u00e8me br\u00fbl\u00e9e latinword.\n".encode("latin-1"))
    (docs / os.fsdecode(b"bad\xff\xfename.md")).write_text("# Bad name\n\nbadnameword.\n")  # not UTF-8
    built = cli(*index_args(docs, tmp_path / "idx"))
    assert built.rc == 0 and "1 binary" in built.out and "3 files" in built.out
    assert hits(cli(*search_args("nulword", docs, tmp_path / "idx")))[0]["doc_id"] != "nul.md"
    assert hits(cli(*search_args("lateword", docs, tmp_path / "idx")))[0]["doc_id"] == "late-nul.md"
    assert "cr\ufffdme br\ufffdl\ufffde latinword" in hits(cli(*search_args("latinword", docs, tmp_path / "idx")))[0]["text"]
    [bad] = hits(cli(*search_args("badnameword", docs, tmp_path / "idx", "-k", "1")))
    assert bad["doc_id"] == "bad\\xff\\xfename.md"  # printable, and still unique
    plain = cli("search", "badnameword", "--docs", str(docs), "--index", str(tmp_path / "idx"), "-k", "1")
    assert plain.rc == 0 and "bad\\xff\\xfename.md#0" in plain.out


def test_a_fifo_named_md_is_skipped_not_waited_on(tmp_path):
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "real.md").write_text("# Real\n\nreal words.\n")
    os.mkfifo(docs / "pipe.md")
    built = cli(*index_args(docs, tmp_path / "idx"))
    assert built.rc == 0 and "1 not a regular file" in built.out


def test_a_10_mb_single_line(tmp_path):
    docs = tmp_path / "docs"
    docs.mkdir()
    # 10 MB, no newline, no sentence end: minified data. (Ordinary short words take ~4x longer, all in chunking
    # and the fake embedder, which is what rag/ingest/chunking.py's galloping search keeps linear.)
    line = " ".join(f"{i % 5000:05d}" + "x" * 55 for i in range(170_000))
    (docs / "one-line.md").write_text(line + " needleword", encoding="utf-8")
    (docs / "small.md").write_text("# Small\n\nsmall page.\n")
    built = cli(*index_args(docs, tmp_path / "idx"))
    assert built.rc == 0, built.err
    [hit] = hits(cli(*search_args("needleword", docs, tmp_path / "idx", "-k", "1")))
    assert len(line) > 10_000_000
    assert hit["doc_id"] == "one-line.md" and hit["text"].endswith("needleword")


def test_10k_tiny_files(tmp_path):
    docs = tmp_path / "docs"
    for n in range(10_000):
        folder = docs / f"d{n // 500:02d}"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"f{n:05d}.md").write_text(f"tiny page number{n}\n")
    built = cli(*index_args(docs, tmp_path / "idx"))
    assert built.rc == 0 and "10000 files, 10000 chunks" in built.out
    found = hits(cli(*search_args("number7777", docs, tmp_path / "idx", "-k", "3")))
    # The hash embedder's 64 buckets collide across 10k distinct words: BM25 is what must find it.
    assert [h["doc_id"] for h in found if h["bm25_rank"] == 1] == ["d15/f07777.md"]
