"""PDF text keeps its words apart and whole: word gaps set as TJ shifts read as spaces, line-end hyphens resolved.

The PDFs are written byte by byte here, because neither fpdf2 nor pypdf writes word gaps as TJ shifts; the font
claims a 1000-unit space (as debian-faq's CharisSIL does), the case that made pypdf run words together.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from rag.ingest.formats.hyphenation import join_hyphenated, spellings
from rag.ingest.formats.pdf import pdf_layout

# ToUnicode map giving the grave glyph (code 0x60) as U+0300, as TeX fonts in debian-faq's PDF do for ‘.
GRAVE_CMAP = """/CIDInit /ProcSet findresource begin 12 dict begin begincmap
/CMapName /Grave def /CMapType 2 def
1 begincodespacerange <00> <FF> endcodespacerange
1 beginbfchar <60> <0300> endbfchar
endcmap CMapName currentdict /CMap defineresource pop end end"""


def raw_pdf(path: Path, pages: list[str], to_unicode: str | None = None) -> Path:
    """A PDF of raw content streams in Helvetica, whose /Widths give the space 1000 units and every glyph 556."""
    widths = " ".join("1000" if code == 32 else "556" for code in range(32, 127))
    font = f"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /FirstChar 32 /LastChar 126 /Widths [{widths}]"
    objs: dict[int, bytes] = {1: b"<< /Type /Catalog /Pages 2 0 R >>"}
    num = 4
    if to_unicode:
        objs[num] = pdf_stream(to_unicode)
        font += f" /ToUnicode {num} 0 R"
        num += 1
    objs[3] = (font + " >>").encode()
    kids = []
    for content in pages:
        objs[num] = pdf_stream(content)
        objs[num + 1] = (f"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] "
                         f"/Resources << /Font << /F1 3 0 R >> >> /Contents {num} 0 R >>").encode()
        kids.append(f"{num + 1} 0 R")
        num += 2
    objs[2] = f"<< /Type /Pages /Kids [{' '.join(kids)}] /Count {len(kids)} >>".encode()
    out = bytearray(b"%PDF-1.4\n")
    offsets = {}
    for n in sorted(objs):
        offsets[n] = len(out)
        out += f"{n} 0 obj\n".encode() + objs[n] + b"\nendobj\n"
    xref = len(out)
    out += f"xref\n0 {len(objs) + 1}\n0000000000 65535 f \n".encode()
    out += "".join(f"{offsets[n]:010d} 00000 n \n" for n in sorted(objs)).encode()
    out += f"trailer\n<< /Size {len(objs) + 1} /Root 1 0 R >>\nstartxref\n{xref}\n%%EOF\n".encode()
    path.write_bytes(bytes(out))
    return path


def pdf_stream(text: str) -> bytes:
    data = text.encode("latin-1")
    return f"<< /Length {len(data)} >>\nstream\n".encode() + data + b"\nendstream"


def lines_at(top: int, lines: list[str]) -> str:
    """Lines shown one under another with Tj and T*, no TJ shifts."""
    shown = " ".join(f"({line}) Tj T*" for line in lines)
    return f"BT /F1 11 Tf 14 TL 72 {top} Td {shown} ET"


def test_word_gaps_set_as_tj_shifts_read_as_spaces_and_kerning_does_not(tmp_path):
    # Gaps of 0.25-0.3 em, the debian-faq body's; "T" 80 "o" and "W" 60 "ord" are kerning inside a word.
    shifted = ("BT /F1 11 Tf 72 700 Td [(Yes.) -378 (Unstable) -256 (has) -257 (the) -256 (most) -293 (recent) -250 "
               "(versions.) -300 (T) 80 (o) -280 (W) 60 (ord) ] TJ ET")
    layout = pdf_layout(raw_pdf(tmp_path / "gaps.pdf", [shifted]))
    assert layout.text == "Yes. Unstable has the most recent versions. To Word"


def test_line_end_hyphens_join_only_where_the_document_spells_the_word_whole(tmp_path):
    page = lines_at(700, [
        "the package manage-",  # "management" occurs below: joined
        "ment system writes to the mailing-",  # "mailing-list" occurs below: kept
        "list; the management of the mailing-list is",
        "in the docu-",  # neither form elsewhere, "docu" no word: joined
        "mentation and architecture-",  # both halves are words of their own here: kept
        "specific code is architecture specific",
    ])
    text = pdf_layout(raw_pdf(tmp_path / "hyphens.pdf", [page])).text
    assert "the package management system writes to the mailing-list; the management" in text
    assert "in the documentation and architecture-specific code" in text
    assert "manage-" not in text and "docu-" not in text


def test_hyphens_resolve_against_the_spellings_of_every_page(tmp_path):
    first = lines_at(700, ["a full-", "upgrade of the pack-", "age"])
    pages = [first, lines_at(700, ["run full-upgrade on the package"])]
    text = pdf_layout(raw_pdf(tmp_path / "two.pdf", pages)).text
    assert "a full-upgrade of the package" in text


def test_a_grave_with_no_letter_under_it_is_an_opening_quote(tmp_path):
    page = lines_at(700, ["the `stable release, a cafe` and `", "testing too"])
    text = pdf_layout(raw_pdf(tmp_path / "quote.pdf", [page], GRAVE_CMAP)).text
    assert text == "the \u2018stable release, a cafe\u0300 and \u2018\ntesting too"  # the accent on a letter stays


def test_join_hyphenated_rules():
    words = spellings(["the management of the mailing-list", "user guide and upgrade notes"])
    assert words["mailing-list"] == 1 and words["mailing"] == 1 and words["list"] == 1
    marked = "manage\x02ment, mailing\x02list, user\x02guide, docu\ufffement, x\x02 and \x02y"
    assert join_hyphenated(marked, words) == "management, mailing-list, user-guide, document, x- and -y"
    assert join_hyphenated("plain text-\nstays", Counter()) == "plain text-\nstays"


def test_an_index_whose_pdf_chunks_came_from_another_reader_reads_the_pdf_again(tmp_path, monkeypatch):
    from fakes import WordTokenizer
    from rag.ingest import formats
    from rag.indexing.build import open_index

    docs = tmp_path / "docs"
    docs.mkdir()
    raw_pdf(docs / "faq.pdf", [lines_at(700, ["Yes.", "Unstable", "has", "the", "latest", "versions."])])
    (docs / "notes.md").write_text("# Notes\n\nPlain Markdown stays as it was read.\n")
    monkeypatch.setitem(formats.READERS, ".pdf", "old-reader")  # as if an older smoldocs had read it
    first = open_index(docs, WordTokenizer(), None, index_dir=tmp_path / "idx")
    assert set(first.update.added) == {"faq.pdf", "notes.md"}
    monkeypatch.setitem(formats.READERS, ".pdf", "pdfium-1")
    again = open_index(docs, WordTokenizer(), None, index_dir=tmp_path / "idx")
    assert again.update.changed == ("faq.pdf",) and again.update.unchanged == 1
    third = open_index(docs, WordTokenizer(), None, index_dir=tmp_path / "idx")
    assert not third.update.changed and third.update.unchanged == 2
