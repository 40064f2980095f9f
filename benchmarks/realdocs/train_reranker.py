"""`python -m benchmarks.realdocs train-reranker`: train the cross-encoder on the fit packages (PyTorch, CPU).

The model is the first LAYERS layers of all-MiniLM-L6-v2 with a linear head on the [CLS] row, the word-embedding
table frozen (models.reranker reads it from the installed MiniLM at run time). The loss is binary cross-entropy on
every pair (the score's sign decides declines) plus a softmax over each answerable question's sentences (the order
decides quotes). Fixed seed, one thread per core; the result is written as float16 safetensors with the metadata
models.reranker checks. PyTorch is a training extra only: `pip install -e '.[train]'`.
"""

from __future__ import annotations

import json
import math
import random
import struct
import time
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Sequence

import numpy as np

from benchmarks.realdocs.rerank_data import Pair, by_question
from models.llama_cpp.bert_gguf import minilm_zip, source_sha256
from models.query_tower import PREFIX as QUERY_PREFIX, QUOTE_PREFIX
from models.reranker import HEADS, LN_EPS, RERANKER_FILE, pair_ids, read_reranker
from models.safetensors import read_safetensors

LAYERS = 2
MAX_TOKENS = 128
EPOCHS = 1
NEGATIVES = 6  # per question, from the cached hard-first negatives (rerank_data.NEGATIVES): the cost is per pair
PER_PACKAGE = 250  # questions a package gives at most, so the largest sets do not outweigh the rest
QUESTIONS_PER_STEP = 4
LEARNING_RATE = 1e-4
WARMUP = 0.06  # share of the steps the learning rate rises over
SEED = 13
HEAD_LR_FACTOR = 10  # the head starts from zero: it learns faster than the pretrained layers under it


@dataclass(frozen=True)
class TrainSettings:
    layers: int = LAYERS
    max_tokens: int = MAX_TOKENS
    epochs: int = EPOCHS
    questions_per_step: int = QUESTIONS_PER_STEP
    learning_rate: float = LEARNING_RATE
    seed: int = SEED
    negatives: int = NEGATIVES
    per_package: int = PER_PACKAGE
    limit: int | None = None  # at most this many questions (a smoke run)
    kind: str = "sentences"  # what the model reads after the question: "sentences" (quotes) or "passages" (whole chunks)
    pools: str = "bm25"  # whose first hits give the candidates: BM25's or the hybrid search's (rerank_data.POOLS)


def torch_model(layers: int, zip_path: Path):
    """The PyTorch cut, initialised from MiniLM's first `layers` layers and a zero head."""
    import torch
    from torch import nn

    with zipfile.ZipFile(zip_path) as zf:
        w = read_safetensors(zf.read("model.safetensors"), str(zip_path))

    def t(name: str):
        return torch.tensor(np.array(w[name], dtype=np.float32))

    class Layer(nn.Module):
        def __init__(self, p: str) -> None:
            super().__init__()
            self.qkv = nn.Linear(384, 3 * 384)
            self.out, self.ln1 = nn.Linear(384, 384), nn.LayerNorm(384, eps=LN_EPS)
            self.up, self.down, self.ln2 = nn.Linear(384, 1536), nn.Linear(1536, 384), nn.LayerNorm(384, eps=LN_EPS)
            with torch.no_grad():
                self.qkv.weight.copy_(torch.cat([t(p + f"attention.self.{n}.weight") for n in ("query", "key", "value")]))
                self.qkv.bias.copy_(torch.cat([t(p + f"attention.self.{n}.bias") for n in ("query", "key", "value")]))
                for mod, name in ((self.out, "attention.output.dense"), (self.up, "intermediate.dense"), (self.down, "output.dense")):
                    mod.weight.copy_(t(p + name + ".weight"))
                    mod.bias.copy_(t(p + name + ".bias"))
                for mod, name in ((self.ln1, "attention.output.LayerNorm"), (self.ln2, "output.LayerNorm")):
                    mod.weight.copy_(t(p + name + ".weight"))
                    mod.bias.copy_(t(p + name + ".bias"))

        def forward(self, x, bias):
            b, n, d = x.shape
            h = d // HEADS
            q, k, v = self.qkv(x).view(b, n, 3, HEADS, h).permute(2, 0, 3, 1, 4)
            att = torch.softmax(q @ k.transpose(-1, -2) / math.sqrt(h) + bias, dim=-1)
            x = self.ln1(x + self.out((att @ v).transpose(1, 2).reshape(b, n, d)))
            return self.ln2(x + self.down(nn.functional.gelu(self.up(x), approximate="tanh")))

    class CrossEncoder(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.words = nn.Embedding.from_pretrained(t("embeddings.word_embeddings.weight"), freeze=True)
            self.positions = nn.Parameter(t("embeddings.position_embeddings.weight"))
            self.types = nn.Parameter(t("embeddings.token_type_embeddings.weight"))
            self.ln = nn.LayerNorm(384, eps=LN_EPS)
            with torch.no_grad():
                self.ln.weight.copy_(t("embeddings.LayerNorm.weight"))
                self.ln.bias.copy_(t("embeddings.LayerNorm.bias"))
            self.layers = nn.ModuleList(Layer(f"encoder.layer.{i}.") for i in range(layers))
            self.head = nn.Linear(4 * 384, 1)
            nn.init.zeros_(self.head.weight)
            nn.init.zeros_(self.head.bias)

        def forward(self, ids, types, mask):
            n = ids.shape[1]
            x = self.ln(self.words(ids) + self.positions[:n] + self.types[types])
            bias = torch.where(mask, 0.0, -1e9)[:, None, None, :]
            for layer in self.layers:
                x = layer(x, bias)
            return self.head(pooled(x, mask, types)).squeeze(-1)

        def tensors(self) -> dict[str, np.ndarray]:
            """The trained tensors under the names models.reranker reads (the frozen word table left out)."""
            out = {"embeddings.position_embeddings.weight": self.positions, "embeddings.token_type_embeddings.weight": self.types,
                   "embeddings.LayerNorm.weight": self.ln.weight, "embeddings.LayerNorm.bias": self.ln.bias,
                   "head.weight": self.head.weight, "head.bias": self.head.bias}
            for i, layer in enumerate(self.layers):
                out |= layer_tensors(layer, f"encoder.layer.{i}.")
            return {k: v.detach().cpu().numpy().astype(np.float32) for k, v in out.items()}

    return CrossEncoder()


def layer_tensors(layer, p: str) -> dict:
    """One PyTorch layer's parameters under MiniLM's tensor names, each name prefixed with `p`."""
    out = {}
    for j, name in enumerate(("query", "key", "value")):
        out[p + f"attention.self.{name}.weight"] = layer.qkv.weight[j * 384 : (j + 1) * 384]
        out[p + f"attention.self.{name}.bias"] = layer.qkv.bias[j * 384 : (j + 1) * 384]
    for mod, name in ((layer.out, "attention.output.dense"), (layer.up, "intermediate.dense"), (layer.down, "output.dense"),
                      (layer.ln1, "attention.output.LayerNorm"), (layer.ln2, "output.LayerNorm")):
        out[p + name + ".weight"], out[p + name + ".bias"] = mod.weight, mod.bias
    return out


def pooled(x, mask, types):
    """The head's input (models.reranker.pooled): the question's and the passage's mean rows, their product and
    their distance. MiniLM was trained for mean pooling, so these carry meaning from the first step; its [CLS]
    row alone does not (a head on it learned nothing in a first run: every logit equal)."""
    import torch

    m = mask.unsqueeze(-1).float()
    q = m * (types == 0).unsqueeze(-1).float()
    p = m * (types == 1).unsqueeze(-1).float()
    mq = (x * q).sum(1) / q.sum(1).clamp(min=1.0)
    mp = (x * p).sum(1) / p.sum(1).clamp(min=1.0)
    return torch.cat([mq, mp, mq * mp, (mq - mp).abs()], dim=-1)


def batch_tensors(encoded: Sequence[tuple[list[int], list[int]]]):
    """Padded ids, token types and mask for a list of encoded pairs."""
    import torch

    n = max(len(ids) for ids, _ in encoded)
    ids = torch.zeros((len(encoded), n), dtype=torch.long)
    types = torch.zeros_like(ids)
    mask = torch.zeros((len(encoded), n), dtype=torch.bool)
    for row, (i, t) in enumerate(encoded):
        ids[row, : len(i)], types[row, : len(t)], mask[row, : len(i)] = torch.tensor(i), torch.tensor(t), True
    return ids, types, mask


def training_groups(pairs: Sequence[Pair], settings: TrainSettings) -> list[list[Pair]]:
    """The questions trained on: at most `per_package` of each package (an even spread, by a seeded shuffle), each
    with its positives and its first `negatives` negatives."""
    rng = random.Random(settings.seed)
    by_package: dict[str, list[list[Pair]]] = {}
    for group in by_question(pairs):
        by_package.setdefault(group[0].package, []).append(group)
    chosen = []
    for package in sorted(by_package):
        groups = by_package[package]
        rng.shuffle(groups)
        for g in groups[: settings.per_package]:
            chosen.append([p for p in g if p.label] + [p for p in g if not p.label][: settings.negatives])
    rng.shuffle(chosen)
    return chosen[: settings.limit]


def train(pairs: Sequence[Pair], tokenize: Callable[[str], list[int]], settings: TrainSettings = TrainSettings(),
          zip_path: Path | None = None, say: Callable[[str], None] = print):
    """The trained PyTorch model; `pairs` grouped by question (rerank_data.by_question order)."""
    import torch

    random.seed(settings.seed)
    np.random.seed(settings.seed)
    torch.manual_seed(settings.seed)
    zip_path = zip_path or minilm_zip()
    model = torch_model(settings.layers, zip_path)
    empty = tokenize("")
    cls, sep = empty[0], empty[-1]
    groups = training_groups(pairs, settings)
    encoded = [[(pair_ids(tokenize, p.question, p.text, settings.max_tokens, cls, sep), p.label) for p in g] for g in groups]
    steps = settings.epochs * math.ceil(len(encoded) / settings.questions_per_step)
    head = list(model.head.parameters())
    encoder = [p for p in model.parameters() if p.requires_grad and all(p is not h for h in head)]
    optimizer = torch.optim.AdamW([{"params": encoder, "lr": settings.learning_rate},
                                   {"params": head, "lr": settings.learning_rate * HEAD_LR_FACTOR}], weight_decay=0.01)
    warm = max(1, int(steps * WARMUP))
    schedule = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda s: min((s + 1) / warm, max(0.0, (steps - s) / max(1, steps - warm))))
    rng = random.Random(settings.seed)
    started, step, seen = time.perf_counter(), 0, 0
    model.train()
    for epoch in range(settings.epochs):
        order = list(range(len(encoded)))
        rng.shuffle(order)
        for start in range(0, len(order), settings.questions_per_step):
            chosen = [encoded[i] for i in order[start : start + settings.questions_per_step]]
            flat = [pair for g in chosen for pair, _ in g]
            labels = torch.tensor([float(label) for g in chosen for _, label in g])
            logits = model(*batch_tensors(flat))
            loss = torch.nn.functional.binary_cross_entropy_with_logits(logits, labels)
            offset, listwise = 0, []
            for g in chosen:
                part, lab = logits[offset : offset + len(g)], labels[offset : offset + len(g)]
                if lab.sum() > 0:
                    listwise.append(-(torch.log_softmax(part, 0) * lab / lab.sum()).sum())
                offset += len(g)
            if listwise:
                loss = loss + torch.stack(listwise).mean()
            optimizer.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            optimizer.step()
            schedule.step()
            step, seen = step + 1, seen + len(flat)
            if step % 50 == 0 or step == steps:
                rate = seen / (time.perf_counter() - started)
                say(f"epoch {epoch + 1} step {step}/{steps} loss {loss.item():.3f} ({rate:.1f} pairs/s)")
    model.eval()
    return model, {"pairs_per_epoch": sum(len(g) for g in encoded), "questions": len(encoded),
                   "seconds": round(time.perf_counter() - started, 1), "steps": steps}


def write_safetensors(path: Path, tensors: dict[str, np.ndarray], metadata: dict[str, str]) -> None:
    """float16 safetensors, written to a temp file and renamed."""
    header: dict = {"__metadata__": metadata}
    blobs, offset = [], 0
    for name in sorted(tensors):
        data = np.ascontiguousarray(tensors[name], dtype="<f2").tobytes()
        header[name] = {"dtype": "F16", "shape": list(tensors[name].shape), "data_offsets": [offset, offset + len(data)]}
        blobs.append(data)
        offset += len(data)
    raw = json.dumps(header, separators=(",", ":")).encode()
    raw += b" " * (-len(raw) % 8)
    tmp = Path(path).with_suffix(".tmp")
    tmp.write_bytes(struct.pack("<Q", len(raw)) + raw + b"".join(blobs))
    tmp.replace(path)


def merge_weights(path: Path, tensors: dict[str, np.ndarray], metadata: dict[str, str],
                  keep: Callable[[str], bool]) -> None:
    """Write `tensors` and `metadata` into the one weights file, keeping those of its tensors and metadata keys that
    `keep` names (the other model's: the cross-encoder and the question encoder share the file)."""
    kept: dict[str, np.ndarray] = {}
    meta: dict[str, str] = {}
    if Path(path).is_file():
        weights, stored = read_reranker(path)
        kept = {k: v for k, v in weights.items() if keep(k)}
        meta = {k: v for k, v in stored.items() if keep(k)}
    write_safetensors(Path(path), {**kept, **tensors}, {**meta, **metadata})


def save(model, path: Path, settings: TrainSettings, info: dict, packages: Sequence[str], zip_path: Path | None = None) -> None:
    zip_path = zip_path or minilm_zip()
    meta = {"max_tokens": str(settings.max_tokens), "layers": str(settings.layers), "seed": str(settings.seed), "kind": settings.kind,
            "pools": settings.pools,
            "epochs": str(settings.epochs), "minilm_sha256": source_sha256(zip_path), "trained_on": ",".join(packages),
            "questions": str(info["questions"]), "pairs_per_epoch": str(info["pairs_per_epoch"]),
            "answer_logit": str(info.get("answer_logit", 0.0)), "validation": json.dumps(
                {k: info.get(k) for k in ("top1", "unanswerable_declined", "answerable_declined")})}
    # the question encoders' tensors stay
    merge_weights(path, model.tensors(), meta, keep=lambda name: name.startswith((QUERY_PREFIX, QUOTE_PREFIX)))


VALIDATION_EVERY = 10  # every tenth fit question (by a hash of its id) is kept out of training to choose the thresholds
MAX_WRONG_DECLINES = 0.08  # the decline threshold is the highest that declines at most this share of answerable ones


def is_validation(pair: Pair) -> bool:
    return is_validation_id(pair.package, pair.qid)


def is_validation_id(package: str, qid: str) -> bool:
    """Whether question `qid` of `package` is in the kept-out tenth (by a hash, so every run keeps out the same)."""
    import zlib

    return zlib.crc32(f"{package}/{qid}".encode()) % VALIDATION_EVERY == 0


def predict(model, groups: Sequence[list[Pair]], tokenize, max_tokens: int) -> list[np.ndarray]:
    import torch

    empty = tokenize("")
    out = []
    with torch.no_grad():
        for g in groups:
            enc = [pair_ids(tokenize, p.question, p.text, max_tokens, empty[0], empty[-1]) for p in g]
            out.append(model(*batch_tensors(enc)).numpy())
    return out


def thresholds(groups: Sequence[list[Pair]], logits: Sequence[np.ndarray], say: Callable[[str], None] = print) -> dict:
    """The decline threshold chosen on the validation questions, and what it does there: the highest best-sentence
    logit cut that wrongly declines at most MAX_WRONG_DECLINES of the answerable questions (every unanswerable one
    declined is a gain; an answerable one declined loses its answer)."""
    answerable = [float(l.max()) for g, l in zip(groups, logits) if any(p.label for p in g)]
    unanswerable = [float(l.max()) for g, l in zip(groups, logits) if g[0].unanswerable]
    top1 = [bool(g[int(np.argmax(l))].label) for g, l in zip(groups, logits) if any(p.label for p in g)]
    best = -10.0
    for t in np.arange(-6.0, 6.01, 0.25):
        wrong = np.mean([a < t for a in answerable]) if answerable else 0.0
        if wrong <= MAX_WRONG_DECLINES:
            best = float(t)
    declined = float(np.mean([u < best for u in unanswerable])) if unanswerable else None
    wrong = float(np.mean([a < best for a in answerable])) if answerable else None
    share = f"{np.mean(top1):.2f}" if top1 else "-"
    say(f"validation: {len(answerable)} answerable (top-1 evidence {share}), {len(unanswerable)} unanswerable; "
        f"answer_logit {best:+.2f}: unanswerable declined {declined}, answerable declined {wrong}")
    return {"answer_logit": best, "top1": float(np.mean(top1)) if top1 else None, "unanswerable_declined": declined,
            "answerable_declined": wrong}


def torch_ready(command: str, say: Callable[[str], None]) -> bool:
    """Whether PyTorch (the `train` extra) imports; if not, one line on how to install it."""
    try:
        import torch  # noqa: F401
    except ImportError:
        say(f"{command} needs PyTorch: pip install -e '.[train]'")
        return False
    return True


def main(packages, tokenizer, cache: Path, out: Path = RERANKER_FILE, settings: TrainSettings = TrainSettings(),
         say: Callable[[str], None] = print) -> int:
    """Make (or read back) the pairs of the fit packages, train on nine tenths, choose the decline threshold on the
    tenth kept out, write the model file."""
    from benchmarks.realdocs.rerank_data import suite_pairs
    from models.llama_cpp.embedder import load_embedder

    if not torch_ready("train-reranker", say):
        return 2
    embedder = load_embedder()
    if settings.pools == "hybrid":  # searched as search_docs does: with the tuned question encoder
        from models.query_tower import attach_tuned_queries

        attach_tuned_queries(embedder, True)
    pairs = suite_pairs(packages, tokenizer, cache, say=say, kind=settings.kind, pools=settings.pools, embedder=embedder)
    training = [p for p in pairs if not is_validation(p)]
    model, info = train(training, embedder.tokenize, settings, say=say)
    held = list(by_question([p for p in pairs if is_validation(p)]))[: settings.limit]
    info |= thresholds(held, predict(model, held, embedder.tokenize, settings.max_tokens), say)
    save(model, out, settings, info, [p.name for p in packages])
    say(f"trained on {info['questions']} questions, {info['pairs_per_epoch']} pairs an epoch, {settings.epochs} epochs, "
        f"{info['seconds']} s -> {out} ({out.stat().st_size / 1e6:.1f} MB)")
    return 0
