"""Loading a docs folder: text files in, everything else counted and skipped."""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass, field
from pathlib import Path

import rag
from rag.errors import DocsNotFound

TEXT_SUFFIXES = (".md", ".markdown", ".txt", ".rst", ".adoc")
# Folders that hold generated output or tooling, never docs a user wrote.
SKIPPED_DIRS = frozenset(
    {"build", "_build", "dist", "site", "target", "node_modules", "__pycache__", "venv", "env", "out"}
)


@dataclass(frozen=True)
class Document:
    """One text file of the docs folder; `doc_id` is its relative posix path."""

    doc_id: str
    path: Path
    text: str
    sha256: str  # of the raw bytes, before decoding

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


def decode_text(data: bytes) -> str:
    """UTF-8 with bad bytes replaced (never an error), no BOM, newlines normalized to \\n."""
    text = data.decode("utf-8", errors="replace")
    if text.startswith("\ufeff"):
        text = text[1:]
    return text.replace("\r\n", "\n").replace("\r", "\n")


def check_docs_dir(docs_dir: str | os.PathLike[str]) -> Path:
    """The resolved folder, or one clear error if it is not a readable folder."""
    path = Path(docs_dir).expanduser()
    if not path.exists():
        raise DocsNotFound(f"docs folder not found: {path}: pass --docs DIR to a folder of .md/.txt/.rst/.adoc files")
    if not path.is_dir():
        raise DocsNotFound(f"not a folder: {path}: pass --docs DIR to a folder, not a file")
    return path.resolve()


def _inside(path: Path, root: Path) -> bool:
    try:
        path.relative_to(root)
        return True
    except ValueError:
        return False


def iter_candidate_files(root: Path, skipped: dict[str, int]):
    """Yield (relative posix id, path) of every visible file, counting what is left out and why."""
    for folder, dirnames, filenames in os.walk(root, followlinks=False):
        here = Path(folder)
        kept = []
        for name in sorted(dirnames):
            sub = here / name
            if name.startswith("."):
                skipped["hidden"] = skipped.get("hidden", 0) + 1
            elif name in SKIPPED_DIRS or name.endswith(".egg-info"):
                skipped["build folder"] = skipped.get("build folder", 0) + 1
            elif sub.is_symlink():
                # A linked folder can loop or duplicate files; only files may be linked in.
                skipped["symlinked folder"] = skipped.get("symlinked folder", 0) + 1
            else:
                kept.append(name)
        dirnames[:] = kept
        for name in sorted(filenames):
            path = here / name
            if name.startswith("."):
                skipped["hidden"] = skipped.get("hidden", 0) + 1
                continue
            if path.is_symlink() and not _inside(path.resolve(), root):
                skipped["symlink outside"] = skipped.get("symlink outside", 0) + 1
                continue
            yield path.relative_to(root).as_posix(), path


def load_corpus(docs_dir: str | os.PathLike[str]) -> Corpus:
    """Read every text file under `docs_dir`; raise DocsNotFound if there is none."""
    root = check_docs_dir(docs_dir)
    skipped: dict[str, int] = {}
    documents: list[Document] = []
    for doc_id, path in iter_candidate_files(root, skipped):
        if path.suffix.lower() not in TEXT_SUFFIXES:
            skipped["not text"] = skipped.get("not text", 0) + 1
            continue
        try:
            data = path.read_bytes()
        except OSError:
            skipped["unreadable"] = skipped.get("unreadable", 0) + 1
            continue
        text = decode_text(data)
        if not text.strip():
            skipped["empty"] = skipped.get("empty", 0) + 1
            continue
        documents.append(Document(doc_id=doc_id, path=path, text=text, sha256=file_digest(data)))
    if not documents:
        raise DocsNotFound(
            f"no text files in {root} (looked for {', '.join(TEXT_SUFFIXES)}): "
            "pass --docs DIR to a folder of docs"
        )
    documents.sort(key=lambda d: d.doc_id)
    return Corpus(root=root, documents=documents, skipped=skipped)
