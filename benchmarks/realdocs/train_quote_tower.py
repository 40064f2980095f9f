"""`python -m benchmarks.realdocs train-quote-tower`: tune the question side of the quote scorer (PyTorch, CPU).

The quote scorer (rag.answering.extractive) orders the shown excerpts' sentences by a linear score over four
features; it picks the sentence that holds the evidence first for only about a third of the fit questions. This
trains a second copy of MiniLM's top layers (TRAINED_FROM and up, started from the search question encoder's) so
that a question's cosine with each candidate sentence, added to that score with the weight QUOTE_TOWER_WEIGHT, picks
the evidence: per question, a softmax over its own candidates with the quote scorer's score as a fixed part of each
logit, so the encoder learns what the score lacks. The candidates are exactly what a shown answer chooses among: the
sentences of the first search's five excerpts, each under its heading path, with MiniLM's vectors (llama.cpp's, as
at run time; they never change). A tenth of the fit questions (train_reranker.is_validation_id) is kept out, and
the evidence sentence among the quotes `select` chooses is printed on them before and after. The layers are written
into the one weights file under `quote_tower.`, keeping the other models' tensors.
"""

from __future__ import annotations

import json
import pickle
import random
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Sequence

import numpy as np

from benchmarks.realdocs.suite import Package, fit_only
from benchmarks.realdocs.train_query_tower import TRAINED_FROM, share, tower_model, tuned_tensors
from benchmarks.realdocs.train_reranker import torch_ready, is_validation_id, layer_tensors, merge_weights
from models.query_tower import PREFIX, QUOTE_PREFIX
from models.reranker import RERANKER_FILE
from rag.answering.extractive import QUOTE_TOWER_WEIGHT, OTHER_EXCERPT, RankedSentences, select

EPOCHS = 3
BATCH = 32  # questions a step
LEARNING_RATE = 3e-5
SCALE = 20.0  # score units -> logit, as the search question encoder's cosine
SEED = 13
CASES_VERSION = 1  # of the cached cases' layout


@dataclass
class QuoteCase:
    """One answerable fit question as the quote scorer sees it: its candidates' vectors, scores and evidence hits."""

    package: str
    id: str
    ids: list[int]  # the question's MiniLM token ids
    vectors: np.ndarray  # (candidates, 384) float16: each sentence under its heading path, MiniLM's vector
    ranked: RankedSentences  # the candidates with their features and the quote scorer's score
    hits: np.ndarray  # bool per candidate: it holds the evidence (rag.evaluation.evidence_sentence)
    kept_out: bool


def package_cases(package: Package, folder: Path, tokenizer, embedder, cache: Path | None = None,
                  limit: int | None = None) -> list[QuoteCase]:
    """Each answerable question of the package with evidence, searched as the agent does (the first search, five
    excerpts), with its candidates; questions whose excerpts hold no evidence sentence are no training rows but
    are kept for the before-and-after figure. Cached in `cache` by package name."""
    from benchmarks.realdocs.scoring import K
    from rag.answering.extractive import rank_sentences
    from rag.evaluation import MemoEmbedder, evidence_sentence, load_questions
    from rag.excerpts.packing import Ledger
    from rag.excerpts.search_tool import search_first
    from rag.indexing.build import open_index
    from rag.verification.support import embed_cached

    path = cache / f"{package.name}.quote-cases.v{CASES_VERSION}.pickle" if cache is not None else None
    if path is not None and path.is_file() and limit is None:
        return pickle.loads(path.read_bytes())
    memo = MemoEmbedder(embedder)
    index = open_index(folder, tokenizer, memo)
    cases = []
    for q in [q for p in package.questions for q in load_questions(p)][:limit]:
        if not (q.answerable and q.evidence):
            continue
        shown = {c.n: c for c in search_first(index, Ledger(), tokenizer, q.q, K).citations}
        ranked = rank_sentences(q.q, shown, index.chunk, memo)
        found = ranked.candidates
        vectors = embed_cached([c.in_context for c in found], memo) if found else {}
        cases.append(QuoteCase(
            package.name, q.id, embedder.tokenize(q.q),
            np.array([vectors[c.in_context] for c in found], dtype=np.float16).reshape(-1, 384),
            RankedSentences(found, ranked.features, ranked.scores),
            np.array([evidence_sentence(c.sentence, q.evidence) for c in found], dtype=bool),
            is_validation_id(package.name, q.id)))
    if path is not None and limit is None:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(pickle.dumps(cases))
    return cases


def chosen_hit(case: QuoteCase, tuned: np.ndarray | None) -> bool:
    """Whether the quotes `select` chooses (the order with `tuned` added, or the score alone) hold the evidence."""
    if not case.hits.any():
        return False
    ranked = RankedSentences(case.ranked.candidates, case.ranked.features, case.ranked.scores, tuned)
    chosen = select(ranked, True, other_excerpt=OTHER_EXCERPT)
    said = {part for q in chosen for part in (q.sentence, *q.passage)}
    return any(hit and any(c.sentence in part for part in said) for c, hit in zip(case.ranked.candidates, case.hits))


def train(cases: Sequence[QuoteCase], zip_path: Path, start: dict[str, np.ndarray] | None, epochs: int = EPOCHS,
          seed: int = SEED, say: Callable[[str], None] = print):
    """The tuned PyTorch encoder (started from `start`, the search encoder's layers, when given) and what it saw."""
    import torch

    random.seed(seed)
    torch.manual_seed(seed)
    model = tower_model(zip_path)
    if start:
        with torch.no_grad():
            for i in range(TRAINED_FROM, len(model.layers)):
                for name, tensor in layer_tensors(model.layers[i], f"{PREFIX}encoder.layer.{i}.").items():
                    tensor.copy_(torch.tensor(np.asarray(start[name], dtype=np.float32)))
    rows = [c for c in cases if not c.kept_out and c.hits.any()]
    rng = random.Random(seed)
    batches = []
    for _ in range(epochs):
        order = list(range(len(rows)))
        rng.shuffle(order)
        batches += [order[i : i + BATCH] for i in range(0, len(order), BATCH)]
    params = [p for p in model.parameters() if p.requires_grad]
    optimizer = torch.optim.AdamW(params, lr=LEARNING_RATE, weight_decay=0.01)
    warm = max(1, len(batches) // 16)
    schedule = torch.optim.lr_scheduler.LambdaLR(
        optimizer, lambda s: min((s + 1) / warm, max(0.0, (len(batches) - s) / max(1, len(batches) - warm))))
    started = time.perf_counter()
    model.train()
    for step, batch in enumerate(batches, 1):
        vectors = model.encode([rows[i].ids for i in batch])
        loss = torch.zeros(())
        for j, i in enumerate(batch):
            case = rows[i]
            cosine = torch.tensor(case.vectors.astype(np.float32)) @ vectors[j]
            logits = SCALE * (torch.tensor(case.ranked.scores.astype(np.float32)) + QUOTE_TOWER_WEIGHT * cosine)
            loss = loss + torch.logsumexp(logits, 0) - torch.logsumexp(logits[torch.tensor(case.hits)], 0)
        loss = loss / len(batch)
        optimizer.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(params, 1.0)
        optimizer.step()
        schedule.step()
        if step % 50 == 0 or step == len(batches):
            say(f"step {step}/{len(batches)} loss {loss.item():.3f} ({time.perf_counter() - started:.0f} s)")
    model.eval()
    return model, {"questions": len(rows), "steps": len(batches), "seconds": round(time.perf_counter() - started, 1)}


def tuned_cosines(model, case: QuoteCase) -> np.ndarray:
    """The candidates' cosines with the trained encoder's question vector, floored at 0 as at run time."""
    import torch

    with torch.no_grad():
        vector = model.encode([case.ids])[0].numpy()
    return np.maximum(case.vectors.astype(np.float32) @ vector, 0.0).astype(np.float32)


def main(packages: Sequence[Package], tokenizer, out: Path = RERANKER_FILE, epochs: int = EPOCHS,
         cache: Path | None = None, limit: int | None = None, say: Callable[[str], None] = print) -> int:
    """Train on the fit packages' questions (nine tenths), print the kept-out tenth before and after, write the file."""
    from models.llama_cpp.bert_gguf import minilm_zip, source_sha256
    from models.llama_cpp.embedder import load_embedder
    from models.query_tower import attach_tuned_queries
    from models.reranker import read_reranker
    from models.errors import ModelNotFound

    if not torch_ready("train-quote-tower", say):
        return 2
    fit_only(packages, "the quote encoder")
    embedder = load_embedder()
    attach_tuned_queries(embedder)  # the first search as the agent runs it: the tuned search encoder
    embedder.quote_encoder = None  # the score the quote encoder learns beside is the one without it
    cases: list[QuoteCase] = []
    for p in packages:
        found = package_cases(p, p.folder(), tokenizer, embedder, cache, limit)
        say(f"{p.name}: {len(found)} questions, {sum(c.hits.any() for c in found)} with the evidence among the candidates")
        cases += found
    zip_path = minilm_zip()
    try:
        start = read_reranker(out, only=PREFIX)[0]
    except ModelNotFound:
        start = {}
    model, info = train(cases, zip_path, start, epochs, say=say)
    kept = [c for c in cases if c.kept_out]
    before = [chosen_hit(c, None) for c in kept]
    after = [chosen_hit(c, tuned_cosines(model, c)) for c in kept]
    say(f"kept-out fit questions ({len(kept)}): evidence sentence among the chosen quotes {share(before)} -> {share(after)}")
    meta = {"minilm_sha256": source_sha256(zip_path), "trained_from": str(TRAINED_FROM), "epochs": str(epochs),
            "seed": str(SEED), "weight": str(QUOTE_TOWER_WEIGHT), "trained_on": ",".join(p.name for p in packages),
            "questions": str(info["questions"]), "started_from": "query_tower" if start else "minilm",
            "kept_out": json.dumps({"questions": len(kept), "before": share(before), "after": share(after)})}
    merge_weights(out, tuned_tensors(model, QUOTE_PREFIX), {QUOTE_PREFIX + k: v for k, v in meta.items()},
                  keep=lambda name: not name.startswith(QUOTE_PREFIX))
    say(f"trained on {info['questions']} questions, {info['steps']} steps, {info['seconds']} s -> {out} "
        f"({out.stat().st_size / 1e6:.1f} MB)")
    return 0
