"""Push real and generated text through the answer path: chunking, quote choice, claims, specifics, the verifier.

    python -m benchmarks.answer_fuzz --realdocs            # every document of the real-docs suite's built packages
    python -m benchmarks.answer_fuzz --seconds 120         # hypothesis text: code spans, markup, unicode, controls

Each document is read by its format, chunked, and every chunk is shown as excerpt [1] beside its neighbour as [2]:
its sentences become quote candidates (rag.answering.quote_features), the quote scorer picks (the lexical path: no
embedder, so it runs anywhere), the quoted answer and every sentence as a claim citing [1] go through the verifier,
and every sentence's exact things through rag.verification.specifics. Any exception is a crash a user would see as
"✗ error" in the chat app (issue #36's blank code span was one): it is printed with its document and sentence, and
the run ends non-zero. The suite runs the same pushes on docs_corpus and a few hundred generated texts
(tests/test_answer_fuzz.py).
"""

from __future__ import annotations

import argparse
import sys
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterable

from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

MAX_TOKENS = 64  # small chunks: more boundaries, more sentences cut at an edge
PIECES = ["`", "` `", "``", "```", "`\t`", "` x `", "`Ctrl+C`", "`Esc`", "[1]", "[2]", "[9] a.md", "(source: a.md#0; ",
          "section: A; lines 1-2)", "> ", "# ", "* ", "1. ", "link:x.html[", "]", "<b>", "</b>", "**", "_", ":", "::",
          "\x1b[31m", "\u202e", "\u2028", "\x00", "\r", "\t", "\n", "\n\n", ". ", "? ", "e.g. ", "v1.2.3", "--flag",
          "~/.config", "0x1F", "1,000", "3.0", "не ", "日本", "\ufeff", "not ", "unless ", "by default", "$HOME", "é"]


@dataclass
class Tally:
    documents: int = 0
    chunks: int = 0
    sentences: int = 0
    crashes: list[str] = field(default_factory=list)


def _lookup(chunks):
    by_id = {c.chunk_id: c for c in chunks}
    return by_id.get


def push_document(doc_id: str, text: str, tally: Tally, tokenizer=None) -> None:
    """Everything of the module docstring for one document; crashes are recorded in `tally`, not raised."""
    from benchmarks.word_tokenizer import WordTokenizer
    from rag.ingest.chunking import chunk_layout
    from rag.ingest.formats import parse_text

    tally.documents += 1
    try:
        chunks = chunk_layout(doc_id, parse_text(doc_id, text), tokenizer or WordTokenizer(), MAX_TOKENS)
    except Exception:  # noqa: BLE001 - every exception is a finding
        tally.crashes.append(f"{doc_id}: chunking: {traceback.format_exc(limit=3)}")
        return
    lookup = _lookup(chunks)
    for i, chunk in enumerate(chunks):
        tally.chunks += 1
        neighbour = chunks[i + 1] if i + 1 < len(chunks) else chunk
        try:
            tally.sentences += push_chunk(chunk, neighbour, lookup)
        except Exception:  # noqa: BLE001
            tally.crashes.append(f"{chunk.chunk_id}: {traceback.format_exc(limit=4)}")


def push_chunk(chunk, neighbour, lookup) -> int:
    """One chunk through quote choice, claims, specifics and the verifier; the number of sentences pushed."""
    from rag.answering.extractive import OTHER_EXCERPT, QuoteFallback, quoted, rank_sentences, select
    from rag.answering.quote_features import candidates
    from rag.citations import Citation
    from rag.verification.claims import factual_claims, split_claims
    from rag.verification.specifics import specifics
    from rag.verification.verifier import Verifier

    shown = {1: Citation(1, chunk.chunk_id, chunk.doc_id, chunk.uri),
             2: Citation(2, neighbour.chunk_id, neighbour.doc_id, neighbour.uri)}
    question = " ".join(chunk.heading_path) or chunk.text[:80]
    ranked = rank_sentences(question, shown, lookup, None)
    text, _ = quoted(select(ranked, False, other_excerpt=OTHER_EXCERPT))
    judge = Verifier(None)
    if text:
        judge(text, shown, lookup)
    QuoteFallback(None)(question, shown, lookup)
    sentences = [c.sentence for c in candidates(shown, lookup)]
    for claim in split_claims(chunk.text):
        specifics(claim.text)
        sentences.append(claim.text)
    for sentence in sentences:
        specifics(sentence)
        factual_claims(sentence)
        judge(f"{sentence} [1]", shown, lookup)
    return len(sentences)


def realdocs_documents(root: Path | None = None) -> Iterable[tuple[str, str]]:
    """(doc id, text) of every readable text document of the built suite packages (PDFs left out: no text here)."""
    from benchmarks.realdocs.suite import load_packages
    from rag.ingest.decoding import decode_text

    for package in load_packages():
        folder = package.folder(root)
        if not folder.is_dir():
            continue
        for path in sorted(folder.rglob("*")):
            if path.is_file() and path.suffix.lower() in (".md", ".rst", ".html", ".htm", ".txt", ".adoc"):
                yield f"{package.name}/{path.relative_to(folder).as_posix()}", decode_text(path.read_bytes())


def generated(seconds: float, tally: Tally, examples: int = 10_000) -> None:
    """hypothesis text (PIECES, free text, repeats) as Markdown, RST and HTML documents, for about `seconds`."""
    deadline = time.monotonic() + seconds
    suffixes = st.sampled_from(["page.md", "page.rst", "page.html", "page.txt"])
    piece = st.one_of(st.sampled_from(PIECES), st.text(max_size=10), st.sampled_from(["word ", "The cache ", "is "]))
    docs = st.lists(piece, max_size=80).map("".join)

    @settings(max_examples=examples, deadline=None, database=None, derandomize=True,
              phases=[Phase.generate], suppress_health_check=list(HealthCheck))
    @given(suffixes, docs)
    def run(doc_id: str, text: str) -> None:
        if time.monotonic() < deadline:
            push_document(doc_id, text, tally)

    run()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.answer_fuzz", description=__doc__.splitlines()[0])
    parser.add_argument("--realdocs", action="store_true", help="every document of the built real-docs packages")
    parser.add_argument("--seconds", type=float, default=0, help="also this long of generated text")
    parser.add_argument("--limit", type=int, default=None, help="at most this many real documents")
    args = parser.parse_args(argv)
    tally, started = Tally(), time.perf_counter()
    if args.realdocs:
        for k, (doc_id, text) in enumerate(realdocs_documents()):
            if args.limit is not None and k >= args.limit:
                break
            push_document(doc_id, text, tally)
    if args.seconds:
        generated(args.seconds, tally)
    for crash in tally.crashes[:20]:
        print(crash, file=sys.stderr)
    print(f"documents {tally.documents}, chunks {tally.chunks}, sentences {tally.sentences}, "
          f"exceptions {len(tally.crashes)}, {time.perf_counter() - started:.0f} s")
    return 1 if tally.crashes else 0


if __name__ == "__main__":
    sys.exit(main())
