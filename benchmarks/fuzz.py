"""Fuzz the loaders and parsers for a bounded time with hypothesis: every crash is printed with its shrunk input.

    python -m benchmarks.fuzz --seconds 60 --target html
    python -m benchmarks.fuzz --seconds 25 --target all

Targets: html, markdown, rst, asciidoc, text (parse_text then chunk_layout), pdf (pypdf on mutated PDFs, through
pdf_layout), chunker (chunk_layout's invariants on parsed text with small budgets), markers (the [n] grammar),
config (config.toml through agent.config.read_file), shown (`check --shown` through read_shown).

A crash is any exception (or an input that takes over SLOW_CPU_SECONDS of CPU time: a hang) a user would see as a traceback: for a loader anything at all (read_layout turns a
parser failure into a skipped file, but the parser should not fail), for pdf anything but Unreadable, for config
anything but ConfigError, for shown anything but ShownUnreadable. Not part of the test suite: each crash found
becomes a test with the shrunk input (tests/test_fuzz_crashes.py). atheris is not needed.
"""

from __future__ import annotations

import argparse
import signal
import sys
import tempfile
import time
from pathlib import Path
from typing import Callable

from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

TARGETS = ("html", "markdown", "rst", "asciidoc", "text", "pdf", "chunker", "markers", "config", "shown")


SLOW_CPU_SECONDS = 5.0  # one input taking this much CPU time is reported as a hang (CPU time: the machine is shared)


class Slow(Exception):
    """An input that took SLOW_CPU_SECONDS of CPU time: linear parsers take milliseconds on these sizes."""


def _too_slow(signum, frame):
    raise Slow(f"over {SLOW_CPU_SECONDS:g} s of CPU time on one input")


class _TimeUp(BaseException):
    """Raised inside a run when its time is spent: a BaseException, so hypothesis stops instead of shrinking it."""


def _soup(pieces: list[str]) -> st.SearchStrategy[str]:
    """Text assembled from syntax pieces, free text and every kind of control and line-break character."""
    piece = st.one_of(
        st.sampled_from(pieces),
        st.text(max_size=12),
        st.sampled_from(["\n", "\n\n", "\r\n", "\r", "\t", "\x00", "\x1b[2J", "\u2028", "\x85", "\ufeff", " " * 4]),
    )
    # Up to 5,000 repeats: past Python's recursion limit for anything a parser nests, and past the 4,300 digits
    # int() takes.
    repeated = st.tuples(st.sampled_from(pieces), st.integers(1, 5000)).map(lambda p: p[0] * p[1])
    return st.lists(st.one_of(piece, repeated), max_size=60).map("".join)


HTML = ["<div>", "</div>", "<p>", "</p>", "<h1>", "</h1>", "<h3 class='x'>", "<pre>", "</pre>", "<li>", "<ul>", "</ul>",
        "<td>", "<tr>", "<table>", "<br/>", "<!--", "-->", "<script>", "</script>", "<nav>", "<![CDATA[", "]]>",
        "<!DOCTYPE html>", "<title>", "</title>", "<body>", "&amp;", "&#0;", "&#x110000;", "<?xml?>", "<a href='", "'>",
        "<span hidden>", "<textarea>", "<xmp>", "<svg>", "<math>", "<template>", "<dl><dt>", "<dd>", "¶"]
MARKDOWN = ["# ", "## ", "###### ", "####### ", "```", "~~~", "````python", "---", "===", "- ", "* ", "1. ", "> ",
            "    ", "|", "[1]", "![x](data:image/png;base64,", ")", "\\", "<div>", "---\nstatus: [", "\n---\n", ":"]
RST = ["====", "----", "~~~~", "Title\n=====\n", "::\n\n    ", ".. code-block:: python\n\n   ", ".. include:: x\n",
       ".. note::\n", "   ", "* ", "#. ", "``", "`x`_", "|sub|", "..", "::", "\n\n"]
ASCIIDOC = ["= ", "== ", "====== ", "----", "....", "++++", "****", "____", "////", "[source,python]", "include::x[]",
            ":attr: value", "{attr}", ". Title", "* ", "** ", ". ", "|===", "a|", "NOTE: ", "ifdef::x[]", "endif::[]"]
MARKERS = ["[", "]", "[1]", "[12]", "[1,2]", "[1-3]", "[^1]", "【1】", "`", "```", "\n", "[1][2]", "[0]",
           "[99999999999999999999]", "[1, 2, 3]", "(1)", "[ 1 ]", "[1–2]", "[-1]"]
TOML = ["base_url = ", "model = ", "n_ctx = ", "temperature = ", "connect_timeout = ", "api_key_file = ", "\"", "'",
        "[", "]", "{", "}", "=", "1", "-1", "1e999", "nan", "inf", "0x10", "9", "true", "[[a]]", "[a.b]",
        "\"\"\"", "#", "\n", "a = [", "a = {", ", "]
TOML_KEYS = ["n_ctx", "temperature", "base_url", "model", "api_key_file", "connect_timeout", "decoding", "a", "a.b"]
SHOWN = ["[", "{", "]", "}", "[1] docs/a.md", "(source: docs/a.md#1; section: A; lines 1-2)", '{"n": 1, "chunk_id": ',
         '"docs/a.md#1"', "}", '"citations": [', ",", "\n", "null", "1e999", "[outdated]", "#", "-1", "true"]


def _loader(doc_id: str) -> Callable[[str], None]:
    from benchmarks.word_tokenizer import WordTokenizer
    from rag.ingest.chunking import chunk_layout
    from rag.ingest.formats import parse_text

    tokenizer = WordTokenizer()

    def run(text: str) -> None:
        chunk_layout(doc_id, parse_text(doc_id, text), tokenizer, 16)

    return run


def _chunker(text: str, max_tokens: int) -> None:
    from rag.ingest.chunking import chunk_document

    class Chars:
        name = "chars"

        def count(self, piece: str) -> int:
            return len(piece)

    lines = text.count("\n") + 1
    chunks = chunk_document("doc.md", text, Chars(), max_tokens)
    assert len({c.chunk_id for c in chunks}) == len(chunks), "duplicate chunk ids"
    for c in chunks:
        assert c.text.strip(), "an empty chunk"
        assert 1 <= c.line_start <= c.line_end <= lines, f"lines {c.line_start}-{c.line_end} of {lines}"


def _markers(text: str) -> None:
    from rag import markers

    markers.find(text)
    markers.numbers(text)
    markers.strip(text)
    markers.replace(text, lambda ns: "".join(f"[{n}]" for n in ns))
    for m in markers.find(text, skip_code=False):
        markers.parse(text[m.start : m.end])


def _config(text: str) -> None:
    from agent.config import ConfigError, read_file

    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "config.toml"
        path.write_bytes(text.encode("utf-8", "surrogatepass"))
        try:
            read_file(path)
        except ConfigError:
            pass


def _shown(text: str) -> None:
    from rag.errors import ShownUnreadable
    from rag.excerpts.shown_file import read_shown
    from rag.types import Chunk

    class Catalog:
        chunks = [Chunk("docs/a.md#1", "docs/a.md", "docs/a.md", "The cache keeps keys.", ("A",), 1, 2)]

        def chunk(self, chunk_id):
            return next((c for c in self.chunks if c.chunk_id == chunk_id), None)

    try:
        read_shown(text, Catalog())
    except ShownUnreadable:
        pass


def _base_pdf() -> bytes:
    from fpdf import FPDF

    pdf = FPDF()
    for title in ("Install", "Usage"):
        pdf.add_page()
        pdf.set_font("helvetica", size=12)
        pdf.start_section(title)
        pdf.multi_cell(0, 8, f"{title}\nThe {title.lower()} page says how to run smoldocs.")
    return bytes(pdf.output())


def _pdf_strategy() -> st.SearchStrategy[bytes]:
    base = _base_pdf()
    edits = st.lists(st.tuples(st.integers(0, len(base) - 1), st.binary(min_size=1, max_size=8)), max_size=12)
    cut = st.integers(1, len(base))
    return st.tuples(edits, cut).map(lambda ec: _mutated(base, *ec))


def _mutated(base: bytes, edits, cut: int) -> bytes:
    data = bytearray(base)
    for at, new in edits:
        data[at : at + len(new)] = new
    return bytes(data[:cut])


def _pdf(data: bytes) -> None:
    from rag.errors import Unreadable
    from rag.ingest.formats.pdf import pdf_layout

    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "f.pdf"
        path.write_bytes(data)
        try:
            pdf_layout(path)
        except Unreadable:
            pass


def target(name: str) -> tuple[st.SearchStrategy, Callable]:
    """(strategy, check) of one target; check raises on a crash."""
    if name == "html":
        return _soup(HTML), _loader("page.html")
    if name == "markdown":
        return _soup(MARKDOWN), _loader("page.md")
    if name == "rst":
        return _soup(RST), _loader("page.rst")
    if name == "asciidoc":
        return _soup(ASCIIDOC), _loader("page.adoc")
    if name == "text":
        return _soup(MARKDOWN + ASCIIDOC + HTML), _loader("page.txt")
    if name == "pdf":
        return _pdf_strategy(), _pdf
    if name == "chunker":
        return st.tuples(_soup(MARKDOWN), st.integers(16, 64)), lambda args: _chunker(*args)
    if name == "markers":
        return _soup(MARKERS), _markers
    if name == "config":
        line = st.tuples(st.sampled_from(TOML_KEYS), _soup(TOML)).map(lambda kv: f"{kv[0]} = {kv[1]}\n")
        return st.one_of(_soup(TOML), st.lists(line, max_size=4).map("".join)), _config
    if name == "shown":
        return _soup(SHOWN), _shown
    raise ValueError(f"unknown target {name!r}: choose one of {', '.join(TARGETS)}")


def fuzz(name: str, seconds: float, out=sys.stdout) -> tuple[int, str | None]:
    """Run one target for `seconds`: (executions, the shrunk crash or None)."""
    strategy, check = target(name)
    signal.signal(signal.SIGPROF, _too_slow)
    runs = 0
    deadline = time.monotonic() + seconds

    @settings(max_examples=10**9, deadline=None, database=None, derandomize=False, report_multiple_bugs=False,
              phases=[Phase.generate, Phase.shrink], suppress_health_check=list(HealthCheck))
    @given(strategy)
    def property_(value):
        nonlocal runs
        if time.monotonic() > deadline:
            raise _TimeUp
        runs += 1
        signal.setitimer(signal.ITIMER_PROF, SLOW_CPU_SECONDS)
        try:
            check(value)
        finally:
            signal.setitimer(signal.ITIMER_PROF, 0)

    try:
        property_()
    except _TimeUp:
        return runs, None
    except Exception as exc:  # hypothesis has shrunk the input and noted it on the exception ("Falsifying example")
        import traceback

        where = traceback.extract_tb(exc.__traceback__)[-1]
        notes = "\n".join(getattr(exc, "__notes__", []))
        notes = notes if len(notes) <= 600 else f"{notes[:600]}... ({len(notes)} characters)"
        return runs, f"{type(exc).__name__}: {str(exc)[:300]} at {where.filename}:{where.lineno}\n{notes}"
    return runs, None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.fuzz", description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=60.0, help="time per target (default 60)")
    parser.add_argument("--target", default="all", help=f"one of {', '.join(TARGETS)}, or all (default)")
    args = parser.parse_args(argv)
    names = TARGETS if args.target == "all" else (args.target,)
    if any(n not in TARGETS for n in names):
        parser.error(f"unknown target {args.target!r}: choose one of {', '.join(TARGETS)}, or all")
    sys.setrecursionlimit(max(sys.getrecursionlimit(), 1000))
    crashes = 0
    for name in names:
        started = time.monotonic()
        runs, crash = fuzz(name, args.seconds)
        spent = time.monotonic() - started
        print(f"{name:9} {runs:7} executions in {spent:5.1f} s  " + (f"CRASH {crash}" if crash else "no crash"), flush=True)
        crashes += crash is not None
    return 1 if crashes else 0


if __name__ == "__main__":
    sys.exit(main())
