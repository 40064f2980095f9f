"""Document formats: which parser reads which file suffix, and the Layout each one produces for the chunker.

Text formats (Markdown, reStructuredText, AsciiDoc, HTML, plain text) are decoded by rag.ingest.corpus and parsed
from that text; file formats (PDF) are read from the file itself when the index chunks them, so an unchanged
50 MB PDF is never opened again and a changed one reports progress page by page.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from rag.ingest.blocks import Unit, parse_units
from rag.errors import Unreadable

# suffix -> syntax. ".txt" is Markdown unless it looks like AsciiDoc (git's manual pages are .txt).
TEXT_FORMATS = {
    ".md": "md", ".markdown": "md", ".txt": "txt", ".rst": "rst", ".adoc": "adoc", ".asciidoc": "adoc",
    ".html": "html", ".htm": "html", ".xhtml": "html",
}
FILE_FORMATS = {".pdf": "pdf"}
# Which reader made a file's stored chunks, for formats whose reader changed what it extracts: a stored file read
# by another reader is read again (PDFs: pypdf ran words together where PDFium spaces them).
READERS = {".pdf": "pdfium-1"}
SUFFIXES = tuple(TEXT_FORMATS) + tuple(FILE_FORMATS)
PageFn = Callable[[int, int], None]
_READ_BLOCK = 1 << 20


@dataclass(frozen=True)
class Layout:
    """A document as the chunker sees it: text, its units, and where each line of that text came from.

    `line_pages` (PDF) gives the 1-based page of every line of `text`; `line_sources` (HTML) the line of the
    source file. Both empty: lines of `text` are lines of the file.
    """

    text: str
    units: tuple[Unit, ...]
    line_pages: tuple[int, ...] = ()
    line_sources: tuple[int, ...] = ()


def suffix_of(doc_id: str) -> str:
    name = doc_id.rsplit("/", 1)[-1]
    return name[name.rfind(".") :].lower() if "." in name else ""


def reader_of(doc_id: str) -> str | None:
    """The reader version a file's stored chunks must come from (None: any)."""
    return READERS.get(suffix_of(doc_id))


def syntax_for(doc_id: str, text: str = "") -> str:
    """The syntax a document is parsed as: md, rst, adoc, html, pdf, man or info (unknown suffixes: md)."""
    from rag.ingest.formats.manuals import info_name, man_parts

    if man_parts(doc_id) is not None:
        return "man"
    if info_name(doc_id) is not None:
        return "info"
    suffix = suffix_of(doc_id)
    syntax = TEXT_FORMATS.get(suffix) or FILE_FORMATS.get(suffix, "md")
    if syntax == "txt":
        from rag.ingest.formats.asciidoc import looks_like_asciidoc

        return "adoc" if looks_like_asciidoc(text) else "md"
    return syntax


def is_file_format(doc_id: str) -> bool:
    """True when the document is read from its file at chunking time (PDF), not from decoded text."""
    return suffix_of(doc_id) in FILE_FORMATS


def parse_text(doc_id: str, text: str) -> Layout:
    """The Layout of a text document, by the syntax its suffix (and for .txt, its content) names."""
    syntax = syntax_for(doc_id, text)
    if syntax == "html":
        from rag.ingest.formats.html import html_layout

        return html_layout(text)
    if syntax == "man":
        from rag.ingest.formats.roff import man_layout

        return man_layout(text)
    if syntax == "info":
        from rag.ingest.formats.info import info_layout

        return info_layout(text)
    if syntax == "adoc":
        from rag.ingest.formats.asciidoc import parse_adoc

        return Layout(text, tuple(parse_adoc(text)))
    if syntax == "pdf":
        raise ValueError(f"{doc_id} is a PDF: read it with read_layout(), not from text")
    return Layout(text, tuple(parse_units(text, syntax)))


def stream_digest(path: Path) -> str:
    """The sha256 of a file, read in 1 MB blocks (a large PDF is never held whole for hashing)."""
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        while block := fh.read(_READ_BLOCK):
            digest.update(block)
    return digest.hexdigest()


def read_layout(doc_id: str, path: Path, text: str, sha256: str, on_page: PageFn | None = None) -> Layout:
    """The Layout of any document: parsed from `text`, or for a file format read from `path`.

    A text file its parser fails on (of any exception) is Unreadable too, counted as "unparsable <syntax>".
    A file format whose bytes no longer hash to `sha256` (it changed while being indexed) is Unreadable: the
    next index run sees its new content and reads it then.
    """
    if not is_file_format(doc_id):
        try:
            return parse_text(doc_id, text)
        except Exception as exc:  # one page a parser cannot take is skipped, never the whole index
            raise Unreadable(f"unparsable {syntax_for(doc_id, text).upper()}") from exc
    from rag.ingest.formats.pdf import pdf_layout

    try:
        layout = pdf_layout(path, on_page)
    except Unreadable:
        # A file saved over while it was read can look damaged: that is a change, read again next time.
        if not _same_file(path, sha256):
            raise Unreadable("changed while being indexed") from None
        raise
    if not _same_file(path, sha256):
        raise Unreadable("changed while being indexed")
    return layout


def _same_file(path: Path, sha256: str) -> bool:
    try:
        return stream_digest(path) == sha256
    except OSError:
        return False
