"""PDF to a Layout through PDFium (pypdfium2): the text of each page, headings from the outline, the page of every line.

PDFium places words by their glyph positions, so word gaps a PDF sets as text-position shifts rather than space
characters (TeX's output) still read as spaces. A file PDFium cannot open, one encrypted with a password we do
not have, and one with no text layer (a scan) raise Unreadable with a short reason the index counts. Pages are
read one at a time with a callback after each, so a large PDF shows progress; nothing but the extracted text is
kept. Words hyphenated at a line end are joined or kept hyphenated by the document's own spellings.
"""

from __future__ import annotations

import re
import threading
from pathlib import Path
from typing import Callable

from rag.ingest.blocks import Unit
from rag.errors import Unreadable
from rag.ingest.formats import Layout
from rag.ingest.formats.hyphenation import join_hyphenated, spellings

_SPACE = re.compile(r"\s+")
_BLANK_RUN = re.compile(r"\n[ \t]*\n(?:[ \t]*\n)+")
# A combining grave with no letter to sit on: TeX fonts whose ToUnicode map gives the opening quote's glyph as
# U+0300 (the debian-faq PDF's `‘stable’`).
_LONE_GRAVE = re.compile(r"(?<![^\W\d_])\u0300")
PageFn = Callable[[int, int], None]
# PDFium is not thread-safe: one PDF is read at a time in this process (the live indexer and a tool may both read).
_PDFIUM = threading.Lock()
# PDFium keeps what it parsed (image streams too) until the document closes, so it is reopened every so many pages.
# Fitted on a 52 MB 300-page fpdf2 PDF, PDFium alone: 82 MB peak never reopened, 22 MB at 10 (bashref 1.57 s vs 1.32).
_REOPEN_EVERY = 10


def _outline(doc) -> dict[int, list[tuple[int, str]]]:
    """0-based page -> [(level, title)] from the outline (bookmarks), in outline order; {} when there is none."""
    found: dict[int, list[tuple[int, str]]] = {}
    try:
        for item in doc.get_toc():
            dest = item.get_dest()
            page = dest.get_index() if dest is not None else None
            title = _SPACE.sub(" ", item.get_title() or "").strip()
            if title and page is not None and page >= 0:
                found.setdefault(page, []).append((min(item.level + 1, 6), title))
    except Exception:  # a broken outline tree: the text is still worth indexing without headings
        return {}
    return found


def _page_text(doc, index: int) -> str:
    try:
        page = doc[index]
    except Exception:  # one undecodable page loses that page, not the file
        return ""
    try:
        textpage = page.get_textpage()
        try:
            text = textpage.get_text_bounded() or ""
        finally:
            textpage.close()
    except Exception:
        text = ""
    finally:
        page.close()  # memory stays that of one page, not of the whole file
    text = text.replace("\r\n", "\n").replace("\r", "\n").replace("\x00", "")
    text = _LONE_GRAVE.sub("\u2018", text)
    lines = [line.rstrip() for line in text.split("\n")]
    return _BLANK_RUN.sub("\n\n", "\n".join(lines)).strip("\n")


def _normalized(line: str) -> str:
    return _SPACE.sub(" ", line).strip().casefold()


def pdf_layout(path: Path, on_page: PageFn | None = None) -> Layout:
    """The Layout of a PDF file; Unreadable if it cannot be opened, is encrypted, or has no text at all."""
    with _PDFIUM:
        doc = _open_pdf(path)
        try:
            total = len(doc)
            headings = _outline(doc)
            pages: list[str] = []
            for index in range(total):
                if index and index % _REOPEN_EVERY == 0:
                    doc.close()
                    doc = _open_pdf(path)
                pages.append(_page_text(doc, index))
                if on_page is not None:
                    on_page(index + 1, total)
        finally:
            doc.close()
    if not any(text.strip() for text in pages):
        raise Unreadable("PDF without a text layer (scanned?)" if total else "empty PDF")
    words = spellings(pages)
    return _layout_of_pages([join_hyphenated(text, words) for text in pages], headings)


def _open_pdf(path: Path):
    import pypdfium2 as pdfium
    import pypdfium2.raw as pdfium_c

    try:
        # A path, not bytes: PDFium then reads the file as pages need it instead of holding all of it.
        return pdfium.PdfDocument(Path(path))
    except OSError:
        raise Unreadable("unreadable file") from None
    except pdfium.PdfiumError as exc:
        if exc.err_code in (pdfium_c.FPDF_ERR_PASSWORD, pdfium_c.FPDF_ERR_SECURITY):
            raise Unreadable("encrypted PDF") from None
        raise Unreadable("empty PDF" if exc.err_code == pdfium_c.FPDF_ERR_SUCCESS else "unreadable PDF") from None


def _layout_of_pages(page_texts: list[str], headings: dict[int, list[tuple[int, str]]]) -> Layout:
    parts: list[str] = []
    units: list[Unit] = []
    pages_of_lines: list[int] = []
    pos = 0

    def add(kind: str, text: str, page: int, **fields) -> None:
        nonlocal pos
        if parts:
            parts.append("\n\n")
            pos += 2
            pages_of_lines.append(pages_of_lines[-1])
        units.append(Unit(kind, pos, pos + len(text), **fields))
        parts.append(text)
        pages_of_lines.extend([page] * (text.count("\n") + 1))
        pos += len(text)

    for index, page_text in enumerate(page_texts):
        lines = page_text.split("\n") if page_text else []
        titles = headings.get(index, [])
        placed: dict[int, tuple[int, str]] = {}  # line index -> heading that replaces it
        for level, title in titles:
            want = _normalized(title)
            row = next((r for r, line in enumerate(lines) if r not in placed and _normalized(line) == want), None)
            if row is None:
                add("heading", f"{'#' * level} {title}", index + 1, level=level, title=title)
            else:
                placed[row] = (level, title)
        para: list[str] = []
        for r, line in enumerate(lines + [""]):
            if r in placed or not line.strip():
                if para:
                    add("para", "\n".join(para), index + 1)
                    para = []
                if r in placed:
                    level, title = placed[r]
                    add("heading", f"{'#' * level} {title}", index + 1, level=level, title=title)
                continue
            para.append(line)
    return Layout("".join(parts), tuple(units), line_pages=tuple(pages_of_lines))
