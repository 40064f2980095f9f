"""A large corpus of real documentation from this machine, chunked by smoldocs' own chunker and cached on disk.

Run: nice -n 19 .venv/bin/python -m benchmarks.real_corpus [--max-chunks N] [--minutes M] [--workers 2]
     .venv/bin/python -m benchmarks.real_corpus --packages   # the apt-get line for the extra doc packages

For benchmarks.shared_store's real-rows mode: the store at hundreds of thousands of chunks of real text. Sources, in
this order: the real-docs suite's package folders (<cache>/realdocs, so the suite's questions have their answers
near the front), every section of the man pages (through rag.ingest.man_pages, as `--man` reads them), the info
manuals, then /usr/share/doc package by package. Left out: the reserved packages (git-doc, nodejs-doc, sqlite3-doc:
their /usr/share/doc folders and the git, node and sqlite3 man pages, which are the same text), the suite's
machine-manuals package (a copy of man pages read anyway) and the /usr/share/doc folders the suite's packages were
copied from. Documents are chunked in batches; a batch's chunks are cached under <cache>/realcorpus by a hash of its
documents' ids, content hashes and the chunker's settings, and manifest.jsonl lists the batches in order, so a rerun
chunks only what changed and a reader loads the first N chunks without reading a document.

What it reaches depends on what is installed. The real-docs suite's packages and Debian's base system give about
358k chunks; the 1M-chunk corpus of 2026-12-03 also had DOC_PACKAGES installed (`--packages` prints the apt-get
line: about 2 GB of HTML manuals and API references, none of them reserved). CI never needs them: the large runs
stay in the benchmark.
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import json
import os
import re
import time
from dataclasses import replace
from multiprocessing import get_context
from pathlib import Path
from typing import Iterator

from models.paths import cache_dir
from rag.errors import DocsNotFound, Unreadable
from rag.ingest.chunking import CHUNKER_VERSION, ChunkSettings, chunk_id, chunk_layout
from rag.ingest.corpus import Document, load_corpus
from rag.ingest.formats import read_layout
from rag.types import Chunk

RESERVED = ("git-doc", "nodejs-doc", "sqlite3-doc")  # for independent checks only: never read
RESERVED_DOC_DIR = re.compile(r"^(git|git-doc|git-man|node|nodejs|nodejs-doc|sqlite3|sqlite3-doc|lib.*sqlite3.*)$")
RESERVED_MAN_PAGE = re.compile(r"^(git|node|sqlite3)")  # git-man's pages are git-doc's text as roff
SKIPPED_PACKAGES = ("machine-manuals", "rerank-pairs")  # a copy of man pages; training pairs, not a package
DOC_ROOT = Path("/usr/share/doc")
INFO_ROOT = Path("/usr/share/info")
MAN_SECTIONS = ("1", "2", "3", "4", "5", "6", "7", "8", "9", "n", "l")
BATCH_DOCS = 40
# Debian 12 documentation packages installed for the 1M-chunk corpus (apt-get install --no-install-recommends;
# openjdk-17-doc pulls in the JDK, tcl8.6-doc and libstdc++-12-doc add man pages in section 3).
DOC_PACKAGES = ("cmake-doc", "erlang-doc", "ffmpeg-doc", "libboost1.74-doc", "libgtk-3-doc", "libstdc++-12-doc",
                "llvm-14-doc", "openjdk-17-doc", "python-pandas-doc", "python-scipy-doc", "rust-doc", "tcl8.6-doc",
                "vim-doc")


def corpus_dir(settings: ChunkSettings = ChunkSettings()) -> Path:
    """Where the corpus of these chunker settings is cached."""
    key = hashlib.sha256(json.dumps([CHUNKER_VERSION, settings.to_dict()], sort_keys=True).encode()).hexdigest()[:12]
    return cache_dir() / "realcorpus" / key


def _suite_packages() -> list[tuple[str, Path, Path | None]]:
    """(name, cache folder, folder it was copied from) of the suite's built packages."""
    from benchmarks.realdocs.suite import load_packages

    out = []
    for package in load_packages():
        folder = package.folder()
        if package.in_repo or package.name in SKIPPED_PACKAGES or package.name in RESERVED or not folder.is_dir():
            continue
        out.append((package.name, folder, package.source))
    return out


def _loaded(folder) -> list[Document]:
    try:
        return load_corpus(folder).documents
    except DocsNotFound:
        return []


def _prefixed(prefix: str, docs: list[Document]) -> Iterator[tuple[str, Document]]:
    for doc in docs:
        yield prefix, doc


def documents(suite: bool = True, man_sections: tuple[str, ...] = MAN_SECTIONS,
              rest: bool = True) -> Iterator[tuple[str, Document]]:
    """(id prefix, document) of every source in order (suite packages, man pages, and with `rest` info manuals and
    /usr/share/doc); a document keeps its own id, which its format depends on."""
    from rag.ingest.man_pages import man_source

    packages = _suite_packages()
    for name, folder, _source in packages if suite else []:
        yield from _prefixed(f"realdocs/{name}/", _loaded(folder))
    for section in man_sections:
        try:
            pages = _loaded(man_source(section))
        except DocsNotFound:
            continue
        pages = [d for d in pages if not RESERVED_MAN_PAGE.match(Path(d.doc_id).name)]
        yield from _prefixed("man/", [d for d in pages if _section_of(d.doc_id) == section])
    if not rest:
        return
    if INFO_ROOT.is_dir():
        yield from _prefixed("info/", _loaded(INFO_ROOT))
    copied = [Path(os.path.realpath(s)) for _n, _f, s in packages if s is not None]
    seen: set[str] = set()
    for folder in sorted(DOC_ROOT.iterdir()) if DOC_ROOT.is_dir() else []:
        real = os.path.realpath(folder)
        if RESERVED_DOC_DIR.match(folder.name) or real in seen or not folder.is_dir():
            continue
        seen.add(real)
        if any(s.is_relative_to(real) for s in copied):
            continue
        yield from _prefixed(f"doc/{folder.name}/", _loaded(folder))


def _section_of(doc_id: str) -> str:
    """The man section folder a page sits in ("3" for man3/printf.3ssl.gz), so each page is read once."""
    from rag.ingest.formats.manuals import man_parts

    parts = man_parts(doc_id)
    return parts[1][0] if parts else ""


def _batches(items: Iterator[tuple[str, Document]], size: int) -> Iterator[list[tuple[str, Document]]]:
    batch: list[tuple[str, Document]] = []
    for item in items:
        batch.append(item)
        if len(batch) == size:
            yield batch
            batch = []
    if batch:
        yield batch


def batch_key(batch: list[tuple[str, Document]], settings: ChunkSettings) -> str:
    """Names a batch's cached chunks: its documents' ids and content hashes, and the chunker's settings."""
    spec = [CHUNKER_VERSION, settings.to_dict(), [(p + d.doc_id, d.sha256) for p, d in batch]]
    return hashlib.sha256(json.dumps(spec).encode()).hexdigest()[:24]


def chunk_batch(batch: list[tuple[str, Document]], settings: ChunkSettings, tokenizer=None) -> list[Chunk]:
    """The chunks of a batch's documents, their ids prefixed by source; an unreadable document gives none."""
    from models.llama_cpp.tokenizer import load_tokenizer

    tokenizer = tokenizer or load_tokenizer()
    out: list[Chunk] = []
    for prefix, doc in batch:
        try:
            layout = read_layout(doc.doc_id, doc.path, doc.text, doc.sha256)
        except Unreadable:
            continue
        doc_id = prefix + doc.doc_id
        for n, c in enumerate(chunk_layout(doc.doc_id, layout, tokenizer, settings.max_tokens)):
            out.append(replace(c, chunk_id=chunk_id(doc_id, n), doc_id=doc_id, uri=doc_id))
    return out


def _row(c: Chunk) -> list:
    return [c.chunk_id, c.doc_id, c.text, list(c.heading_path), c.line_start, c.line_end, c.page_start, c.page_end]


def _chunk(row: list) -> Chunk:
    chunk_id_, doc_id, text, heading, *lines = row
    return Chunk(chunk_id_, doc_id, doc_id, text, tuple(heading), *lines)


def _write(path: Path, chunks: list[Chunk]) -> None:
    tmp = path.with_suffix(".tmp")
    with gzip.open(tmp, "wt", encoding="utf-8", compresslevel=3) as fh:
        for c in chunks:
            fh.write(json.dumps(_row(c), ensure_ascii=False) + "\n")
    tmp.replace(path)


def _work(job: tuple[list[tuple[str, Document]], ChunkSettings, str]) -> tuple[str, int, int]:
    batch, settings, folder = job
    key = batch_key(batch, settings)
    path = Path(folder) / f"{key}.jsonl.gz"
    if path.exists():
        with gzip.open(path, "rt", encoding="utf-8") as fh:
            return key, sum(1 for _ in fh), 0
    chunks = chunk_batch(batch, settings)
    _write(path, chunks)
    return key, len(chunks), len(chunks)


def build(max_chunks: int | None = None, minutes: float | None = None, workers: int = 2,
          settings: ChunkSettings = ChunkSettings(), progress=print) -> dict:
    """Chunk the sources in order until max_chunks or the time is reached; manifest.jsonl lists the batches done."""
    folder = corpus_dir(settings)
    folder.mkdir(parents=True, exist_ok=True)
    manifest = folder / "manifest.jsonl"
    started = time.perf_counter()
    deadline = started + minutes * 60 if minutes else float("inf")
    total = chunked = docs = 0
    jobs = ((b, settings, str(folder)) for b in _batches(documents(), BATCH_DOCS))
    with open(manifest, "w", encoding="utf-8") as out, get_context("fork").Pool(workers) as pool:
        for key, n, fresh in pool.imap(_work, jobs):
            out.write(json.dumps({"batch": key, "chunks": n}) + "\n")
            out.flush()
            total, chunked, docs = total + n, chunked + fresh, docs + 1
            if docs % 50 == 0:
                rate = chunked / max(time.perf_counter() - started, 1e-9)
                progress(f"{total:,} chunks in {docs} batches, {rate:.0f} chunks/s chunked")
            if (max_chunks and total >= max_chunks) or time.perf_counter() > deadline:
                pool.terminate()
                break
    seconds = time.perf_counter() - started
    return {"chunks": total, "batches": docs, "chunked": chunked, "seconds": seconds}


def sample(n_docs: int, settings: ChunkSettings = ChunkSettings()) -> list[Chunk]:
    """The chunks of n_docs real documents, chunked now (a smoke run's corpus; nothing cached): file-format man pages
    (section 5), or docs_corpus's pages where there are none."""
    from itertools import islice

    from rag.ingest.corpus import default_docs_dir

    batch = list(islice(documents(suite=False, man_sections=("5",), rest=False), n_docs))
    return chunk_batch(batch or [("", d) for d in _loaded(default_docs_dir())[:n_docs]], settings)


def load_chunks(limit: int | None = None, settings: ChunkSettings = ChunkSettings(),
                folder: Path | None = None) -> list[Chunk]:
    """The first `limit` chunks of the cached corpus (all when None), in source order; [] when none is built."""
    folder = folder or corpus_dir(settings)
    manifest = folder / "manifest.jsonl"
    out: list[Chunk] = []
    if not manifest.exists():
        return out
    for line in manifest.read_text(encoding="utf-8").splitlines():
        path = folder / f"{json.loads(line)['batch']}.jsonl.gz"
        if not path.exists():
            break
        with gzip.open(path, "rt", encoding="utf-8") as fh:
            out.extend(_chunk(json.loads(row)) for row in fh)
        if limit is not None and len(out) >= limit:
            return out[:limit]
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--max-chunks", type=int, default=None, help="stop once this many chunks are cached")
    parser.add_argument("--minutes", type=float, default=None, help="stop after this long")
    parser.add_argument("--workers", type=int, default=2, help="chunking processes (default 2)")
    parser.add_argument("--packages", action="store_true",
                        help="print the apt-get line that installs the extra doc packages of the 1M corpus, and stop")
    args = parser.parse_args()
    if args.packages:
        print("apt-get install -y --no-install-recommends " + " ".join(DOC_PACKAGES))
        return
    result = build(args.max_chunks, args.minutes, args.workers)
    print(f"{result['chunks']:,} chunks in {result['batches']} batches ({result['chunked']:,} chunked now) "
          f"in {result['seconds']:.0f} s; cached in {corpus_dir()}")


if __name__ == "__main__":
    main()
