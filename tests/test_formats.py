"""HTML, PDF and AsciiDoc become heading-aware chunks with stable ids and lines or pages; bad files are skipped."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from fakes import HashEmbedder, WordTokenizer
from rag.ingest.chunking import ChunkSettings, chunk_document, chunk_layout
from rag.errors import Unreadable
from rag.ingest.formats import parse_text, read_layout, stream_digest, syntax_for
from rag.ingest.formats.asciidoc import looks_like_asciidoc, parse_adoc
from rag.ingest.formats.html import html_blocks
from rag.ingest.formats.pdf import pdf_layout
from rag.indexing.build import IndexProgress, open_index

DATA = Path(__file__).parent / "data" / "formats"
WORDS = WordTokenizer()


def make_pdf(path: Path, pages: list[tuple[str, str]], outline: bool = True, sub: tuple[int, str, str] | None = None) -> Path:
    """A PDF with a text layer: one page per (title, body); titles in the outline when `outline`."""
    from fpdf import FPDF

    pdf = FPDF()
    for n, (title, body) in enumerate(pages):
        pdf.add_page()
        if outline:
            pdf.start_section(title)
        pdf.set_font("Helvetica", "B", 16)
        pdf.cell(text=title, new_x="LMARGIN", new_y="NEXT")
        pdf.set_font("Helvetica", size=11)
        pdf.multi_cell(0, 7, body, new_x="LMARGIN", new_y="NEXT")
        if sub is not None and sub[0] == n:
            if outline:
                pdf.start_section(sub[1], level=1)
            pdf.multi_cell(0, 7, f"{sub[1]}\n{sub[2]}", new_x="LMARGIN", new_y="NEXT")
    pdf.output(str(path))
    return path


MANUAL = [
    ("Installing", "Run the installer, then restart the shell."),
    ("Configuration", "Set cache_size in the config file.\nThe default is 256 MB."),
    ("Troubleshooting", "If the index is corrupt, delete the folder and index again."),
]


# --- AsciiDoc ---------------------------------------------------------------------------------------------------


def test_asciidoc_manual_page_titles_of_every_level_and_anchors():
    text = (DATA / "smol-index.txt").read_text()
    assert syntax_for("smol-index.txt", text) == "adoc" and looks_like_asciidoc(text)
    headings = [(u.level, u.title) for u in parse_adoc(text) if u.kind == "heading"]
    assert headings == [
        (1, "smol-index(1)"), (2, "NAME"), (2, "SYNOPSIS"), (2, "DESCRIPTION"), (2, "OPTIONS"),
        (3, "Index modes"), (2, "EXAMPLES"), (2, "SEE ALSO"),
    ]  # the "== Not a heading" inside the //// comment block is not one
    modes = next(u for u in parse_adoc(text) if u.kind == "heading" and u.title == "Index modes")
    assert text[modes.start:].startswith("[[modes]]\nIndex modes")  # the anchor belongs to its title


def test_asciidoc_labelled_lists_open_blocks_and_comments():
    text = (DATA / "smol-index.txt").read_text()
    units = parse_adoc(text)
    paras = [text[u.start:u.end] for u in units if u.kind == "para"]
    assert "-q::\n--quiet::\n\tPrint nothing but errors." in paras  # terms listed together stay together
    assert any(p.startswith("--rebuild::") for p in paras) and any(p.startswith("--docs <dir>::") for p in paras)
    assert "lexical::" in paras and "dense::" in paras  # items inside the `--` open block
    assert not any(p.strip() in ("--", "+") or p.startswith("//") for p in paras)  # structure only, no text
    assert not any("comment" in text[u.start:u.end] for u in units)
    listing = [u for u in units if u.kind == "fence"]
    assert len(listing) == 1 and "smol index --rebuild --quiet" in text[listing[0].start:listing[0].end]


def test_asciidoc_chunks_keep_file_lines_and_heading_paths():
    text = (DATA / "smol-index.txt").read_text()
    chunks = chunk_document("man/smol-index.txt", text, WORDS, 40)
    lines = text.split("\n")
    for c in chunks:
        assert c.text.split("\n")[0] == lines[c.line_start - 1]  # lines are lines of the file
    options = [c for c in chunks if c.heading_path[-1:] == ("OPTIONS",)]
    assert options and "--rebuild::" in options[0].text
    assert [c.chunk_id for c in chunks] == [f"man/smol-index.txt#{n}" for n in range(len(chunks))]
    assert chunks == chunk_document("man/smol-index.txt", text, WORDS, 40)  # stable


def test_a_markdown_txt_file_is_not_read_as_asciidoc():
    text = "Notes\n\nSome text with a colon: here.\n\n```\ncode\n```\n"
    assert syntax_for("notes.txt", text) == "md" and syntax_for("page.adoc", text) == "adoc"


# --- HTML -------------------------------------------------------------------------------------------------------


def test_html_headings_text_and_code_without_scripts_styles_or_navigation():
    layout = parse_text("guide.html", (DATA / "guide.html").read_text())
    headings = [(u.level, u.title) for u in layout.units if u.kind == "heading"]
    assert headings == [(1, "Cache guide"), (2, "Sizing the cache"), (3, "Eviction")]
    for gone in ("tracking", "color: red", "Home", "previous page", "Copyright footer", "\u00b6"):
        assert gone not in layout.text
    assert "The kvCache keeps keys and values of earlier tokens" in layout.text
    assert "- Small machines: 128 MB." in layout.text and "lru | least recently used goes first" in layout.text
    fence = next(u for u in layout.units if u.kind == "fence")
    assert layout.text[fence.start:fence.end] == "```\nsmol cache --clear\nsmol cache --size 512\n```"


def test_html_chunks_cite_lines_of_the_html_source():
    source = (DATA / "guide.html").read_text()
    chunks = chunk_layout("guide.html", parse_text("guide.html", source), WORDS, 40)
    src_lines = source.split("\n")
    first = chunks[0]
    assert first.heading_path == ("Cache guide",) and "<h1>Cache guide" in src_lines[first.line_start - 1]
    sizing = next(c for c in chunks if c.heading_path[-1] == "Sizing the cache")
    assert '<h2 id="size">' in src_lines[sizing.line_start - 1] and sizing.where.startswith("lines ")
    assert all(1 <= c.line_start <= c.line_end <= len(src_lines) for c in chunks)


_VIM_LIKE = """<HTML><BODY><H1>usr_05</H1>
<PRE>

*usr_05.txt*	For Vim version 9.0.

You probably got tired of typing commands that you use very often.  To start
Vim with all your favorite option settings, you write them in the vimrc file.
If you already have a vimrc file, you can edit it this way:
	:edit $MYVIMRC

|05.1|	The vimrc file
|05.2|	The example vimrc file explained

The vimrc file can contain all the commands that you type after a colon.
</PRE></BODY></HTML>"""


def test_html_pre_that_is_mostly_prose_gives_paragraphs_and_keeps_its_code_fenced():
    blocks = html_blocks(_VIM_LIKE)
    assert [(b.kind, b.text) for b in blocks] == [
        ("heading", "usr_05"),
        ("pre", "*usr_05.txt*\tFor Vim version 9.0."),
        ("para", "You probably got tired of typing commands that you use very often. To start Vim with all your "
                 "favorite option settings, you write them in the vimrc file. If you already have a vimrc file, "
                 "you can edit it this way:"),
        ("pre", "\t:edit $MYVIMRC\n\n|05.1|\tThe vimrc file\n|05.2|\tThe example vimrc file explained"),
        ("para", "The vimrc file can contain all the commands that you type after a colon."),
    ]
    src = _VIM_LIKE.split("\n")  # each block cites the source line it starts on
    assert [src[b.line - 1].strip()[:12] for b in blocks[1:]] == [
        "*usr_05.txt*", "You probably", ":edit $MYVIM", "The vimrc fi"]
    layout = parse_text("usr_05.html", _VIM_LIKE)
    assert "```\n\t:edit $MYVIMRC" in layout.text and "you can edit it this way:\n\n```" in layout.text


def test_html_pre_reads_indented_prose_and_list_items_as_paragraphs_and_keeps_indented_code():
    pre = ("3.3.6. Stickiness\n\n"
           "  - an innovative mechanism to set a maximum idle time and duration on cookies\n"
           "    ensures that stickiness can be smoothly stopped on devices which are never closed.\n"
           "  - using ACL-based rules it is also possible to selectively ignore or enforce\n"
           "    stickiness regardless of the server's state.\n\n"
           "maxidle &lt;idle&gt;\n"
           "          This option allows inserted cookies to be ignored after some idle time.\n"
           "          It only works with insert-mode cookies.\n\n"
           "    backend app\n        cookie SRV insert maxidle 30m\n")
    blocks = html_blocks(f"<html><body><pre>{pre}</pre></body></html>")
    assert [(b.kind, b.text) for b in blocks] == [
        ("pre", "3.3.6. Stickiness"),
        ("para", "- an innovative mechanism to set a maximum idle time and duration on cookies ensures that stickiness "
                 "can be smoothly stopped on devices which are never closed."),
        ("para", "- using ACL-based rules it is also possible to selectively ignore or enforce stickiness regardless "
                 "of the server's state."),
        ("pre", "maxidle <idle>"),
        ("para", "This option allows inserted cookies to be ignored after some idle time. It only works with "
                 "insert-mode cookies."),
        ("pre", "    backend app\n        cookie SRV insert maxidle 30m"),
    ]


def test_html_pre_reads_vim_help_sections_first_line_indents_and_note_remarks():
    # Vim's help opens a section under a rule with "*NN.N*<Tab>Title", a paragraph with a three-space indent and no
    # blank line before it, and a remark with a tab-indented "Note:" (CHUNKER_VERSION 7).
    pre = ("*usr_32.txt*\tFor Vim version 9.0.\n\n"
           "Vim provides multi-level undo.  If you undo a few changes and then make a new\n"
           "change you create a branch in the undo tree.\n\n"
           "==============================================================================\n\n"
           "*32.1*\tUndo up to a file write\n\n"
           "This ` is a backtick or open single-quote character.\n"
           "   If you use the same command a second time you will jump back again.  That's\n"
           "because the command is a jump itself, and the position before it is remembered.\n\n"
           "\tNote:\n\tIf you type \"u\" twice, and the result is that you get the same text\n"
           "\tback, you have Vim configured to work Vi compatible.\n\n"
           "NAMED MARKS\t\t\t\t\t\t\t*bookmark*\n\n"
           "To go back to where you were, use the mark command with the name of the mark.\n\n"
           "\t:earlier 1f\n")
    blocks = html_blocks(f"<html><body><h1>usr_32</h1><pre>{pre}</pre></body></html>")
    assert [(b.kind, b.level, b.text) for b in blocks] == [
        ("heading", 1, "usr_32"),
        ("pre", 0, "*usr_32.txt*\tFor Vim version 9.0."),
        ("para", 0, "Vim provides multi-level undo. If you undo a few changes and then make a new change you create a "
                    "branch in the undo tree."),
        ("heading", 2, "32.1 Undo up to a file write"),  # the rule over it is dropped
        ("para", 0, "This ` is a backtick or open single-quote character."),
        ("para", 0, "If you use the same command a second time you will jump back again. That's because the command "
                    "is a jump itself, and the position before it is remembered."),
        ("para", 0, "Note: If you type \"u\" twice, and the result is that you get the same text back, you have Vim "
                    "configured to work Vi compatible."),
        ("pre", 0, "NAMED MARKS\t\t\t\t\t\t\t*bookmark*"),  # a title in capitals stays as it was (CHUNKER_VERSION 9)
        ("para", 0, "To go back to where you were, use the mark command with the name of the mark."),
        ("pre", 0, "\t:earlier 1f"),
    ]
    layout = parse_text("usr_32.html", f"<html><body><h1>usr_32</h1><pre>{pre}</pre></body></html>")
    assert [u.title for u in layout.units if u.kind == "heading"] == ["usr_32", "32.1 Undo up to a file write"]


def test_html_pre_keyword_over_a_two_space_indented_description_reads_as_before():
    # HAProxy's keywords: a flush-left keyword, then its description indented two spaces. An indent of 1-3 spaces
    # opens a paragraph only over a flush-left line, so the description stays one paragraph.
    pre = ("51degrees-cache-size &lt;number&gt;\n"
           "  Sets the size of the 51Degrees converter cache to &lt;number&gt; entries. This\n"
           "  is an LRU cache which reminds previous device detections and their results.\n"
           "  By default, this cache is disabled.\n")
    blocks = html_blocks(f"<html><body><pre>{pre}</pre></body></html>")
    assert [(b.kind, b.text) for b in blocks] == [
        ("pre", "51degrees-cache-size <number>"),
        ("para", "Sets the size of the 51Degrees converter cache to <number> entries. This is an LRU cache which "
                 "reminds previous device detections and their results. By default, this cache is disabled."),
    ]


@pytest.mark.parametrize("pre", [
    "from django.conf import settings  # This reads the settings module you point it at.\nprint(settings.DEBUG)",
    "def dst(self, dt):\n    # Code to set dston and dstoff to the time zone's DST\n    # transition times.\n    return x",
    "ERROR:  cannot drop table products because other objects depend on it\nHINT:  Use DROP ... CASCADE too.",
    "$ pytest --markers\n@pytest.mark.webtest: mark a test as a webtest.",
    "root        : INFO     Jackdaws love my big sphinx of quartz and the rest of it.",
])
def test_html_pre_of_code_output_or_comments_stays_one_fenced_block(pre):
    blocks = html_blocks(f"<html><body><p>Intro.</p><pre>{pre}</pre></body></html>")
    assert [b.kind for b in blocks] == ["para", "pre"] and blocks[1].text == pre


def test_html_without_headings_takes_its_title_and_malformed_html_still_reads():
    blocks = html_blocks((DATA / "no-headings.html").read_text())
    assert (blocks[0].kind, blocks[0].text) == ("heading", "Release notes")
    assert [b.text for b in blocks[1:]] == [
        "Version 2 reads PDF files.", "Version 3 reads HTML exports", "unclosed div with italic text",
        "Last paragraph & an entity",
    ]
    layout = parse_text("m.html", (DATA / "malformed.html").read_text())
    assert "Broken markup" in layout.text and "cell one | cell two" in layout.text
    assert [u.title for u in layout.units if u.kind == "heading"] == ["Tail"]
    assert parse_text("empty.html", "<html><body><script>x()</script></body></html>").units == ()



def _sentence(word: str) -> str:
    return f"{word} " + " ".join(["text"] * 12) + "."


def test_a_chunk_inside_a_definition_keeps_its_terms_in_the_heading_path():
    html = f"""<h2>Builtins</h2>
    <dl><dt>read [-rs] name</dt>
      <dd><p>{_sentence("Reads")}</p>
        <dl><dt>-s</dt><dd><p>{_sentence("Silent")}</p><p>{_sentence("Echo")}</p></dd></dl>
        <p>{_sentence("More")}</p></dd>
      <dt>trap [arg] sigspec</dt><dd><p>{_sentence("Runs")}</p><p>{_sentence("Exit")}</p></dd></dl>
    <p>{_sentence("After")}</p>"""
    chunks = chunk_layout("b.html", parse_text("b.html", html), WORDS, 16)
    path = {c.text.split()[0]: c.heading_path for c in chunks}
    assert chunks[0].text == "## Builtins\n\nread [-rs] name" and chunks[0].heading_path == ("Builtins",)
    assert path["Reads"] == ("Builtins", "read [-rs] name")
    assert chunks[1].text.endswith("-s")  # the inner item's term rides at the end of the chunk before
    assert path["Silent"] == path["Echo"] == ("Builtins", "read [-rs] name", "-s")
    assert path["More"] == ("Builtins", "read [-rs] name")  # the inner list has ended
    assert path["Runs"] == path["Exit"] == ("Builtins", "trap [arg] sigspec")  # the next item replaces read
    assert path["After"] == ("Builtins",)  # the list has ended
    assert [c.chunk_id for c in chunks] == [f"b.html#{n}" for n in range(len(chunks))]


def test_a_long_term_is_cut_at_a_word_and_a_bullet_is_no_term():
    signature = "subprocess.run(args, *, stdin=None, input=None, stdout=None, stderr=None, capture_output=False)"
    html = f"<h1>subprocess</h1><dl><dt>{signature}</dt><dd><p>{_sentence('Run')}</p><p>{_sentence('Wait')}</p></dd></dl>"
    chunks = chunk_layout("s.html", parse_text("s.html", html), WORDS, 16)
    wait = next(c for c in chunks if c.text.startswith("Wait"))
    assert wait.heading_path == ("subprocess", "subprocess.run(args, *, stdin=None, input=None…")
    assert len(wait.heading_path[-1]) <= 61
    html = f"<h1>List</h1><dl><dt>\u2022</dt><dd><p>{_sentence('One')}</p><p>{_sentence('Two')}</p></dd></dl>"
    two = next(c for c in chunk_layout("l.html", parse_text("l.html", html), WORDS, 16) if c.text.startswith("Two"))
    assert two.heading_path == ("List",)


# --- PDF --------------------------------------------------------------------------------------------------------


def test_pdf_pages_and_outline_headings(tmp_path):
    path = make_pdf(tmp_path / "manual.pdf", MANUAL, sub=(1, "Advanced settings", "Threads default to the cores."))
    pages_seen = []
    layout = pdf_layout(path, lambda done, total: pages_seen.append((done, total)))
    assert pages_seen == [(1, 3), (2, 3), (3, 3)]
    assert [(u.level, u.title) for u in layout.units if u.kind == "heading"] == [
        (1, "Installing"), (1, "Configuration"), (2, "Advanced settings"), (1, "Troubleshooting"),
    ]
    chunks = chunk_layout("manual.pdf", layout, WORDS, 60)
    by_heading = {c.heading_path[-1]: c for c in chunks}
    assert by_heading["Configuration"].where == "page 2" and "cache_size" in by_heading["Configuration"].text
    assert by_heading["Advanced settings"].heading_path == ("Configuration", "Advanced settings")
    assert by_heading["Troubleshooting"].page_start == 3


def test_pdf_without_outline_still_reads_every_page(tmp_path):
    layout = pdf_layout(make_pdf(tmp_path / "plain.pdf", MANUAL, outline=False))
    assert not [u for u in layout.units if u.kind == "heading"]
    assert sorted(set(layout.line_pages)) == [1, 2, 3] and "restart the shell" in layout.text


def test_encrypted_scanned_and_broken_pdfs_are_unreadable_with_a_reason(tmp_path):
    from fpdf import FPDF
    from pypdf import PdfReader, PdfWriter

    plain = make_pdf(tmp_path / "plain.pdf", MANUAL)
    writer = PdfWriter(clone_from=PdfReader(plain))
    writer.encrypt(user_password="secret", algorithm="RC4-128")
    writer.write(tmp_path / "locked.pdf")
    with pytest.raises(Unreadable, match="encrypted PDF"):
        pdf_layout(tmp_path / "locked.pdf")

    writer = PdfWriter(clone_from=PdfReader(plain))
    writer.encrypt(user_password="", owner_password="owner", algorithm="RC4-128")  # opens without a password
    writer.write(tmp_path / "no-edit.pdf")
    assert "restart the shell" in pdf_layout(tmp_path / "no-edit.pdf").text

    scan = FPDF()
    scan.add_page()
    scan.rect(20, 20, 100, 60, style="F")  # a page of graphics and no text: what a scan looks like to a text extractor
    scan.output(str(tmp_path / "scan.pdf"))
    with pytest.raises(Unreadable, match="no text layer|without a text layer"):
        pdf_layout(tmp_path / "scan.pdf")

    (tmp_path / "broken.pdf").write_bytes(b"%PDF-1.7\n" + b"\x00garbage" * 100)
    (tmp_path / "cut.pdf").write_bytes(plain.read_bytes()[: plain.stat().st_size // 2])
    for name in ("broken.pdf", "cut.pdf"):
        try:
            layout = pdf_layout(tmp_path / name)
        except Unreadable as exc:
            assert exc.reason == "unreadable PDF" or "text layer" in exc.reason
        else:  # PDFium can repair a truncated file: then what it reads is text of the manual
            assert "Installing" in layout.text


# --- In a real folder, through open_index -------------------------------------------------------------------------


@pytest.fixture
def mixed(tmp_path: Path) -> Path:
    root = tmp_path / "docs"
    root.mkdir()
    for name in ("guide.html", "no-headings.html", "malformed.html", "smol-index.txt"):
        shutil.copy(DATA / name, root / name)
    (root / "notes.md").write_text("# Notes\n\nPlain Markdown still works.\n")
    make_pdf(root / "manual.pdf", MANUAL)
    plain = root / "manual.pdf"
    from pypdf import PdfReader, PdfWriter

    writer = PdfWriter(clone_from=PdfReader(plain))
    writer.encrypt(user_password="secret", algorithm="RC4-128")
    writer.write(root / "locked.pdf")
    (root / "broken.pdf").write_bytes(b"not a pdf at all")
    return root


def open_mixed(root: Path, index_dir: Path, progress=None):
    return open_index(root, WORDS, HashEmbedder(), index_dir=index_dir, progress=progress,
                      chunking=ChunkSettings(max_tokens=60))


def test_a_mixed_folder_indexes_every_format_and_counts_what_it_skips(mixed, tmp_path, monkeypatch):
    events: list[IndexProgress] = []
    index = open_mixed(mixed, tmp_path / "idx", events.append)
    assert set(index.doc_ids) == {"guide.html", "no-headings.html", "malformed.html", "smol-index.txt", "notes.md",
                                  "manual.pdf"}
    assert index.update.skipped == {"encrypted PDF": 1, "unreadable PDF": 1}
    assert [e.done for e in events if e.stage == "read"][-3:] == [1, 2, 3]  # page progress of a PDF
    hit = index.search("cache_size config file", k=1, doc_ids=["manual.pdf"])[0]
    assert hit.where == "page 2" and hit.heading_path == ("Configuration",)
    assert index.search("kvCache", k=1)[0].doc_id == "guide.html"  # an identifier, found by its parts too

    calls = []
    real = pdf_layout

    def counting(path, on_page=None):
        calls.append(Path(path).name)
        return real(path, on_page)

    monkeypatch.setattr("rag.ingest.formats.pdf.pdf_layout", counting)
    again = open_mixed(mixed, tmp_path / "idx")
    assert not again.update.modified and calls == []  # unchanged PDFs, unreadable ones too, are not read again
    assert again.update.skipped == {"encrypted PDF": 1, "unreadable PDF": 1}
    assert [c.chunk_id for c in again.chunks] == [c.chunk_id for c in index.chunks]
    assert [c.where for c in again.chunks] == [c.where for c in index.chunks]  # pages survive the store


def test_a_pdf_that_changes_while_it_is_read_is_skipped_then_read_next_time(mixed, tmp_path):
    pdf = mixed / "manual.pdf"

    def rewrite_midway(event: IndexProgress) -> None:
        if event.stage == "read" and event.message == "manual.pdf" and event.done == 2:
            make_pdf(pdf, MANUAL[:2])  # the user saves a new version while it is being indexed

    index = open_mixed(mixed, tmp_path / "idx", rewrite_midway)
    assert "manual.pdf" not in index.doc_ids and index.update.skipped["changed while being indexed"] == 1
    again = open_mixed(mixed, tmp_path / "idx")
    assert "manual.pdf" in again.doc_ids and "manual.pdf" in again.update.added
    assert max(c.page_end for c in again.chunks if c.doc_id == "manual.pdf") == 2


def test_read_layout_checks_the_file_still_has_the_scanned_digest(tmp_path):
    pdf = make_pdf(tmp_path / "m.pdf", MANUAL)
    assert read_layout("m.pdf", pdf, "", stream_digest(pdf)).line_pages
    with pytest.raises(Unreadable, match="changed while being indexed"):
        read_layout("m.pdf", pdf, "", "0" * 64)
    scanned = stream_digest(pdf)
    pdf.write_bytes(b"%PDF-1.7\n" + b"\x00half-saved" * 50)  # saved over between the scan and the read
    with pytest.raises(Unreadable, match="changed while being indexed"):
        read_layout("m.pdf", pdf, "", scanned)


def test_html_nesting_has_no_depth_limit():
    import sys

    levels = sys.getrecursionlimit() * 3
    page = f"<body><h2>Top</h2>{'<div><section>' * levels}<p>deep text</p>{'</section></div>' * levels}<p>after</p></body>"
    text = parse_text("deep.html", page).text
    assert text == "## Top\n\ndeep text\n\nafter"
