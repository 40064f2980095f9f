"""Hostile input, round two (issue 31): escapes that reach a terminal, pages that crash a parser, small folders."""

from __future__ import annotations

import contextlib
import io
import json

from faults_support import cli, fake_components, index_args, search_args, search_hits

DEEP = 3_000  # a real page of the SQLite manual nests about 2,800 levels


def deep_html(levels: int, word: str) -> str:
    return f"<html><body><h1>Deep</h1>{'<div>' * levels}<p>{word} at the bottom</p>{'</div>' * levels}</body></html>"


def test_3_a_deeply_nested_html_page_is_indexed_and_found(tmp_path):
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "deep.html").write_text(deep_html(DEEP, "abyssword"), encoding="utf-8")
    (docs / "plain.md").write_text("# Plain\n\nplainword here.\n")
    built = cli(*index_args(docs, tmp_path / "idx"))
    assert built.rc == 0 and "2 files" in built.out, built.err
    [hit] = search_hits(cli(*search_args("abyssword", docs, tmp_path / "idx", "-k", "1")))
    assert hit["doc_id"] == "deep.html" and "abyssword at the bottom" in hit["text"]


def test_3_a_file_its_parser_fails_on_is_skipped_and_counted(tmp_path, monkeypatch):
    from rag.ingest.formats import html

    def broken(text):
        raise RecursionError("maximum recursion depth exceeded")

    monkeypatch.setattr(html, "html_layout", broken)
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "page.html").write_text("<p>pageword</p>")
    (docs / "plain.md").write_text("# Plain\n\nplainword here.\n")
    built = cli(*index_args(docs, tmp_path / "idx"))
    assert built.rc == 0, built.err
    assert "1 files" in built.out and "skipped: 1 unparsable HTML" in built.out
    [hit] = search_hits(cli(*search_args("plainword", docs, tmp_path / "idx", "-k", "1")))
    assert hit["doc_id"] == "plain.md"


def test_15_an_index_path_that_is_a_file_is_one_line(tmp_path):
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "a.md").write_text("# A\n\naword.\n")
    (tmp_path / "file").write_text("not a folder")
    for argv in (index_args(docs, tmp_path / "file"), search_args("aword", docs, tmp_path / "file"),
                 index_args(docs, tmp_path / "file" / "idx")):
        run = cli(*argv)
        assert run.rc == 2 and run.out == "" and len(run.err_lines) == 1, run
        assert "is a file, not a folder" in run.err and "free some space" not in run.err


EVIL = "\x1b]52;c;aGVsbG8gY2xpcGJvYXJk\x07\x1b[2J\x9b31m\x1b[1A\r\x08"  # clipboard, clear, C1 CSI, up, CR, BS
EVIL_DOC = f"# Evil page\n\nThe escapeword sentence hides {EVIL} inside it.\n"


def raw_controls(text: str) -> list[str]:
    """Every character a terminal would act on: C0 but tab and newline, DEL, C1 (the progress line's own aside)."""
    return [c for c in text.replace(PROGRESS_REDRAW, "") if (ord(c) < 32 and c not in "\t\n") or 0x7F <= ord(c) <= 0x9F]


PROGRESS_REDRAW = "\r\x1b[K"  # agent/progress.py redraws its line with these


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def run_on_terminal(*argv: str, model=None) -> tuple[int, str, str]:
    """`smoldocs ARGV` with stdout and stderr that say they are a terminal (so `ask` streams)."""
    from agent.cli import main
    from agent.commands import common

    out, err = Terminal(), Terminal()
    saved = common.open_chat_model
    if model is not None:
        common.open_chat_model = lambda args: model
    try:
        with fake_components(), contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            rc = main(list(argv))
    finally:
        common.open_chat_model = saved
    return rc, out.getvalue(), err.getvalue()


def strings(value):
    """Every string inside a parsed JSON value."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from strings(item)


def evil_folder(tmp_path):
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "evil.md").write_text(EVIL_DOC, encoding="utf-8")
    (docs / "plain.md").write_text("# Plain\n\nplainword here.\n")
    return docs


def test_1_search_pack_and_index_never_print_document_escapes(tmp_path):
    docs, idx = evil_folder(tmp_path), tmp_path / "idx"
    assert cli(*index_args(docs, idx)).rc == 0
    (docs / "esc\x1b[2Jname\x9b.md").write_text("# Named\n\nnameword.\n")  # an added file is listed by name
    (docs / "notice.md").write_text("---\nexpires: \x1b[2J\n---\n# N\n\nnoticeword.\n")
    for argv in (index_args(docs, idx), ["search", "escapeword", "--docs", str(docs), "--index", str(idx)],
                 ["pack", "escapeword", "--docs", str(docs), "--index", str(idx)],
                 ["search", "nameword", "--docs", str(docs), "--index", str(idx)]):
        rc, out, err = run_on_terminal(*argv)
        assert rc == 0, err
        assert raw_controls(out + err) == [], (argv[0], out + err)
    assert "\\x1b]52;c;aGVsbG8gY2xpcGJvYXJk\\x07\\x1b[2J\\x9b31m" in out or "\\x1b]52" in run_on_terminal(
        "search", "escapeword", "--docs", str(docs), "--index", str(idx))[1]  # shown, escaped


def test_1_json_escapes_every_control_and_keeps_the_text(tmp_path):
    docs, idx = evil_folder(tmp_path), tmp_path / "idx"
    for argv in (search_args("escapeword", docs, idx), ["pack", "escapeword", "--docs", str(docs), "--index", str(idx), "--json"]):
        rc, out, err = run_on_terminal(*argv)
        assert rc == 0 and raw_controls(out) == [], out
        kept = EVIL.split("\r")[0]  # the loader reads a lone CR as a line break
        assert any(kept in text for text in strings(json.loads(out)))  # the document's text, once parsed


def test_1_ask_and_check_never_print_model_or_answer_escapes(tmp_path):
    from models.fakes import ScriptedChatModel

    docs, idx = evil_folder(tmp_path), tmp_path / "idx"
    reply = f"The escapeword sentence hides {EVIL} inside it [1]. Also \x1b]0;pwned\x07 title [1]."
    model = ScriptedChatModel([reply])
    rc, out, err = run_on_terminal("ask", "escapeword?", "--docs", str(docs), "--index", str(idx),
                                   "--decoding", "free", "--tools", "search-first", model=model)
    assert model.calls and rc == 0, err
    assert raw_controls(out + err) == [], out + err
    assert "escapeword" in out
    packed = run_on_terminal("pack", "escapeword", "--docs", str(docs), "--index", str(idx))[1]
    (tmp_path / "shown.txt").write_text(packed, encoding="utf-8")
    (tmp_path / "answer.txt").write_text(reply, encoding="utf-8")
    rc, out, err = run_on_terminal("check", str(tmp_path / "answer.txt"), "--shown", str(tmp_path / "shown.txt"),
                                   "--docs", str(docs), "--index", str(idx))
    assert rc in (0, 1) and "claims:" in out, err
    assert raw_controls(out + err) == [], out + err
