"""Acting on an answer in the TUI: copy it or a quote, open a source at its line, through Pilot.

The clipboard is a real subprocess: a recording `xclip` script on $PATH. Pagers and editors are launched through
the app's runner, faked here by recording the argv; the app is really suspended and resumed around it (the
headless driver is told it can suspend, so App.suspend runs its real path).
"""

from __future__ import annotations

import base64
import dataclasses
import os
import stat
from contextlib import asynccontextmanager
from pathlib import Path

import pytest
from textual.drivers.headless_driver import HeadlessDriver

from agent import config
from agent.chats import ChatStore
from agent.errors import UsageError
from agent.surfaces.tui import make_app
from agent.surfaces.tui.app import run_program
from agent.surfaces.tui.citation_screen import CitationScreen
from agent.surfaces.tui.clipboard import CLIPBOARDS, NO_TOOL, Clipboard, ClipboardUnavailable, find_tool
from agent.surfaces.tui import copy_text
from agent.surfaces.tui.message_list import AnswerView
from agent.surfaces.tui.open_source import at_line, open_source
from rag.ingest.chunking import chunk_layout
from rag.ingest.formats import parse_text
from rag.ingest.formats.roff import man_layout
from fakes import WordTokenizer
from test_tui import ask, ready
from tui_support import CHUNKS, chunk, lasting_notices, pilot_test, real_session

SIZE = (100, 32)
KV_SIZE = "The kv cache of SmolLM2 takes about 90 MB [2]."  # cites CHUNKS[1]: docs/kv-cache.md lines 8-14
KV_FILE = "\n".join(["# KV cache", "", *["The kv cache stores keys."] * 5, "## Size", "", "About 90 MB."]) + "\n"


@pytest.fixture
def store(tmp_path):
    return ChatStore(tmp_path / "chats")


@pytest.fixture
def docs(tmp_path) -> Path:
    """A docs folder holding the test chunks' files."""
    root = tmp_path / "root"
    for c in CHUNKS:
        path = root / c.doc_id
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(KV_FILE if "kv-cache" in c.doc_id else "text\n" * 12)
    return root


@pytest.fixture
def xclip(tmp_path, monkeypatch) -> Path:
    """A recording `xclip` first on $PATH with a $DISPLAY: returns the file its stdin is written to."""
    bin_dir, record = tmp_path / "bin", tmp_path / "clipboard.txt"
    bin_dir.mkdir()
    tool = bin_dir / "xclip"
    tool.write_text(f"#!/bin/sh\necho \"$@\" > {record}.argv\ncat > {record}\n")
    tool.chmod(tool.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("DISPLAY", ":0")
    monkeypatch.delenv("WAYLAND_DISPLAY", raising=False)
    return record


@pytest.fixture
def no_clipboard_tool(tmp_path, monkeypatch):
    empty = tmp_path / "empty-bin"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))


class Runner:
    """Records what the app runs, and whether the app was suspended while it ran."""

    def __init__(self, app_box: list) -> None:
        self.calls: list[tuple[tuple[str, ...], dict]] = []
        self.app_box = app_box
        self.suspended: list[bool] = []

    def __call__(self, argv, env) -> int:
        self.calls.append((tuple(argv), dict(env)))
        app = self.app_box[0]
        self.suspended.append(not app._driver._auto_restart)  # App.suspend turns auto restart off while it runs
        return 0


@asynccontextmanager
async def acting(store, docs=None, replies=(KV_SIZE,), clipboard="auto", can_suspend=True, monkeypatch=None, extra=()):
    """The app over the real session (a scripted model), loaded: yields (pilot, runner)."""
    session, _, retriever = real_session(list(replies))
    for c in extra:
        retriever.by_id[c.chunk_id] = c
        retriever.chunks.append(c)
    if docs is not None:
        session.docs_dir = docs
    box: list = []
    runner = Runner(box)
    app = lasting_notices(make_app(lambda progress=None: session, store, clipboard=clipboard, runner=runner))
    box.append(app)
    if monkeypatch is not None and can_suspend:
        monkeypatch.setattr(HeadlessDriver, "can_suspend", property(lambda self: True))
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        yield pilot, runner


def notices(app) -> list[str]:
    return [str(n.message) for n in app._notifications]


def cited(view: AnswerView, chunk_id: str) -> int:
    return next(c.n for c in view.answer.citations if c.chunk_id == chunk_id)


# -- copy ----------------------------------------------------------------------------------------------------


@pilot_test
async def test_ctrl_y_copies_the_answer_with_its_sources_as_path_and_line(store, docs, xclip):
    async with acting(store, docs) as (pilot, _):
        view = await ask(pilot, "how big is the kv cache")
        n = cited(view, CHUNKS[1].chunk_id)
        await pilot.press("ctrl+y")
        await pilot.pause()
        copied = xclip.read_text()
        assert copied.startswith(view.answer.text.strip())
        assert f"[{n}] {docs / 'docs/kv-cache.md'}:8 · KV cache > Size" in copied.splitlines()
        assert Path(f"{xclip}.argv").read_text().split() == ["-selection", "clipboard"]
        assert any("Copied the answer with xclip" in m for m in notices(pilot.app))


EVIL = chunk("docs/evil.md", 0, ("Evil",), (1, 2), "The kv cache is big \x1b]52;c;aGk=\x07 indeed \x1b[2J.")


def evil_number(view: AnswerView) -> int:
    return next(n for n, hit in view.excerpts().items() if hit.doc_id == EVIL.doc_id)


@pilot_test
async def test_a_control_sequence_in_a_document_reaches_the_clipboard_escaped(store, docs, xclip):
    async with acting(store, docs, extra=[EVIL]) as (pilot, _):
        view = await ask(pilot, "how big is the kv cache")
        pilot.app.chat.action_copy_quote(evil_number(view))
        await pilot.pause()
        copied = xclip.read_text()
        assert "\x1b" not in copied and "\x07" not in copied
        assert "\\x1b]52;c;aGk=\\x07 indeed \\x1b[2J." in copied


def test_the_clipboard_cleans_text_whichever_way_it_goes(xclip):
    hostile = "a \x1b]52;c;aGk=\x07 b \x9b2J c"
    to_terminal: list[str] = []
    assert Clipboard("osc52", {}).copy(hostile, terminal=to_terminal.append) == "the terminal (OSC 52)"
    assert Clipboard("auto").copy(hostile, terminal=to_terminal.append) == "xclip"
    assert to_terminal == [xclip.read_text()] == ["a \\x1b]52;c;aGk=\\x07 b \\x9b2J c"]


@pilot_test
async def test_c_in_the_citation_view_copies_the_evidence_sentence_with_its_source(store, docs, xclip):
    async with acting(store, docs) as (pilot, _):
        view = await ask(pilot, "how big is the kv cache")
        n = cited(view, CHUNKS[1].chunk_id)
        await pilot.press("tab", str(n))
        assert isinstance(pilot.app.screen, CitationScreen)
        await pilot.press("c")
        await pilot.pause()
        evidence = next(c.evidence for c in view.answer.citations if c.n == n)
        assert evidence  # the checker matched a sentence: that is the quote
        assert xclip.read_text() == f"> {evidence}\n— {docs / 'docs/kv-cache.md'}:8 · KV cache > Size"
        assert isinstance(pilot.app.screen, CitationScreen)  # still open: copy does not close it


@pilot_test
async def test_without_a_clipboard_tool_copy_says_what_to_do_and_writes_no_osc52(store, no_clipboard_tool):
    async with acting(store) as (pilot, _):
        await ask(pilot, "how big is the kv cache")
        written: list[str] = []
        driver = pilot.app._driver
        original = driver.write
        driver.write = lambda data: (written.append(data), original(data))[1]
        await pilot.press("ctrl+y")
        await pilot.pause()
        assert any(NO_TOOL in m for m in notices(pilot.app))
        assert not any("\x1b]52" in w for w in written)


@pilot_test
async def test_osc52_when_asked_carries_the_cleaned_text_base64_encoded_only(store, no_clipboard_tool):
    async with acting(store, clipboard="osc52", extra=[EVIL]) as (pilot, _):
        view = await ask(pilot, "how big is the kv cache")
        written: list[str] = []
        driver = pilot.app._driver
        original = driver.write
        driver.write = lambda data: (written.append(data), original(data))[1]
        pilot.app.chat.action_copy_quote(evil_number(view))
        await pilot.pause()
        osc = [w for w in written if w.startswith("\x1b]52;c;")]
        assert len(osc) == 1 and osc[0].endswith("\a")
        payload = osc[0][len("\x1b]52;c;"):-1]
        assert set(payload) <= set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/=")
        text = base64.b64decode(payload).decode()
        assert text.startswith("> The kv cache is big") and "\x1b" not in text and "\\x1b[2J" in text
        assert any("with the terminal (OSC 52)" in m for m in notices(pilot.app))


@pilot_test
async def test_the_command_palette_offers_copy_and_open_for_each_source(store, docs):
    async with acting(store, docs) as (pilot, _):
        view = await ask(pilot, "how big is the kv cache")
        n = cited(view, CHUNKS[1].chunk_id)
        titles = [c.title for c in pilot.app.get_system_commands(pilot.app.screen)]
        assert "Copy the answer" in titles
        for title in (f"Copy a quote from [{n}]", f"Open [{n}] in the pager", f"Open [{n}] in the editor"):
            assert title in titles


def test_a_tool_is_used_only_where_its_display_is():
    which = {"xclip": "/usr/bin/xclip", "wl-copy": "/usr/bin/wl-copy"}.get
    assert find_tool({}, which) is None  # no display at all: xclip would only fail
    assert find_tool({"DISPLAY": ":0"}, which).name == "xclip"
    assert find_tool({"DISPLAY": ":0", "WAYLAND_DISPLAY": "wayland-0"}, which).name == "wl-copy"


def test_a_failing_tool_is_one_line_saying_what_to_do(tmp_path, monkeypatch):
    tool = tmp_path / "xclip"
    tool.write_text("#!/bin/sh\ncat > /dev/null\nexit 1\n")
    tool.chmod(0o755)
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(ClipboardUnavailable, match=r"^xclip failed \(exit 1\): .*osc52") as failure:
        Clipboard("auto", {"DISPLAY": ":0"}).copy("text", terminal=lambda text: None)
    assert "\n" not in str(failure.value)


def test_the_settings_key_offers_the_clipboards_the_app_knows():
    assert config.BY_NAME["clipboard"].choices == CLIPBOARDS
    with pytest.raises(Exception, match="unknown clipboard 'x11'"):
        Clipboard("x11")


# -- open at the line ----------------------------------------------------------------------------------------


@pilot_test
async def test_o_opens_the_source_in_the_pager_at_its_line_and_comes_back_to_the_same_view(store, docs, monkeypatch):
    monkeypatch.setenv("PAGER", "less -R")
    async with acting(store, docs, monkeypatch=monkeypatch) as (pilot, runner):
        view = await ask(pilot, "how big is the kv cache")
        n = cited(view, CHUNKS[1].chunk_id)
        await pilot.press("tab", str(n))
        screen = pilot.app.screen
        await pilot.press("o")
        await pilot.pause()
        [(argv, env)] = runner.calls
        assert argv == ("less", "-R", "+8", str(docs / "docs/kv-cache.md"))
        assert runner.suspended == [True]  # run inside App.suspend: the terminal was handed over
        assert pilot.app._driver._auto_restart  # and taken back
        assert pilot.app.screen is screen and screen.info.n == n  # the same source, still open
        assert any("Back from less at line 8" in m for m in notices(pilot.app))


@pilot_test
async def test_e_opens_the_editor_at_the_line_and_the_palette_opens_the_pager(store, docs, monkeypatch):
    monkeypatch.delenv("VISUAL", raising=False)
    monkeypatch.setenv("EDITOR", "/usr/bin/vim")
    monkeypatch.delenv("PAGER", raising=False)
    async with acting(store, docs, monkeypatch=monkeypatch) as (pilot, runner):
        view = await ask(pilot, "how big is the kv cache")
        n = cited(view, CHUNKS[1].chunk_id)
        await pilot.press("tab", str(n), "e")
        await pilot.pause()
        await pilot.press("escape")
        pilot.app.chat.action_open_source(n, "pager")  # what the palette's "Open [n] in the pager" calls
        await pilot.pause()
        path = str(docs / "docs/kv-cache.md")
        assert [argv for argv, _ in runner.calls] == [("/usr/bin/vim", "+8", path), ("less", "+8", path)]


@pilot_test
async def test_a_terminal_that_cannot_hand_over_gets_the_command_to_run_instead(store, docs, monkeypatch):
    monkeypatch.setenv("PAGER", "less")
    async with acting(store, docs, can_suspend=False) as (pilot, runner):
        view = await ask(pilot, "how big is the kv cache")
        pilot.app.chat.action_open_source(cited(view, CHUNKS[1].chunk_id), "pager")
        await pilot.pause()
        assert runner.calls == []
        assert any(f"cannot hand over the screen: run less +8 {docs}/docs/kv-cache.md" in m for m in notices(pilot.app))


@pilot_test
async def test_a_missing_pager_is_one_line_and_the_app_comes_back(store, docs, monkeypatch):
    monkeypatch.setenv("PAGER", "no-such-pager-here")
    async with acting(store, docs, monkeypatch=monkeypatch) as (pilot, _):
        pilot.app.runner = run_program
        view = await ask(pilot, "how big is the kv cache")
        pilot.app.chat.action_open_source(cited(view, CHUNKS[1].chunk_id), "pager")
        await pilot.pause()
        assert pilot.app._driver._auto_restart
        assert any("Could not run no-such-pager-here" in m and "set $PAGER" in m for m in notices(pilot.app))


@pilot_test
async def test_a_source_whose_file_is_gone_says_to_reindex(store, docs, monkeypatch):
    async with acting(store, docs, monkeypatch=monkeypatch) as (pilot, runner):
        view = await ask(pilot, "how big is the kv cache")
        (docs / "docs/kv-cache.md").unlink()
        pilot.app.chat.action_open_source(cited(view, CHUNKS[1].chunk_id), "editor")
        await pilot.pause()
        assert runner.calls == []
        assert any("is not there any more: re-index the docs" in m for m in notices(pilot.app))


def test_pagers_and_editors_get_the_line_their_own_way(tmp_path):
    path = tmp_path / "a.md"
    assert at_line("less", path, 8).argv == ("less", "+8", str(path))
    assert at_line("code --wait", path, 8).argv == ("code", "--wait", "--goto", f"{path}:8")
    assert at_line("hx", path, 8).argv == ("hx", f"{path}:8")
    plain = at_line("cat", path, 8)
    assert plain.argv == ("cat", str(path)) and "takes no line" in plain.how


def test_a_man_page_opens_through_man_at_its_section_heading():
    tree = Path(__file__).parent / "data" / "manpages"
    chunks = chunk_layout("man1/lsx.1", man_layout((tree / "man1/lsx.1").read_text()), WordTokenizer())
    sub = next(c for c in chunks if c.heading == "OPTIONS > Exit status:")
    launch = open_source(sub, tree, "editor", env={"LESS": "-R"})
    assert launch.argv == ("man", "-l", str(tree / "man1/lsx.1"))
    assert launch.env == {"LESS": "-R +/^ *Exit status:"}  # man's pager, less, starts at the heading
    dotted = dataclasses.replace(sub, heading_path=("OPTIONS", "a.b (c)*"))
    assert open_source(dotted, tree, "pager", env={}).env == {"LESS": "+/^ *a\\.b \\(c\\)\\*"}


def test_an_info_manual_opens_through_info_at_its_node():
    folder = Path(__file__).parent / "data" / "info"
    chunks = chunk_layout("minicore.info", parse_text("minicore.info", (folder / "minicore.info").read_text()), WordTokenizer())
    chunk_ = next(c for c in chunks if c.heading_path[0] == "lsx invocation")
    launch = open_source(chunk_, folder, "pager", env={})
    assert launch.argv == ("info", "--file", str(folder / "minicore.info"), "--node", "lsx invocation")


def test_sources_that_cannot_be_opened_say_why_in_one_line(tmp_path):
    (tmp_path / "guide.pdf").write_bytes(b"%PDF-1.4")
    pdf = chunk("guide.pdf", 0, ("Intro",), (1, 1), "text")
    with pytest.raises(UsageError, match=r"guide.pdf is a PDF: open page 4 in a PDF viewer"):
        open_source(dataclasses.replace(pdf, page_start=4, page_end=4), tmp_path, "pager", env={})
    with pytest.raises(UsageError, match="shared index with no files on this machine"):
        open_source(pdf, None, "pager", env={})
    with pytest.raises(UsageError, match="unknown opener 'browser'"):
        open_source(pdf, tmp_path, "browser", env={})


def test_a_store_sessions_sources_copy_as_their_ids_and_do_not_open():
    """A --store session's docs_dir is the store's URL: its documents are not files on this machine."""
    url = "postgresql://reader@db/docs"
    assert copy_text.source_ref(CHUNKS[1], url) == "docs/kv-cache.md:8 · KV cache > Size"
    with pytest.raises(UsageError, match=r"^docs/kv-cache.md is in a shared index with no files on this machine"):
        open_source(CHUNKS[1], url, "pager", env={})
