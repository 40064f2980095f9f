"""`python -m benchmarks.realdocs train-query-tower`: tune the question side of dense search (PyTorch, CPU).

For each answerable question of a fit package, the chunks that hold its evidence on its gold page are the
positives and every other chunk of the package (their stored MiniLM vectors, as the index holds them) the
negatives: a softmax over the whole package at temperature 1/SCALE. Only MiniLM's top layers (TRAINED_FROM and up)
learn; the word table, embeddings and lower layers stay MiniLM's, so the run-time file holds two layers. The chunk
vectors never change, so no index is re-embedded. A tenth of the fit questions (train_reranker.is_validation) is
kept out, and the result on them is printed before and after. The tuned layers are written into the one weights
file under `query_tower.`, keeping the cross-encoder's tensors there.
"""

from __future__ import annotations

import json
import random
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Sequence

import numpy as np

from benchmarks.realdocs.suite import Package, fit_only
from benchmarks.realdocs.train_reranker import torch_ready, batch_tensors, is_validation_id, layer_tensors, merge_weights, torch_model
from models.query_tower import PREFIX
from models.reranker import RERANKER_FILE

TRAINED_FROM = 4  # MiniLM has 6 layers: the top two learn (all six learned no better on held-back, 0.663 vs 0.673)
EPOCHS = 3
BATCH = 32  # questions a step, all of one package (they share its chunk matrix)
LEARNING_RATE = 3e-5
SCALE = 20.0  # cosine -> logit (temperature 0.05)
SEED = 13
K = 5  # what the kept-out figure counts: an evidence chunk among the first K by cosine


@dataclass
class PackageData:
    """One package's chunk vectors and its answerable questions' token ids and evidence rows."""

    name: str
    matrix: np.ndarray  # (chunks, 384) float32, the index's stored vectors
    questions: list[str] = field(default_factory=list)
    ids: list[list[int]] = field(default_factory=list)
    positives: list[list[int]] = field(default_factory=list)
    kept_out: list[bool] = field(default_factory=list)


def package_data(package: Package, folder: Path, tokenizer, embedder, limit: int | None = None) -> PackageData:
    """Open (or build) the package's index with the embedder; the rows that hold each question's evidence."""
    from rag.evaluation import holds_evidence, load_questions
    from rag.indexing.build import open_index

    index = open_index(folder, tokenizer, embedder)
    data = PackageData(package.name, np.asarray(index.dense.matrix, dtype=np.float32))
    for q in [q for path in package.questions for q in load_questions(path)][:limit]:
        if not (q.answerable and q.evidence):
            continue
        gold = set(q.gold_docs)
        rows = [i for i, c in enumerate(index.chunks) if c.doc_id in gold and holds_evidence(c.text, q.evidence)]
        if rows:
            data.questions.append(q.q)
            data.ids.append(embedder.tokenize(q.q))
            data.positives.append(rows)
            data.kept_out.append(is_validation_id(package.name, q.id))
    return data


def tower_model(zip_path: Path):
    """MiniLM's six layers as a PyTorch question encoder (mean pooling, unit rows); lower layers frozen."""
    import torch

    model = torch_model(6, zip_path)
    del model.head
    for p in model.parameters():
        p.requires_grad = False
    for layer in model.layers[TRAINED_FROM:]:
        for p in layer.parameters():
            p.requires_grad = True

    def encode(ids_list: Sequence[list[int]]):
        ids, types, mask = batch_tensors([(i, [0] * len(i)) for i in ids_list])
        x = model.ln(model.words(ids) + model.positions[: ids.shape[1]] + model.types[types])
        bias = torch.where(mask, 0.0, -1e9)[:, None, None, :]
        for layer in model.layers:
            x = layer(x, bias)
        m = mask.unsqueeze(-1).float()
        return torch.nn.functional.normalize((x * m).sum(1) / m.sum(1), dim=-1)

    model.encode = encode
    return model


def evidence_at_k(vectors: np.ndarray, data: PackageData, rows: Sequence[int]) -> list[bool]:
    """For each question row: an evidence chunk among the first K chunks by cosine."""
    out = []
    for r in rows:
        scores = data.matrix @ vectors[r]
        top = np.argpartition(-scores, K)[:K] if len(scores) > K else np.arange(len(scores))
        out.append(bool(set(top.tolist()) & set(data.positives[r])))
    return out


def train(datasets: Sequence[PackageData], zip_path: Path, epochs: int = EPOCHS, seed: int = SEED,
          say: Callable[[str], None] = print):
    """The tuned PyTorch encoder and what training saw."""
    import torch

    random.seed(seed)
    torch.manual_seed(seed)
    model = tower_model(zip_path)
    matrices = {d.name: torch.tensor(d.matrix) for d in datasets}
    rng = random.Random(seed)
    batches = []
    for _ in range(epochs):
        epoch = []
        for d in datasets:
            rows = [i for i in range(len(d.questions)) if not d.kept_out[i]]
            rng.shuffle(rows)
            epoch += [(d, rows[i : i + BATCH]) for i in range(0, len(rows), BATCH)]
        rng.shuffle(epoch)
        batches += epoch
    params = [p for p in model.parameters() if p.requires_grad]
    optimizer = torch.optim.AdamW(params, lr=LEARNING_RATE, weight_decay=0.01)
    warm = max(1, len(batches) // 16)
    schedule = torch.optim.lr_scheduler.LambdaLR(
        optimizer, lambda s: min((s + 1) / warm, max(0.0, (len(batches) - s) / max(1, len(batches) - warm))))
    started = time.perf_counter()
    model.train()
    for step, (d, rows) in enumerate(batches, 1):
        logits = SCALE * model.encode([d.ids[r] for r in rows]) @ matrices[d.name].T
        positive = torch.full_like(logits, -1e9)
        for j, r in enumerate(rows):
            positive[j, d.positives[r]] = 0.0
        loss = (torch.logsumexp(logits, 1) - torch.logsumexp(logits + positive, 1)).mean()
        optimizer.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(params, 1.0)
        optimizer.step()
        schedule.step()
        if step % 50 == 0 or step == len(batches):
            say(f"step {step}/{len(batches)} loss {loss.item():.3f} ({time.perf_counter() - started:.0f} s)")
    model.eval()
    questions = sum(1 for d in datasets for k in d.kept_out if not k)
    return model, {"questions": questions, "steps": len(batches), "seconds": round(time.perf_counter() - started, 1)}


def encode_all(model, data: PackageData) -> np.ndarray:
    import torch

    with torch.no_grad():
        parts = [model.encode(data.ids[i : i + 64]).numpy() for i in range(0, len(data.ids), 64)]
    return np.concatenate(parts) if parts else np.zeros((0, 384), np.float32)


def tuned_tensors(model, prefix: str = PREFIX) -> dict[str, np.ndarray]:
    """The trained layers under MiniLM's names, prefixed (what models.query_tower reads: PREFIX for search's
    encoder, QUOTE_PREFIX for the quote scorer's)."""
    out = {}
    for i in range(TRAINED_FROM, len(model.layers)):
        out |= layer_tensors(model.layers[i], f"{prefix}encoder.layer.{i}.")
    return {k: v.detach().cpu().numpy().astype(np.float32) for k, v in out.items()}


def share(values: Sequence[bool]) -> str:
    return f"{np.mean(values):.3f}" if values else "-"


def main(packages: Sequence[Package], tokenizer, out: Path = RERANKER_FILE, epochs: int = EPOCHS,
         limit: int | None = None, say: Callable[[str], None] = print) -> int:
    """Train on the fit packages' questions (nine tenths), print the kept-out tenth before and after, write the file."""
    from models.llama_cpp.bert_gguf import minilm_zip, source_sha256
    from models.llama_cpp.embedder import load_embedder

    if not torch_ready("train-query-tower", say):
        return 2
    fit_only(packages, "the question encoder")
    embedder = load_embedder()
    datasets = [package_data(p, p.folder(), tokenizer, embedder, limit) for p in packages]
    datasets = [d for d in datasets if d.questions]
    zip_path = minilm_zip()
    before = {d.name: np.asarray(embedder.embed(d.questions), dtype=np.float32) for d in datasets}
    model, info = train(datasets, zip_path, epochs, say=say)
    base, tuned = [], []
    for d in datasets:
        rows = [i for i, k in enumerate(d.kept_out) if k]
        base += evidence_at_k(before[d.name], d, rows)
        tuned += evidence_at_k(encode_all(model, d), d, rows)
    say(f"kept-out fit questions ({len(base)}): evidence chunk in the first {K} by cosine {share(base)} -> {share(tuned)}")
    meta = {"minilm_sha256": source_sha256(zip_path), "trained_from": str(TRAINED_FROM), "epochs": str(epochs),
            "seed": str(SEED), "trained_on": ",".join(d.name for d in datasets), "questions": str(info["questions"]),
            "kept_out": json.dumps({"questions": len(base), "before": share(base), "after": share(tuned)})}
    meta = {PREFIX + k: v for k, v in meta.items()}
    merge_weights(out, tuned_tensors(model), meta, keep=lambda name: not name.startswith(PREFIX))
    say(f"trained on {info['questions']} questions, {info['steps']} steps, {info['seconds']} s -> {out} "
        f"({out.stat().st_size / 1e6:.1f} MB)")
    return 0
