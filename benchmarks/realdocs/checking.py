"""Checking the question sets: ids unique, gold docs present, evidence found in the text smoldocs extracts.

The extracted text of a document is what search shows: the file read as rag.ingest.corpus reads it, parsed by the
format reader of its suffix, cut into chunks by the real tokenizer. Evidence is looked for in those chunks
joined (a piece of evidence may straddle a chunk boundary), whitespace collapsed on both sides.

The check also counts evidence that opens inside code (a fence or a literal block) in what the reader made: quotes
never start in code, so such a question cannot get its evidence sentence, however well search does. A reader that takes prose
for code (Vim's help in a <pre>, a reStructuredText title underlined with backticks) shows up here first.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, NamedTuple, Sequence

from benchmarks.realdocs.suite import QUESTIONS_DIR, Package
from rag.errors import Unreadable
from rag.evaluation import Question, load_questions
from rag.markers import FENCE_OPEN
from rag.ingest.chunking import chunk_layout
from rag.ingest.decoding import decode_text
from rag.ingest.formats import is_file_format, read_layout, stream_digest

MIN_UNANSWERABLE = 0.15  # share of each package's questions the docs cannot answer (issue #29)
EVIDENCE_WORDS = (5, 15)  # an evidence string's length in words, for the suite's own question files
_SPACE = re.compile(r"\s+")
CODE_UNITS = ("fence", "literal")  # what quotes never read
OPENING_WORDS = 5  # evidence whose first words are prose is quotable: a sentence ending in ":" brings its command


def normalised(text: str) -> str:
    return _SPACE.sub(" ", text).strip()


class Extracted(NamedTuple):
    text: str  # the chunks joined, whitespace collapsed, without the lines that open and close code fences
    prose: str  # the same text without its code (fences and literal blocks)


def extracted(path: Path, doc_id: str, counter) -> Extracted:
    """The chunks smoldocs makes of one file, and its text outside code, each whitespace-collapsed; a fence's own
    lines are left out, as the suite's evidence test (rag.evaluation.holds_evidence) leaves them out, so evidence that
    runs from a sentence into the command it introduces is found."""
    if is_file_format(doc_id):
        text, digest = "", stream_digest(path)
    else:
        text, digest = decode_text(path.read_bytes()), ""
    layout = read_layout(doc_id, path, text, digest)
    lines = (line for c in chunk_layout(doc_id, layout, counter) for line in c.text.split("\n"))
    chunks = normalised(" ".join(line for line in lines if not FENCE_OPEN.match(line)))
    code = sorted((u.start, u.end) for u in layout.units if u.kind in CODE_UNITS)
    pieces, at = [], 0
    for start, end in code:
        pieces.append(layout.text[at:start])
        at = max(at, end)
    pieces.append(layout.text[at:])
    return Extracted(chunks, normalised(" ".join(pieces)))


@dataclass(frozen=True)
class PackageCheck:
    package: str
    questions: int
    unanswerable: int
    problems: tuple[str, ...]
    in_code: int = 0  # answerable questions whose evidence opens inside code in the extracted text
    with_evidence: int = 0  # answerable questions with evidence found in the extracted text


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
    texts: dict[str, Extracted | None] = {}

    def text_of(doc: str) -> Extracted | None:
        if doc not in texts:
            try:
                texts[doc] = extracted(folder / doc, doc, counter) if (folder / doc).is_file() else None
            except Unreadable as exc:
                texts[doc] = None
                problems.append(f"{package.name}: {doc} cannot be read ({exc.reason})")
        return texts[doc]

    found = in_code = 0

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
        if text is not None and normalised(q.evidence) not in text.text:
            problems.append(f"{where}: evidence not in the text extracted from {q.doc}: {q.evidence!r}")
        elif text is not None:
            found += 1
            in_code += " ".join(normalised(q.evidence).split()[:OPENING_WORDS]) not in text.prose
    unanswerable = sum(not q.answerable for q, _ in questions)
    if questions and unanswerable / len(questions) < MIN_UNANSWERABLE:
        problems.append(f"{package.name}: {unanswerable} of {len(questions)} questions unanswerable, "
                        f"under {MIN_UNANSWERABLE:.0%}")
    return PackageCheck(package.name, len(questions), unanswerable, tuple(problems), in_code, found)


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
            f"{len(result.problems)} problems; evidence opening inside code for {result.in_code} of "
            f"{result.with_evidence}")
    return status
