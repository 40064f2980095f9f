"""Checking the question sets: ids unique, gold docs present, evidence found in the text smoldocs extracts.

The extracted text of a document is what search shows: the file read as rag.ingest.corpus reads it, parsed by the
format reader of its suffix, cut into chunks by the real tokenizer. Evidence is looked for in those chunks
joined (a piece of evidence may straddle a chunk boundary), whitespace collapsed on both sides.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Sequence

from benchmarks.realdocs.suite import QUESTIONS_DIR, Package
from rag.errors import Unreadable
from rag.evaluation import Question, load_questions
from rag.ingest.chunking import chunk_layout
from rag.ingest.decoding import decode_text
from rag.ingest.formats import is_file_format, read_layout, stream_digest

MIN_UNANSWERABLE = 0.15  # share of each package's questions the docs cannot answer (issue #29)
EVIDENCE_WORDS = (5, 15)  # an evidence string's length in words, for the suite's own question files
_SPACE = re.compile(r"\s+")


def normalised(text: str) -> str:
    return _SPACE.sub(" ", text).strip()


def extracted_text(path: Path, doc_id: str, counter) -> str:
    """The chunks smoldocs makes of one file, joined with spaces and whitespace collapsed."""
    if is_file_format(doc_id):
        text, digest = "", stream_digest(path)
    else:
        text, digest = decode_text(path.read_bytes()), ""
    layout = read_layout(doc_id, path, text, digest)
    return normalised(" ".join(c.text for c in chunk_layout(doc_id, layout, counter)))


@dataclass(frozen=True)
class PackageCheck:
    package: str
    questions: int
    unanswerable: int
    problems: tuple[str, ...]


def check_package(package: Package, folder: Path, counter, strict_files: Sequence[Path] = ()) -> PackageCheck:
    """Every problem of one package's question files; `strict_files` also get the evidence-length rule."""
    problems: list[str] = []
    if not folder.is_dir():
        problem = f"{package.name}: no folder {folder}: run `python -m benchmarks.realdocs build`"
        return PackageCheck(package.name, 0, 0, (problem,))
    questions: list[tuple[Question, Path]] = []
    for path in package.questions:
        if not path.is_file():
            problems.append(f"{package.name}: question file {path} is missing")
            continue
        questions += [(q, path) for q in load_questions(path)]
    if not questions:
        problems.append(f"{package.name}: no questions")
    for qid, n in Counter(q.id for q, _ in questions).items():
        if n > 1:
            problems.append(f"{package.name}: id {qid} is used {n} times")
    texts: dict[str, str | None] = {}

    def text_of(doc: str) -> str | None:
        if doc not in texts:
            try:
                texts[doc] = extracted_text(folder / doc, doc, counter) if (folder / doc).is_file() else None
            except Unreadable as exc:
                texts[doc] = None
                problems.append(f"{package.name}: {doc} cannot be read ({exc.reason})")
        return texts[doc]

    strict = {Path(p).resolve() for p in strict_files}
    for q, path in questions:
        where = f"{package.name} {q.id}"
        if not q.q.strip():
            problems.append(f"{where}: empty question")
        if not q.answerable:
            if q.evidence:
                problems.append(f"{where}: an unanswerable question has evidence")
            continue
        for doc in q.gold_docs:
            if text_of(doc) is None and not (folder / doc).is_file():
                problems.append(f"{where}: gold doc {doc} is not in {folder}")
        if not q.evidence:
            if path.resolve() in strict:
                problems.append(f"{where}: no evidence")
            continue
        words = len(q.evidence.split())
        if path.resolve() in strict and not EVIDENCE_WORDS[0] <= words <= EVIDENCE_WORDS[1]:
            problems.append(f"{where}: evidence has {words} words, not {EVIDENCE_WORDS[0]}-{EVIDENCE_WORDS[1]}")
        text = text_of(q.doc)
        if text is not None and normalised(q.evidence) not in text:
            problems.append(f"{where}: evidence not in the text extracted from {q.doc}: {q.evidence!r}")
    unanswerable = sum(not q.answerable for q, _ in questions)
    if questions and unanswerable / len(questions) < MIN_UNANSWERABLE:
        problems.append(f"{package.name}: {unanswerable} of {len(questions)} questions unanswerable, "
                        f"under {MIN_UNANSWERABLE:.0%}")
    return PackageCheck(package.name, len(questions), unanswerable, tuple(problems))


def check_suite(packages: Sequence[Package], counter, root: Path | None = None, say: Callable[[str], None] = print,
          questions_dir: Path = QUESTIONS_DIR) -> int:
    """Check every package's questions; print each problem; 0 when there is none, else 1."""
    status = 0
    for package in packages:
        strict = [p for p in package.questions if Path(p).resolve().parent == Path(questions_dir).resolve()]
        result = check_package(package, package.folder(root), counter, strict)
        for problem in result.problems:
            say(problem)
        status |= bool(result.problems)
        say(f"{package.name}: {result.questions} questions, {result.unanswerable} unanswerable, "
            f"{len(result.problems)} problems")
    return status
