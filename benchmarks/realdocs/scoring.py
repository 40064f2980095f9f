"""Scoring the suite: each package indexed with smoldocs' real index, its questions searched and answered.

Per package and pooled over the fit and the held-back packages:
- doc-level Recall@5 of BM25 alone, dense alone, the default fusion and rrf (rag.evaluation.evaluate);
- evidence in the shown answer: the default answer with no model call (search as the agent's first step does,
  then rag.answering.extractive.QuoteFallback) quotes a sentence that carries the evidence
  (rag.evaluation.evidence_sentence);
  also the stricter figure, the evidence string whole in the quoted text. A declined question shows no quote;
- unanswerable questions declined, answerable questions wrongly declined;
- answer seconds p50: the search, the quotes and their verification, per question.
Indexes live in the project's index cache, so a second run only loads them.
"""

from __future__ import annotations

import json
import os
import re
import statistics
import subprocess
import tempfile
import time
from datetime import datetime, timezone
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Callable, Sequence

from benchmarks.measure import load_average
from benchmarks.realdocs.suite import REPO, Package
from benchmarks.realdocs.typos import with_typo
from models.llama_cpp.embedder import load_embedder
from rag.answering.extractive import QuoteFallback
from rag.evaluation import MemoEmbedder, Question, evaluate, evidence_sentence, holds_evidence, load_questions
from benchmarks.fitting.quote_eval import K
from rag.excerpts.packing import Ledger
from rag.excerpts.search_tool import DEFAULT_MAX_TOKENS, search_first
from rag.markers import MARKER_PATTERN
from rag.indexing.build import IndexProgress, open_index
from rag.indexing.ordering import ORDER
from rag.verification.verifier import Verifier

RETRIEVERS = ("bm25", "dense", "hybrid", "rrf")  # "hybrid": the default (the fused pool in the learned order, or fused with --order fused)
_QUOTE = re.compile(r"^> (?P<sentence>.*) " + MARKER_PATTERN + "$", re.S)  # one `> sentence [n]` block


@dataclass(frozen=True)
class Answered:
    """One question through the default answer path."""

    id: str
    answerable: bool
    declined: bool
    evidence_sentence: bool  # a quoted sentence is an evidence hit
    evidence_exact: bool  # the evidence string is whole in the quoted text
    has_evidence: bool
    seconds: float
    evidence_shown: bool = False  # the evidence string is in the shown excerpts at all (search found it)
    words: int = 0  # words of the quoted text shown (0: declined), what the reader has to read
    excerpts: int = 0  # excerpts the first search showed


@dataclass
class PackageScore:
    package: str
    split: str
    questions: int
    answerable: int
    recall_at_5: dict[str, float]  # retriever -> doc-level R@5
    graded: int  # answerable questions graded for recall
    answers: list[Answered] = field(default_factory=list)
    index: dict = field(default_factory=dict)  # files, chunks, skipped, seconds, chunks/s, first search

    def rates(self) -> dict[str, float | None]:
        return answer_rates(self.answers)


def _share(hits: int, n: int) -> float | None:
    return hits / n if n else None


def answer_rates(answers: Sequence[Answered]) -> dict[str, float | None]:
    """Evidence quoted (sentence / exact), unanswerable declined, answerable declined, the mean words of a shown
    answer (declines left out), answer p50 seconds."""
    graded = [a for a in answers if a.answerable and a.has_evidence]
    answerable = [a for a in answers if a.answerable]
    unanswerable = [a for a in answers if not a.answerable]
    shown = [a.words for a in answers if not a.declined]
    return {
        "evidence_shown": _share(sum(a.evidence_shown for a in graded), len(graded)),
        "evidence_sentence": _share(sum(a.evidence_sentence for a in graded), len(graded)),
        "evidence_exact": _share(sum(a.evidence_exact for a in graded), len(graded)),
        "unanswerable_declined": _share(sum(a.declined for a in unanswerable), len(unanswerable)),
        "answerable_declined": _share(sum(a.declined for a in answerable), len(answerable)),
        "answer_words": statistics.mean(shown) if shown else None,
        "p50_seconds": statistics.median([a.seconds for a in answers]) if answers else None,
    }


def quoted_sentences(text: str) -> list[str]:
    """The sentences of a QuoteFallback answer (its `> sentence [n]` blocks)."""
    blocks = text.split("\n\n")[1:]
    return [m.group("sentence") for b in blocks if (m := _QUOTE.match(b.strip()))]


def answer_question(index, tokenizer, embedder, question: Question, reranker=None, passages=None, k: int = K,
                    budget: int = DEFAULT_MAX_TOKENS) -> Answered:
    """The default answer with no model call: the agent's first search, then the quoted fallback, verified.
    `reranker`: the cross-encoder that orders the quotes and decides declines (None: the quote scorer alone);
    `passages`: what reorders the hits before packing (rag.answering.passages.PassageReranker; None: the hybrid's order);
    `k`, `budget`: the excerpts the first search shows and their tokens (the agent's defaults)."""
    started = time.perf_counter()
    result = search_first(index, Ledger(), tokenizer, question.q, k, budget, reorder=passages)
    shown = {c.n: c for c in result.citations}
    quoted = QuoteFallback(embedder, index.vocabulary, reranker, index.standout)(question.q, shown, index.chunk) if shown else None
    if quoted is not None:
        Verifier(embedder)(quoted.text, shown, index.chunk)  # the shown answer is verified before it is shown
    seconds = time.perf_counter() - started
    sentences = quoted_sentences(quoted.text) if quoted is not None else []
    evidence = question.evidence
    excerpts = " ".join(index.chunk(c.chunk_id).text for c in result.citations)
    return Answered(
        id=question.id, answerable=question.answerable, declined=quoted is None,
        evidence_sentence=any(evidence_sentence(s, evidence) for s in sentences),
        evidence_exact=holds_evidence(" ".join(sentences), evidence),
        has_evidence=bool(evidence), seconds=seconds, evidence_shown=holds_evidence(excerpts, evidence),
        words=sum(len(s.split()) for s in sentences), excerpts=len(result.citations),
    )


def score_package(package: Package, folder: Path, tokenizer, embedder, limit: int | None = None,
                  say: Callable[[str], None] = print, reranker=None, passages=None, order: str = ORDER, k: int = K,
                  budget: int = DEFAULT_MAX_TOKENS, typos: bool = False) -> PackageScore:
    """Index (or load) one package's folder and score its questions (`k`, `budget`: see answer_question; `typos`:
    each question with one typo, benchmarks.realdocs.typos)."""
    questions = [q for path in package.questions for q in load_questions(path)][:limit]
    if typos:
        questions = [with_typo(q) for q in questions]
    memo = MemoEmbedder(embedder)
    started = time.perf_counter()
    index = open_index(folder, tokenizer, memo, progress=_progress(package.name, say), order=order)
    opened = time.perf_counter() - started
    index.search("how do I start", k=K)
    first_search = time.perf_counter() - started
    update = index.update
    info = {
        "files": update.files, "chunks": update.chunks, "skipped": dict(update.skipped),
        "open_seconds": round(opened, 2), "first_search_seconds": round(first_search, 2),
        "rebuilt": update.rebuilt, "chunks_embedded": update.chunks_embedded,
        "chunks_per_second": round(update.chunks_embedded / update.embed_seconds, 1) if update.embed_seconds else None,
    }
    say(f"{package.name}: {update.summary()}")
    rows = evaluate(index, questions, RETRIEVERS)
    doc_rows = {r.name: r for r in rows if r.level == "doc"}
    score = PackageScore(
        package=package.name, split=package.split, questions=len(questions),
        answerable=sum(q.answerable for q in questions),
        recall_at_5={m: doc_rows[m].recall_at_5 for m in RETRIEVERS if m in doc_rows},
        graded=doc_rows[RETRIEVERS[0]].n if RETRIEVERS[0] in doc_rows else 0, index=info,
    )
    score.answers = [answer_question(index, tokenizer, memo, q, reranker, passages, k, budget) for q in questions]
    return score


def cold_start(folder: Path, tokenizer, embedder, query: str = "how do I start") -> dict:
    """A first search on a folder never indexed: chunked whole, nothing embedded yet (BM25 answers until
    rag.indexing.fill fills the dense half), into a throwaway index folder."""
    with tempfile.TemporaryDirectory(prefix="smoldocs-cold-") as scratch:
        started = time.perf_counter()
        index = open_index(folder, tokenizer, embedder, index_dir=Path(scratch) / "index", embed_budget=0)
        opened = time.perf_counter() - started
        index.search(query, k=K)
        first = time.perf_counter() - started
    return {"files": index.update.files, "chunks": len(index), "skipped": dict(index.update.skipped),
            "chunked_seconds": round(opened, 3), "first_search_seconds": round(first, 3),
            "chunks_per_second_chunked": round(len(index) / opened, 1) if opened else None}


def _progress(name: str, say: Callable[[str], None]):
    last = [0.0]

    def emit(event: IndexProgress) -> None:
        now = time.perf_counter()
        if event.stage == "notice":
            say(f"{name}: {event.message}")
        elif event.stage in ("chunk", "embed") and now - last[0] > 30:
            last[0] = now
            say(f"{name}: {event.stage} {event.done}/{event.total}")

    return emit


def pooled(scores: Sequence[PackageScore], split: str) -> PackageScore | None:
    """The packages of one split as one: recall weighted by graded questions, answers pooled."""
    part = [s for s in scores if s.split == split]
    if not part:
        return None
    graded = sum(s.graded for s in part)
    recall = {m: sum(s.recall_at_5.get(m, 0.0) * s.graded for s in part) / graded for m in RETRIEVERS} if graded else {}
    out = PackageScore(f"pooled {split}", split, sum(s.questions for s in part), sum(s.answerable for s in part),
                       recall, graded)
    out.answers = [a for s in part for a in s.answers]
    return out


def _cell(value: float | None, digits: int = 2) -> str:
    return "–" if value is None else f"{value:.{digits}f}"


def score_table(scores: Sequence[PackageScore]) -> str:
    """The per-package and pooled table, as Markdown."""
    head = ("| package | split | questions | R@5 bm25 | R@5 dense | R@5 default | R@5 rrf | evidence in excerpts "
            "| evidence sentence | evidence exact | unanswerable declined | answerable declined | answer words | answer p50 s |")
    lines = [head, "|" + "---|" * 14]
    rows = list(scores) + [p for p in (pooled(scores, "fit"), pooled(scores, "held")) if p is not None]
    for s in rows:
        f = s.rates()
        r = [_cell(s.recall_at_5.get(m)) for m in RETRIEVERS]
        lines.append(
            f"| {s.package} | {s.split} | {s.questions} ({s.questions - s.answerable} unanswerable) | "
            + " | ".join(r)
            + f" | {_cell(f['evidence_shown'])} | {_cell(f['evidence_sentence'])} | {_cell(f['evidence_exact'])} | {_cell(f['unanswerable_declined'])}"
            f" | {_cell(f['answerable_declined'])} | {_cell(f['answer_words'], 1)} | {_cell(f['p50_seconds'])} |"
        )
    return "\n".join(lines)


def index_table(scores: Sequence[PackageScore]) -> str:
    """How each package indexed: files, chunks, skipped by reason, time, embedding rate, first search."""
    lines = ["| package | files | chunks | skipped | open s | first search s | embedded | chunks/s |", "|" + "---|" * 8]
    for s in scores:
        i = s.index
        skipped = ", ".join(f"{n} {why}" for why, n in sorted(i["skipped"].items())) or "none"
        lines.append(f"| {s.package} | {i['files']} | {i['chunks']} | {skipped} | {i['open_seconds']} | "
                     f"{i['first_search_seconds']} | {i['chunks_embedded']} | {i['chunks_per_second'] or '–'} |")
    return "\n".join(lines)


def score_suite(packages: Sequence[Package], tokenizer, root: Path | None = None, limit: int | None = None,
        as_json: bool = False, write: Path | None = None, say: Callable[[str], None] = print,
        rerank: str = "off", reranker_file: Path | None = None, tuned_queries: bool = True, order: str = ORDER,
        tuned_quotes: bool = True, k: int = K, budget: int = DEFAULT_MAX_TOKENS, typos: bool = False) -> int:
    """Score every package that has its folder; print the tables (or JSON), and with `write` save them as
    Markdown with the date, commit and load average. 1 when a package could not be scored. `order`: hybrid
    search's order of hits (rag.indexing.ordering: "learned", or "fused" as before it); `tuned_quotes` False: the
    quote scorer without the quote encoder (models.query_tower), as before it; `k`, `budget`: the excerpts the first
    search shows and their tokens (the agent's defaults: 5 and 1,024); `typos`: each question asked with one typo
    (benchmarks.realdocs.typos)."""
    load_before = load_average()
    started = time.perf_counter()
    from models.query_tower import attach_tuned_queries

    embedder = load_embedder()
    attach_tuned_queries(embedder, tuned_queries)  # False: the question's vector is MiniLM's own (before #37's encoder)
    if not tuned_quotes:
        embedder.quote_encoder = None
    reranker = passages = None
    if rerank != "off":
        from models.reranker import RERANKER_FILE, load_reranker
        from rag.answering.passages import PassageReranker

        scorer = load_reranker(embedder.tokenize, reranker_file or RERANKER_FILE)
        reranker = scorer if rerank in ("on", "quotes") else None
        passages = PassageReranker(scorer) if rerank in ("on", "passages") else None
    scores, status = [], 0
    for package in packages:
        folder = package.folder(root)
        if not folder.is_dir():
            say(f"{package.name}: no folder {folder}: run `python -m benchmarks.realdocs build` first")
            status = 1
            continue
        scores.append(score_package(package, folder, tokenizer, embedder, limit, say, reranker, passages, order, k, budget,
                                    typos))
    if as_json:
        say(json.dumps([{**asdict(s), "rates": s.rates()} for s in scores], indent=1))
    elif scores:
        say(f"load average {load_average()}")
        say(score_table(scores))
        say("")
        say(index_table(scores))
    if write is not None and scores:
        write.write_text(results_markdown(scores, packages, load_before, time.perf_counter() - started, k, budget),
                         encoding="utf-8")
        say(f"wrote {write}")
    return status


def _commit() -> str:
    try:
        out = subprocess.run(["git", "-C", str(REPO), "describe", "--always", "--dirty"], capture_output=True,
                             text=True, check=False)
    except FileNotFoundError:
        return "unknown"
    return out.stdout.strip() or "unknown"


def results_markdown(scores: Sequence[PackageScore], packages: Sequence[Package], load_before, seconds: float,
                     k: int = K, budget: int = DEFAULT_MAX_TOKENS) -> str:
    """RESULTS.md: when and where it was measured, then both tables and where each package's questions came from."""
    load_after = load_average()
    sources = "\n".join(f"- {p.name}: " + ", ".join(_shown_path(q) for q in p.questions) for p in packages)
    return (
        "# Real-docs suite: results\n\n"
        f"Measured {datetime.now(timezone.utc):%Y-%m-%d %H:%M} UTC at commit {_commit()} with "
        "`python -m benchmarks.realdocs score`, on "
        f"{os.cpu_count()} cores shared with other jobs: load average {_load(load_before)} before, "
        f"{_load(load_after)} after; {seconds / 60:.1f} minutes in all (indexes loaded from the cache when built).\n\n"
        f"Default answer = the agent's first search (k={k}, {budget:,} evidence tokens) and the quoted fallback, no model call. "
        "Evidence sentence: a quoted sentence carries the evidence (rag.evaluation.evidence_sentence); evidence exact: the "
        f"evidence string whole in the quoted text; evidence in excerpts: the evidence string anywhere in the {k} "
        "shown excerpts (what search found, before quoting). R@5 is doc level (gold doc or an alternative). Pooled rows: "
        "recall weighted by graded questions, the other figures over all the split's questions. Answer words: the mean "
        "words of the quoted text of an answer shown (declines left out).\n\n"
        f"{score_table(scores)}\n\n## Indexing\n\n{index_table(scores)}\n\n## Question files\n\n{sources}\n"
    )


def _load(values) -> str:
    return " ".join(f"{v:.2f}" for v in values)


def _shown_path(path: Path) -> str:
    try:
        return str(Path(path).resolve().relative_to(REPO))
    except ValueError:
        return str(path)
