"""Loading a docs folder: text files in, everything else counted and skipped.

The walk cannot loop: folders are visited once by their real identity, symlinked folders are never followed, and
a link that loops is counted as "symlink loop". A file is text by its content, not its name: NUL bytes or many
control characters in its first few KB make it "binary".
"""

from __future__ import annotations

import errno
import hashlib
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Mapping, cast

import rag
from rag.errors import DocsNotFound
from rag.ingest.formats import FILE_FORMATS, SUFFIXES, TEXT_FORMATS, stream_digest
from rag.ingest.formats.manuals import is_manual, man_parts
from rag.ingest.decoding import SNIFF_BYTES, decode_text, looks_binary, sniffed
from rag.ingest.man_pages import ManSource, Skip, file_stamps, read_manual, stamps_hold

TEXT_SUFFIXES = tuple(TEXT_FORMATS)
# Folders that hold generated output or tooling, never docs a user wrote.
SKIPPED_DIRS = frozenset(
    {"build", "_build", "dist", "site", "target", "node_modules", "__pycache__", "venv", "env", "out"}
)
# A text file larger than this is skipped as "too large (over 20 MB)": it is read whole, decoded and chunked in
# memory, and 1 GB of Markdown once took 9 GB. The largest page of the bundled docs is 19 KB.
MAX_TEXT_FILE_BYTES = 20 * 1024 * 1024


@dataclass(frozen=True)
class Document:
    """One text file of the docs folder; `doc_id` is its relative posix path."""

    doc_id: str
    path: Path
    text: str
    sha256: str  # of the raw bytes, before decoding
    # A manual's files as they were when its text was read (man_pages.file_stamps). A manual whose stamps still
    # hold is not read again: its text is "" and its sha256 the stored one.
    stamps: tuple = ()

    @property
    def suffix(self) -> str:
        return Path(self.doc_id).suffix.lower()


@dataclass
class Corpus:
    """The documents of a folder, sorted by id, and how many files were skipped for which reason."""

    root: Path
    documents: list[Document]
    skipped: dict[str, int] = field(default_factory=dict)

    def skipped_summary(self) -> str:
        parts = [f"{n} {why}" for why, n in sorted(self.skipped.items()) if n]
        return ", ".join(parts) if parts else "none"


def default_docs_dir() -> Path:
    """The bundled course docs: the repo's docs_corpus/ next to the rag package."""
    return Path(rag.__file__).resolve().parent.parent / "docs_corpus"


def file_digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def check_docs_dir(docs_dir: str | os.PathLike[str]) -> Path:
    """The resolved folder, or one clear error if it is not a readable folder (`--man`'s pages: as they are)."""
    if isinstance(docs_dir, ManSource):
        check_docs_dir(docs_dir.root)
        # It stands in for the folder (os.fspath, /, str give its root) and load_corpus reads only its pages.
        return cast(Path, docs_dir)
    if not str(docs_dir).strip():  # Path("") is the current folder: a stray --docs "" once indexed all of it
        raise DocsNotFound("--docs is empty: pass --docs DIR to a folder of docs, or leave it out for the bundled docs")
    path = Path(docs_dir).expanduser()
    if not path.exists():
        raise DocsNotFound(f"docs folder not found: {path}: pass --docs DIR to a folder of .md/.txt/.rst/.adoc files")
    if not path.is_dir():
        raise DocsNotFound(f"not a folder: {path}: pass --docs DIR to a folder, not a file")
    return path.resolve()


def display_id(relative: str) -> str:
    """A printable id for a relative path: bytes a file name holds that are not UTF-8 are shown as \\xNN."""
    return relative.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")


def _count(skipped: dict[str, int], why: str) -> None:
    skipped[why] = skipped.get(why, 0) + 1


def _link_problem(path: Path, root: Path) -> str | None:
    """Why a symlink is not followed (loop, broken, outside the docs folder, a folder), None for a file inside."""
    try:
        target = Path(os.path.realpath(path, strict=True))
    except OSError as exc:
        return "symlink loop" if exc.errno == errno.ELOOP else "broken symlink"
    if not target.is_relative_to(root):
        return "symlink outside"
    if target.is_dir():
        # Walking it would revisit files already found at their real place, or loop when it is an ancestor.
        return "symlink loop" if Path(os.path.realpath(path.parent)).is_relative_to(target) else "symlinked folder"
    return None


def iter_candidate_files(root: Path, skipped: dict[str, int]):
    """Yield (id, path) of every visible regular file, sorted by path, counting what is left out and why.

    The walk keeps its own stack of open folders: 1,100 nested folders once ran out of Python's recursion.
    """
    visited: set[tuple[int, int]] = set()
    stack = [_folder_entries(root, root, visited, skipped)]
    while stack:
        entry = next(stack[-1], None)
        if entry is None:
            stack.pop()
            continue
        path, kind = entry
        if kind == "folder":
            stack.append(_folder_entries(path, root, visited, skipped))
        else:
            yield display_id(path.relative_to(root).as_posix()), path


def _folder_entries(folder: Path, root: Path, visited: set[tuple[int, int]], skipped: dict[str, int]):
    """(path, "folder" | "file") for the entries of one folder worth visiting, by name; the rest counted."""
    try:
        st = os.stat(folder)
        if (st.st_dev, st.st_ino) in visited:  # a bind mount of an ancestor: walking on would never end
            _count(skipped, "symlink loop")
            return
        visited.add((st.st_dev, st.st_ino))
        with os.scandir(folder) as it:
            entries = sorted(it, key=lambda e: e.name)
    except OSError:
        _count(skipped, "unreadable")
        return
    for entry in entries:
        path = folder / entry.name
        if entry.name.startswith("."):
            _count(skipped, "hidden")
            continue
        problem = _link_problem(path, root) if entry.is_symlink() else None
        if problem:
            _count(skipped, problem)
            continue
        try:
            is_dir, is_file = entry.is_dir(), entry.is_file()
        except OSError:
            _count(skipped, "unreadable")
            continue
        if is_dir and (entry.name in SKIPPED_DIRS or entry.name.endswith(".egg-info")):
            _count(skipped, "build folder")
        elif is_dir:
            yield path, "folder"
        elif is_file:
            yield path, "file"
        else:
            _count(skipped, "not a regular file")  # a FIFO named .md would block the read forever


def _read_text_file(path: Path) -> tuple[bytes | None, str]:
    """The file's bytes, or None and why it is skipped; a binary file is judged on its head, not read whole.

    A file over MAX_TEXT_FILE_BYTES is refused from its size, and the read stops one byte past the cap, since a
    size can lie (files under /proc say 0) or grow while the file is read.
    """
    try:
        with open(path, "rb") as fh:
            if os.fstat(fh.fileno()).st_size > MAX_TEXT_FILE_BYTES:
                return None, _too_large()
            head = fh.read(SNIFF_BYTES)
            if looks_binary(sniffed(head)):
                return None, "binary"
            data = head + fh.read(max(0, MAX_TEXT_FILE_BYTES + 1 - len(head)))
    except OSError:
        return None, "unreadable"
    return (None, _too_large()) if len(data) > MAX_TEXT_FILE_BYTES else (data, "")


def _too_large() -> str:
    """The skip reason of a text file over the cap, naming the cap: "too large (over 20 MB)"."""
    return f"too large (over {MAX_TEXT_FILE_BYTES / 2**20:g} MB)"


def _candidates(docs_dir, root: Path, skipped: dict[str, int]):
    """(id, path) of the files to read: every file of a folder, or the chosen pages of `--man`'s man trees.

    Translated man pages (`de/man1/ls.1.gz`) are counted and left out; `--docs /usr/share/man/de` reads them.
    """
    source = docs_dir if isinstance(docs_dir, ManSource) else None
    top = source.root if source is not None else root
    for tree in source.trees if source is not None else (root,):
        prefix = "" if tree == top else tree.relative_to(top).as_posix() + "/"
        for doc_id, path in iter_candidate_files(tree, skipped):
            doc_id = prefix + doc_id
            man = man_parts(doc_id)
            if source is not None and not source.wants(doc_id):
                if man is None:
                    _count(skipped, "not a man page")
            elif man is not None and man[2]:
                _count(skipped, "translated man page")
            else:
                yield doc_id, path


def load_corpus(docs_dir: str | os.PathLike[str], on_document: Callable[[int], None] | None = None,
                known: Mapping[str, dict] | None = None) -> Corpus:
    """Read every text file under `docs_dir`, calling on_document(count so far) as each is read.

    `known`: doc id -> {"sha256", "stamps"} of manuals read before; one whose files are unchanged is not read.
    Raises DocsNotFound if there is none.
    """
    root = check_docs_dir(docs_dir)
    skipped: dict[str, int] = {}
    documents: list[Document] = []
    candidates = list(_candidates(docs_dir, root, skipped))
    man_pages = {os.path.realpath(path) for doc_id, path in candidates if man_parts(doc_id) is not None}
    for doc_id, path in candidates:
        if is_manual(doc_id):  # man pages and info manuals: read by name, maybe gzipped, `.so` followed
            memo = (known or {}).get(doc_id)
            if memo is not None and stamps_hold(memo.get("stamps")):
                stamps = tuple(tuple(s) for s in memo["stamps"])
                documents.append(Document(doc_id=doc_id, path=path, text="", sha256=memo["sha256"], stamps=stamps))
                if on_document is not None:
                    on_document(len(documents))
                continue
            sources: list[Path] = []
            try:
                text = read_manual(doc_id, path, man_pages, sources)
                stamps = file_stamps(sources)
            except Skip as why:
                _count(skipped, str(why))
                continue
            except OSError:  # gone between reading and stat
                _count(skipped, "unreadable")
                continue
            if not text.strip():
                _count(skipped, "empty")
                continue
            documents.append(Document(doc_id=doc_id, path=path, text=text, sha256=file_digest(text.encode()),
                                      stamps=stamps))
            if on_document is not None:
                on_document(len(documents))
            continue
        if path.suffix.lower() in FILE_FORMATS:  # a PDF is read when it is chunked, if it changed: hash it only
            try:
                documents.append(Document(doc_id=doc_id, path=path, text="", sha256=stream_digest(path)))
            except OSError:
                _count(skipped, "unreadable")
                continue
            if on_document is not None:
                on_document(len(documents))
            continue
        if path.suffix.lower() not in TEXT_SUFFIXES:
            _count(skipped, "not text")
            continue
        data, unread = _read_text_file(path)
        if data is None:
            _count(skipped, unread)
            continue
        text = decode_text(data)
        if not text.strip():
            _count(skipped, "empty")
            continue
        documents.append(Document(doc_id=doc_id, path=path, text=text, sha256=file_digest(data)))
        if on_document is not None:
            on_document(len(documents))
    if not documents:
        raise DocsNotFound(
            f"no text files in {root} (looked for {', '.join(SUFFIXES)}): "
            "pass --docs DIR to a folder of docs"
        )
    documents.sort(key=lambda d: d.doc_id)
    return Corpus(root=root, documents=documents, skipped=skipped)
