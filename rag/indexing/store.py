"""The index on disk: a manifest, chunks JSONL, embeddings .npy and BM25 postings .npz; a crash never breaks it.

Chunks, embeddings and postings go to new generation-named files first; replacing manifest.json is the single commit
point. A run killed at any moment leaves either the old manifest with its old files, or the new one. A save that
fails removes what it wrote. The manifest holds the size and SHA-256 of every file and of itself, checked at load:
damage anywhere is an IndexCorrupt, never silently different results.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import io
import json
import os
import tempfile
import time
import uuid
import zipfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from models.paths import cache_dir
from rag.indexing.bm25 import BM25Index
from rag.errors import IndexCorrupt
from rag.types import Chunk

FORMAT = "smoldocs-index"
FORMAT_VERSION = 3  # 3: every file checksummed, ASCII-only JSON
MANIFEST = "manifest.json"
STALE_SECONDS = 600  # an unreferenced file this old was left by a killed run, not a concurrent save
READ_BLOCK = 1 << 20
SELF_SUM = "manifest_sha256"


@dataclass
class StoredIndex:
    manifest: dict
    chunks: list[Chunk]
    embeddings: np.ndarray
    bm25: BM25Index

    @property
    def bm25_terms(self) -> dict:
        """The rag.retrieval.terms.TermSettings the stored BM25 postings were built with."""
        return self.manifest["bm25_terms"]

    @property
    def settings(self) -> dict:
        return self.manifest["settings"]

    @property
    def files(self) -> dict[str, dict]:
        return self.manifest["files"]

    @property
    def skipped_files(self) -> dict[str, dict]:
        """Files no format could read: doc id -> {"sha256", "reason"}; not read again while unchanged."""
        skipped = self.manifest.get("skipped_files") or {}
        return skipped if isinstance(skipped, dict) else {}


def default_index_dir(docs_dir: Path) -> Path:
    """One cache folder per docs folder, named by a hash of its resolved path."""
    key = hashlib.sha256(str(Path(docs_dir).resolve()).encode()).hexdigest()[:16]
    return cache_dir() / "indexes" / key


def atomic_write(path: Path, data: bytes) -> None:
    """Write to a temp file in the same folder, fsync, then rename over `path`."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    _fsync_dir(path.parent)


def _fsync_dir(folder: Path) -> None:
    """Make a rename durable: the folder's entry, not only the file's bytes, must reach the disk."""
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass  # some filesystems cannot fsync a folder; the rename itself already happened
    finally:
        os.close(fd)


def chunk_to_json(chunk: Chunk) -> dict:
    return {
        "id": chunk.chunk_id,
        "doc": chunk.doc_id,
        "uri": chunk.uri,
        "heading": list(chunk.heading_path),
        "lines": [chunk.line_start, chunk.line_end],
        "text": chunk.text,
    } | ({"pages": [chunk.page_start, chunk.page_end]} if chunk.page_start else {})


def chunk_from_json(row: dict) -> Chunk:
    start, end = row["lines"]
    first_page, last_page = row.get("pages") or (0, 0)
    return Chunk(row["id"], row["doc"], row["uri"], row["text"], tuple(row["heading"]), int(start), int(end),
                 int(first_page), int(last_page))


def to_json_line(row: dict) -> bytes:
    """One JSON line that round-trips any str: ASCII only, so no code point (U+2028, a lone surrogate) can break it."""
    return json.dumps(row, ensure_ascii=True).encode("ascii") + b"\n"


def from_json_lines(data: bytes) -> list:
    """The rows to_json_line wrote; only b"\\n" ends a line, unlike str.splitlines()."""
    return [json.loads(line) for line in data.split(b"\n") if line]


def save(
    index_dir: Path,
    settings: dict,
    files: dict[str, dict],
    chunks: list[Chunk],
    embeddings: np.ndarray,
    bm25: BM25Index,
    bm25_terms: dict,
    skipped_files: dict[str, dict] | None = None,
) -> None:
    """Write a new generation, commit it by replacing the manifest, then delete older generations.

    On any failure (a full disk) the files this call wrote are removed and the previous index is left as it was.
    """
    if embeddings.shape[0] != len(chunks):
        raise ValueError(f"{len(chunks)} chunks but {embeddings.shape[0]} embedding rows")
    index_dir = Path(index_dir)
    gen = uuid.uuid4().hex[:12]
    names = {"chunks": f"chunks-{gen}.jsonl", "embeddings": f"embeddings-{gen}.npy", "bm25": f"bm25-{gen}.npz"}
    written: list[Path] = []
    try:
        checksums = {}
        for key, data in _generation_bytes(chunks, embeddings, bm25):
            path = index_dir / names[key]
            written.append(path)
            atomic_write(path, data)
            checksums[names[key]] = {"bytes": len(data), "sha256": hashlib.sha256(data).hexdigest()}
        manifest = {
            "format": FORMAT,
            "format_version": FORMAT_VERSION,
            "settings": settings,
            "chunks_file": names["chunks"],
            "embeddings_file": names["embeddings"],
            "bm25_file": names["bm25"],
            "checksums": checksums,
            "bm25_terms": bm25_terms,
            "n_chunks": len(chunks),
            "files": files,
            "skipped_files": skipped_files or {},
        }
        manifest[SELF_SUM] = _self_sum(manifest)
        with _locked(index_dir):  # two writers: each deletes the generation it really replaced
            previous = _referenced(index_dir / MANIFEST)
            atomic_write(index_dir / MANIFEST, json.dumps(manifest, indent=1, ensure_ascii=True).encode("ascii"))
            written.clear()  # committed: these files are the index now
            with contextlib.suppress(OSError):  # saved either way; leftovers go on a later save
                _clean(index_dir, keep=set(names.values()), previous=previous)
    finally:
        for path in written:
            with contextlib.suppress(OSError):
                path.unlink(missing_ok=True)


def _generation_bytes(chunks: list[Chunk], embeddings: np.ndarray, bm25: BM25Index):
    """(key, bytes) of each generation file, built one at a time."""
    yield "chunks", b"".join(to_json_line(chunk_to_json(c)) for c in chunks)
    buf = io.BytesIO()
    np.save(buf, np.ascontiguousarray(embeddings, dtype=np.float32), allow_pickle=False)
    yield "embeddings", buf.getvalue()
    buf = io.BytesIO()
    np.savez(buf, allow_pickle=False, **bm25.to_arrays())  # plain arrays: read back with allow_pickle=False
    yield "bm25", buf.getvalue()


def _self_sum(manifest: dict) -> str:
    """The manifest's checksum of its own content (every key but this one), independent of layout."""
    body = {k: v for k, v in manifest.items() if k != SELF_SUM}
    return hashlib.sha256(json.dumps(body, sort_keys=True, ensure_ascii=True).encode("ascii")).hexdigest()


@contextlib.contextmanager
def _locked(index_dir: Path):
    """An exclusive lock on the index folder itself (no lock file to leave behind), released on exit or death."""
    fd = os.open(index_dir, os.O_RDONLY)
    try:
        with contextlib.suppress(OSError):  # a filesystem without locks (some network mounts): commit unlocked
            fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def _referenced(manifest_path: Path) -> set[str]:
    """The generation files a manifest points to; empty if it is missing or unreadable."""
    try:
        manifest = json.loads(manifest_path.read_bytes())
        return {str(manifest[key]) for key in ("chunks_file", "embeddings_file", "bm25_file") if key in manifest}
    except (OSError, ValueError, TypeError, AttributeError):
        return set()


def _clean(index_dir: Path, keep: set[str], previous: set[str]) -> None:
    """Delete the generation just replaced, and leftovers of killed runs once they are clearly abandoned.

    Young unreferenced files may belong to another process saving right now, so they are left alone.
    """
    now = time.time()
    for path in index_dir.iterdir():
        name = path.name
        if name in keep or name == MANIFEST:
            continue
        ours = name.startswith(("chunks-", "embeddings-", "bm25-")) or (name.startswith(".") and name.endswith(".tmp"))
        if not ours:
            continue
        try:
            abandoned = now - path.stat().st_mtime > STALE_SECONDS
        except OSError:
            continue
        if name in previous or abandoned:
            path.unlink(missing_ok=True)


class _Vanished(IndexCorrupt):
    """A file the manifest names is gone: damage, or a concurrent save that replaced this generation."""


def load(index_dir: Path, attempts: int = 3) -> StoredIndex | None:
    """The stored index, None if there is none yet, IndexCorrupt (with the reason) if it cannot be trusted.

    A concurrent save may commit a new manifest and delete the files of the one being read: that is retried
    with the new manifest rather than reported as damage.
    """
    index_dir = Path(index_dir)
    for attempt in range(1, attempts + 1):
        try:
            return _load_once(index_dir)
        except _Vanished:
            if attempt == attempts:
                raise
    return None


def _load_once(index_dir: Path) -> StoredIndex | None:
    manifest_path = index_dir / MANIFEST
    try:
        raw = manifest_path.read_bytes()
    except (FileNotFoundError, NotADirectoryError):
        return None
    except OSError as exc:
        raise IndexCorrupt(f"unreadable manifest: {exc.strerror or exc}") from None
    manifest = _check_manifest(raw)
    try:
        data = {key: _read_verified(index_dir, manifest[f"{key}_file"], manifest["checksums"])
                for key in ("chunks", "embeddings", "bm25")}
        chunks = [chunk_from_json(row) for row in from_json_lines(data["chunks"])]
        embeddings = np.load(io.BytesIO(data["embeddings"]), allow_pickle=False)
        with np.load(io.BytesIO(data["bm25"]), allow_pickle=False) as npz:
            bm25 = BM25Index.from_arrays({key: npz[key] for key in npz.files})
        if not isinstance(manifest["bm25_terms"], dict):
            raise ValueError("bm25_terms is not an object")
        files = manifest["files"]
        settings = manifest["settings"]
        n = int(manifest["n_chunks"])
    except IndexCorrupt:
        raise
    except (OSError, ValueError, KeyError, TypeError, UnicodeDecodeError, EOFError, zipfile.BadZipFile) as exc:
        raise IndexCorrupt(f"{type(exc).__name__}: {exc}") from None
    if not isinstance(settings, dict) or not isinstance(files, dict) or not all(
        isinstance(e, dict) and isinstance(e.get("chunks"), list) and isinstance(e.get("sha256"), str)
        for e in files.values()
    ):
        raise IndexCorrupt("manifest files/settings are malformed")
    if embeddings.dtype != np.float32 or embeddings.ndim != 2 or embeddings.shape[0] != n or len(chunks) != n:
        raise IndexCorrupt(f"expected {n} chunks and embedding rows, found {len(chunks)} and {embeddings.shape}")
    listed = [cid for entry in files.values() for cid in entry["chunks"]]
    if listed != [c.chunk_id for c in chunks]:
        raise IndexCorrupt("manifest chunk ids do not match the chunks file")
    if len(bm25) != n:
        raise IndexCorrupt(f"BM25 postings cover {len(bm25)} chunks, not {n}")
    return StoredIndex(manifest, chunks, embeddings, bm25)


def _check_manifest(raw: bytes) -> dict:
    try:
        manifest = json.loads(raw)
    except ValueError as exc:
        raise IndexCorrupt(f"unreadable manifest: {exc}") from None
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
        raise IndexCorrupt("not a smoldocs index manifest")
    if manifest.get("format_version") != FORMAT_VERSION:
        raise IndexCorrupt(f"index format {manifest.get('format_version')}, this smoldocs reads {FORMAT_VERSION}")
    if manifest.get(SELF_SUM) != _self_sum(manifest):
        raise IndexCorrupt("manifest does not match its checksum")
    return manifest


def _read_verified(index_dir: Path, name: str, checksums: dict) -> bytes:
    """The bytes of one generation file, after checking its size (cheap, first) and its SHA-256 (streamed)."""
    expected = checksums[name]
    path = index_dir / name
    try:
        with open(path, "rb") as fh:
            size = os.fstat(fh.fileno()).st_size
            if size != expected["bytes"]:
                raise IndexCorrupt(f"{name} has {size} bytes, the manifest says {expected['bytes']}")
            digest = hashlib.sha256()
            data = bytearray()
            while block := fh.read(READ_BLOCK):
                digest.update(block)
                data += block
    except FileNotFoundError:
        raise _Vanished(f"missing {name}") from None
    if digest.hexdigest() != expected["sha256"]:
        raise IndexCorrupt(f"{name} does not match its checksum")
    return bytes(data)


def save_embeddings(index_dir: Path, embeddings: np.ndarray, chunk_ids: list[str]) -> bool:
    """Replace only the embedding rows of the stored index (embeddings filled in behind a saved index).

    Commits the same way as `save`: a new checksummed file, then the manifest, under the folder's lock. False,
    writing nothing, when the stored index no longer holds exactly `chunk_ids` (another save replaced it): those
    rows belong to a different index.
    """
    index_dir = Path(index_dir)
    manifest_path = index_dir / MANIFEST
    buf = io.BytesIO()
    np.save(buf, np.ascontiguousarray(embeddings, dtype=np.float32), allow_pickle=False)
    data = buf.getvalue()
    name = f"embeddings-{uuid.uuid4().hex[:12]}.npy"
    target = index_dir / name
    written: Path | None = target  # None once committed: nothing to remove
    try:
        with _locked(index_dir):
            try:
                manifest = _check_manifest(manifest_path.read_bytes())
                listed = [cid for entry in manifest["files"].values() for cid in entry["chunks"]]
                old_name = str(manifest["embeddings_file"])
            except (OSError, IndexCorrupt, KeyError, TypeError, AttributeError):
                return False
            if listed != list(chunk_ids) or embeddings.shape[0] != len(listed):
                return False
            atomic_write(target, data)
            checksums = {k: v for k, v in manifest["checksums"].items() if k != old_name}
            checksums[name] = {"bytes": len(data), "sha256": hashlib.sha256(data).hexdigest()}
            manifest.update(embeddings_file=name, checksums=checksums)
            manifest[SELF_SUM] = _self_sum(manifest)
            atomic_write(manifest_path, json.dumps(manifest, indent=1, ensure_ascii=True).encode("ascii"))
            written = None  # committed
            with contextlib.suppress(OSError):
                (index_dir / old_name).unlink(missing_ok=True)
        return True
    finally:
        if written is not None:
            with contextlib.suppress(OSError):
                written.unlink(missing_ok=True)
