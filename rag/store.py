"""The index on disk: a manifest, chunks JSONL, embeddings .npy and BM25 postings .npz; a crash never breaks it.

Chunks, embeddings and postings go to new generation-named files first; replacing manifest.json is the single commit
point. A run killed at any moment leaves either the old manifest with its old files, or the new one.
"""

from __future__ import annotations

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
from rag.bm25 import BM25Index
from rag.errors import IndexCorrupt
from rag.types import Chunk

FORMAT = "smoldocs-index"
FORMAT_VERSION = 2
MANIFEST = "manifest.json"
STALE_SECONDS = 600  # an unreferenced file this old was left by a killed run, not a concurrent save


@dataclass
class StoredIndex:
    manifest: dict
    chunks: list[Chunk]
    embeddings: np.ndarray
    bm25: BM25Index

    @property
    def bm25_terms(self) -> dict:
        """The rag.terms.TermSettings the stored BM25 postings were built with."""
        return self.manifest["bm25_terms"]

    @property
    def settings(self) -> dict:
        return self.manifest["settings"]

    @property
    def files(self) -> dict[str, dict]:
        return self.manifest["files"]


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


def chunk_to_json(chunk: Chunk) -> dict:
    return {
        "id": chunk.chunk_id,
        "doc": chunk.doc_id,
        "uri": chunk.uri,
        "heading": list(chunk.heading_path),
        "lines": [chunk.line_start, chunk.line_end],
        "text": chunk.text,
    }


def chunk_from_json(row: dict) -> Chunk:
    start, end = row["lines"]
    return Chunk(row["id"], row["doc"], row["uri"], row["text"], tuple(row["heading"]), int(start), int(end))


def save(
    index_dir: Path,
    settings: dict,
    files: dict[str, dict],
    chunks: list[Chunk],
    embeddings: np.ndarray,
    bm25: BM25Index,
    bm25_terms: dict,
) -> None:
    """Write a new generation, commit it by replacing the manifest, then delete older generations."""
    if embeddings.shape[0] != len(chunks):
        raise ValueError(f"{len(chunks)} chunks but {embeddings.shape[0]} embedding rows")
    index_dir = Path(index_dir)
    gen = uuid.uuid4().hex[:12]
    chunks_name, emb_name, bm25_name = f"chunks-{gen}.jsonl", f"embeddings-{gen}.npy", f"bm25-{gen}.npz"
    chunk_bytes = "".join(json.dumps(chunk_to_json(c), ensure_ascii=False) + "\n" for c in chunks).encode()
    atomic_write(index_dir / chunks_name, chunk_bytes)
    buf = io.BytesIO()
    np.save(buf, np.ascontiguousarray(embeddings, dtype=np.float32), allow_pickle=False)
    atomic_write(index_dir / emb_name, buf.getvalue())
    buf = io.BytesIO()
    np.savez(buf, **bm25.to_arrays())
    atomic_write(index_dir / bm25_name, buf.getvalue())
    manifest = {
        "format": FORMAT,
        "format_version": FORMAT_VERSION,
        "settings": settings,
        "chunks_file": chunks_name,
        "chunks_sha256": hashlib.sha256(chunk_bytes).hexdigest(),
        "embeddings_file": emb_name,
        "bm25_file": bm25_name,
        "bm25_terms": bm25_terms,
        "n_chunks": len(chunks),
        "files": files,
    }
    previous = _referenced(index_dir / MANIFEST)
    atomic_write(index_dir / MANIFEST, json.dumps(manifest, indent=1, ensure_ascii=False).encode())
    _clean(index_dir, keep={chunks_name, emb_name, bm25_name}, previous=previous)


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


def load(index_dir: Path) -> StoredIndex | None:
    """The stored index, None if there is none yet, IndexCorrupt (with the reason) if it cannot be trusted."""
    index_dir = Path(index_dir)
    manifest_path = index_dir / MANIFEST
    if not manifest_path.exists():
        return None
    try:
        manifest = json.loads(manifest_path.read_bytes())
    except (OSError, ValueError) as exc:
        raise IndexCorrupt(f"unreadable manifest: {exc}") from None
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
        raise IndexCorrupt("not a smoldocs index manifest")
    if manifest.get("format_version") != FORMAT_VERSION:
        raise IndexCorrupt(f"index format {manifest.get('format_version')}, this smoldocs reads {FORMAT_VERSION}")
    try:
        chunk_bytes = (index_dir / manifest["chunks_file"]).read_bytes()
        if hashlib.sha256(chunk_bytes).hexdigest() != manifest["chunks_sha256"]:
            raise IndexCorrupt("chunks file does not match its checksum")
        chunks = [chunk_from_json(json.loads(line)) for line in chunk_bytes.decode().splitlines() if line]
        embeddings = np.load(index_dir / manifest["embeddings_file"], allow_pickle=False)
        with np.load(index_dir / manifest["bm25_file"], allow_pickle=False) as npz:
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
