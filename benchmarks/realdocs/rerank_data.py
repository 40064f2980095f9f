"""The reranker's training pairs, from the fit packages only: (question, sentence in context, label).

For each question of a fit package, the sentences a quote could be chosen from are made as the answer path makes
them (rag.answering.quote_features.candidates) over the package's first hits and the chunks of the gold page
that hold the evidence. The hits are BM25's (`pools="bm25"`, the shipped model's recipe) or the hybrid search's as
search_docs makes them, the tuned question encoder and the learned order included (`pools="hybrid"`: the package is
embedded first, if it is not yet). A sentence is positive when it carries the evidence (rag.evaluation, the
scorer's own test); every other sentence is a negative, those of the gold page and the first hits first (hard
negatives). An unanswerable question's sentences are all negatives: nothing there answers it.

The rows are cached per package and question file (a JSONL under the suite folder), so a second training run reads
them back instead of chunking and searching again.
"""

from __future__ import annotations

import hashlib
import json
import random
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterator, Sequence

from benchmarks.realdocs.suite import Package, fit_only
from rag.answering.passages import passage_text
from rag.answering.quote_features import candidates
from rag.citations import Citation
from rag.evaluation import Question, evidence_sentence, holds_evidence, load_questions

SEARCH_K = 8  # first hits whose sentences are candidates (the answer path shows 5)
NEGATIVES = 9  # negatives kept per question, hard ones first (training cost grows with every pair)
DATA_VERSION = 2  # bump when the rows' making changes, so old caches are not reused
POOLS = ("bm25", "hybrid")  # which search's first hits give the candidates


@dataclass(frozen=True)
class Pair:
    qid: str
    package: str
    question: str
    text: str  # the sentence under its heading path (Candidate.in_context), as the reranker reads it
    label: int
    unanswerable: bool = False  # the question has no answer in the package


def question_pairs(index, question: Question, package: str, rng: random.Random, k: int = SEARCH_K,
                   negatives: int = NEGATIVES) -> list[Pair]:
    """The labelled sentences of one question (see the module docstring)."""
    hits = index.search(question.q, k=k)
    ids = [h.chunk_id for h in hits]
    gold: list[str] = []
    if question.answerable and question.evidence:
        gold = [c.chunk_id for c in index.chunks if c.doc_id in question.gold_docs and holds_evidence(c.text, question.evidence)]
    hard_ids = set(gold) | set(ids[:3])
    for extra in gold:
        if extra not in ids:
            ids.append(extra)
    shown = {n: Citation(n, cid, index.chunk(cid).doc_id, index.chunk(cid).uri) for n, cid in enumerate(ids, 1)}
    found = candidates(shown, index.chunk)
    pos, hard, easy = [], [], []
    seen: set[str] = set()
    for cand in found:
        text = cand.in_context
        if text in seen:
            continue
        seen.add(text)
        label = int(evidence_sentence(cand.sentence, question.evidence))
        pair = Pair(question.id, package, question.q, text, label, not question.answerable)
        if label:
            pos.append(pair)
        elif shown[cand.n].chunk_id in hard_ids:
            hard.append(pair)
        else:
            easy.append(pair)
    rng.shuffle(hard)
    rng.shuffle(easy)
    return pos + (hard + easy)[:negatives]


PASSAGE_K = 20  # first hits whose chunks are passage candidates (the answer path reranks the hybrid's first 20)
PASSAGE_NEGATIVES = 9


def passage_pairs(index, question: Question, package: str, rng: random.Random, k: int = PASSAGE_K,
                  negatives: int = PASSAGE_NEGATIVES) -> list[Pair]:
    """The labelled passages of one question: a whole chunk (passages.passage_text) is positive when it belongs to
    a gold page and holds the evidence; the negatives are the gold page's other chunks and the first hits of the
    index's search (hard ones), then the rest of the first `k` hits."""
    hits = index.search(question.q, k=k)
    gold_docs = set(question.gold_docs) if question.answerable else set()
    on_gold = [c for c in index.chunks if c.doc_id in gold_docs] if question.evidence else []
    positive = {c.chunk_id for c in on_gold if holds_evidence(c.text, question.evidence)}
    hard_ids = {c.chunk_id for c in on_gold} | {h.chunk_id for h in hits[:5]}
    ids = list(dict.fromkeys([*positive, *(h.chunk_id for h in hits), *(c.chunk_id for c in on_gold)]))
    pos, hard, easy = [], [], []
    seen: set[str] = set()
    for chunk_id in ids:
        chunk = index.chunk(chunk_id)
        text = passage_text(chunk.heading_path, chunk.text)
        if text in seen:
            continue
        seen.add(text)
        pair = Pair(question.id, package, question.q, text, int(chunk_id in positive), not question.answerable)
        (pos if pair.label else hard if chunk_id in hard_ids else easy).append(pair)
    rng.shuffle(hard)
    rng.shuffle(easy)
    return pos + (hard + easy)[:negatives]


KINDS = {"sentences": question_pairs, "passages": passage_pairs}


def _cache_key(package: Package, kind: str = "sentences", pools: str = "bm25") -> str:
    extra = "" if kind == "sentences" else f" {kind} k{PASSAGE_K} n{PASSAGE_NEGATIVES}"
    extra += "" if pools == "bm25" else f" {pools}"
    digest = hashlib.sha256(f"v{DATA_VERSION} k{SEARCH_K} n{NEGATIVES}{extra}".encode())
    for path in package.questions:
        digest.update(Path(path).read_bytes())
    return digest.hexdigest()[:16]


def package_pairs(package: Package, folder: Path, tokenizer, cache: Path, seed: int = 0,
                  say: Callable[[str], None] = print, kind: str = "sentences", pools: str = "bm25",
                  embedder=None) -> list[Pair]:
    """Every pair of one package, from the cache when its question files are unchanged (`embedder`: the question
    encoder the hybrid pools search with; only read when `pools` is "hybrid")."""
    if pools not in POOLS:
        raise ValueError(f"unknown pools {pools!r}: choose one of {', '.join(POOLS)}")
    if pools == "hybrid" and embedder is None:
        raise ValueError("hybrid pools need an embedder: the packages are searched as search_docs searches them")
    prefix = "" if kind == "sentences" else f"{kind}-"
    cached = cache / f"{prefix}{package.name}-{_cache_key(package, kind, pools)}.jsonl"
    if cached.is_file():
        return [Pair(**json.loads(line)) for line in cached.read_text(encoding="utf-8").splitlines() if line]
    from rag.indexing.build import open_index

    index = open_index(folder, tokenizer, embedder if pools == "hybrid" else None)
    questions = [q for path in package.questions for q in load_questions(path)]
    rng = random.Random(f"{seed}-{package.name}")
    make = KINDS[kind]
    rows = [p for q in questions for p in make(index, q, package.name, rng)]
    cache.mkdir(parents=True, exist_ok=True)
    tmp = cached.with_suffix(".tmp")
    tmp.write_text("".join(json.dumps(p.__dict__) + "\n" for p in rows), encoding="utf-8")
    tmp.replace(cached)
    say(f"{package.name}: {len(questions)} questions, {len(rows)} pairs, {sum(p.label for p in rows)} positive")
    return rows


def suite_pairs(packages: Sequence[Package], tokenizer, cache: Path, root: Path | None = None,
                say: Callable[[str], None] = print, kind: str = "sentences", pools: str = "bm25",
                embedder=None) -> list[Pair]:
    """The pairs of every fit package given (a held package is refused: it is only ever reported)."""
    fit_only(packages, "the reranker")
    return [pair for p in packages
            for pair in package_pairs(p, p.folder(root), tokenizer, cache, say=say, kind=kind, pools=pools, embedder=embedder)]


def by_question(pairs: Sequence[Pair]) -> Iterator[list[Pair]]:
    """The pairs grouped by question, in order."""
    group: list[Pair] = []
    for pair in pairs:
        if group and (pair.package, pair.qid) != (group[0].package, group[0].qid):
            yield group
            group = []
        group.append(pair)
    if group:
        yield group
