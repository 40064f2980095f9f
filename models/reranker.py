"""The cross-encoder that reads a question and a passage together: a cut of all-MiniLM-L6-v2 with a scoring head.

It is trained by `python -m benchmarks.realdocs train-reranker` (PyTorch, CPU) and runs here in numpy alone. The
shipped file, `models/reranker.safetensors`, holds what training changed: the first LAYERS encoder layers, the
position and token-type tables, the embedding norm and the head. The word-embedding table was frozen in training
and is read from the installed MiniLM package, so the file stays small and the two can never disagree. Its
metadata names the MiniLM zip's sha256; a different MiniLM is refused rather than scored with.

Inputs are `[CLS] question [SEP] passage [SEP]` in MiniLM's own WordPiece ids (the embedder's llama.cpp tokenizer,
the same ids training saw), cut to `max_tokens`. The score is a logit: above 0 the passage answers the question.
"""

from __future__ import annotations

import json
import struct
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Mapping, Sequence

import numpy as np

from models.errors import ModelNotFound
from models.safetensors import read_safetensors

RERANKER_FILE = Path(__file__).resolve().parent / "reranker.safetensors"
HEADS = 12
LN_EPS = 1e-12
MAX_QUERY_TOKENS = 48  # a question longer than this is cut: the passage keeps the rest of the window
BATCH = 32  # sequences per forward pass, sorted by length so padding stays small
MEMO = 4096  # (question, passage) scores remembered: passages reranked by their sentences, then quotes, read them once
_SQRT_2_OVER_PI = np.float32(np.sqrt(2.0 / np.pi))


def gelu(x: np.ndarray) -> np.ndarray:
    """GELU's tanh form, the one the trainer uses (torch.nn.functional.gelu(approximate="tanh"))."""
    return 0.5 * x * (1.0 + np.tanh(_SQRT_2_OVER_PI * (x + np.float32(0.044715) * x * x * x)))


def layer_norm(x: np.ndarray, weight: np.ndarray, bias: np.ndarray) -> np.ndarray:
    mean = x.mean(-1, keepdims=True)
    var = ((x - mean) ** 2).mean(-1, keepdims=True)
    return (x - mean) / np.sqrt(var + np.float32(LN_EPS)) * weight + bias


@dataclass(frozen=True)
class Layer:
    """One encoder layer, matrices stored (in, out) for `x @ w`."""

    qkv: np.ndarray
    qkv_bias: np.ndarray
    out: np.ndarray
    out_bias: np.ndarray
    ln1: tuple[np.ndarray, np.ndarray]
    up: np.ndarray
    up_bias: np.ndarray
    down: np.ndarray
    down_bias: np.ndarray
    ln2: tuple[np.ndarray, np.ndarray]


def _f32(a: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(a, dtype=np.float32)


def _layer(w: Mapping[str, np.ndarray], i: int) -> Layer:
    p = f"encoder.layer.{i}."
    q, k, v = (w[p + f"attention.self.{n}.weight"] for n in ("query", "key", "value"))
    return Layer(
        qkv=_f32(np.concatenate([q, k, v], axis=0).T),
        qkv_bias=_f32(np.concatenate([w[p + f"attention.self.{n}.bias"] for n in ("query", "key", "value")])),
        out=_f32(w[p + "attention.output.dense.weight"].T), out_bias=_f32(w[p + "attention.output.dense.bias"]),
        ln1=(_f32(w[p + "attention.output.LayerNorm.weight"]), _f32(w[p + "attention.output.LayerNorm.bias"])),
        up=_f32(w[p + "intermediate.dense.weight"].T), up_bias=_f32(w[p + "intermediate.dense.bias"]),
        down=_f32(w[p + "output.dense.weight"].T), down_bias=_f32(w[p + "output.dense.bias"]),
        ln2=(_f32(w[p + "output.LayerNorm.weight"]), _f32(w[p + "output.LayerNorm.bias"])),
    )


def pair_ids(tokenize: Callable[[str], list[int]], question: str, passage: str, max_tokens: int,
             cls: int, sep: int) -> tuple[list[int], list[int]]:
    """Token ids and token types of one pair, cut to the window: the question first (at most MAX_QUERY_TOKENS, and
    at most half the window), the passage fills the rest. The trainer encodes its pairs with this same function."""
    q = tokenize(question)[1:-1][: min(MAX_QUERY_TOKENS, max_tokens // 2)]
    room = max(max_tokens - len(q) - 3, 0)
    p = tokenize(passage)[1:-1][:room]
    return [cls, *q, sep, *p, sep], [0] * (len(q) + 2) + [1] * (len(p) + 1)


class CrossEncoder:
    """Scores (question, passage) pairs with the numpy forward pass of the trained cut.

    `tokenize(text)` gives `[CLS] ... [SEP]` ids (models.llama_cpp.embedder.LlamaEmbedder.tokenize)."""

    def __init__(self, weights: Mapping[str, np.ndarray], word_embeddings: np.ndarray,
                 tokenize: Callable[[str], list[int]], max_tokens: int = 128, answer_logit: float = 0.0,
                 reads: str = "sentences") -> None:
        layers = sorted({int(k.split(".")[2]) for k in weights if k.startswith("encoder.layer.")})
        if not layers or layers != list(range(len(layers))):
            raise ModelNotFound("the reranker file holds no encoder layers 0..n: rebuild it with train-reranker")
        self.layers = [_layer(weights, i) for i in layers]
        self.words = word_embeddings
        self.positions = _f32(weights["embeddings.position_embeddings.weight"])
        self.types = _f32(weights["embeddings.token_type_embeddings.weight"])
        self.ln = (_f32(weights["embeddings.LayerNorm.weight"]), _f32(weights["embeddings.LayerNorm.bias"]))
        self.head = _f32(weights["head.weight"]).reshape(-1)
        self.head_bias = np.float32(np.asarray(weights["head.bias"]).reshape(-1)[0])
        self.max_tokens = min(int(max_tokens), len(self.positions))
        self.answer_logit = float(answer_logit)  # below this for every sentence: nothing answers (chosen in training)
        self.reads = reads  # what it was trained to read after the question: "sentences" or "passages" (whole chunks)
        self._tokenize = tokenize
        self._memo: dict[tuple[str, str], float] = {}
        empty = tokenize("")
        self.cls, self.sep = empty[0], empty[-1]

    def pair_ids(self, question: str, passage: str) -> tuple[list[int], list[int]]:
        """Token ids and token types of one pair (see pair_ids)."""
        return pair_ids(self._tokenize, question, passage, self.max_tokens, self.cls, self.sep)

    def score(self, question: str, passages: Sequence[str]) -> np.ndarray:
        """One logit per passage (float32), in the order given; pairs scored before are remembered (MEMO)."""
        out = np.array([self._memo.get((question, p), np.nan) for p in passages], dtype=np.float32)
        todo = [i for i in range(len(passages)) if np.isnan(out[i])]
        pairs = {i: self.pair_ids(question, passages[i]) for i in todo}
        order = sorted(todo, key=lambda i: len(pairs[i][0]))
        for start in range(0, len(order), BATCH):
            batch = order[start : start + BATCH]
            out[batch] = self.forward([pairs[i] for i in batch])
        if len(self._memo) + len(todo) > MEMO:
            self._memo.clear()
        self._memo.update({(question, passages[i]): float(out[i]) for i in todo})
        return out

    def forward(self, pairs: Sequence[tuple[list[int], list[int]]]) -> np.ndarray:
        """Logits of already tokenized pairs, padded to the longest."""
        if not pairs:
            return np.zeros(0, dtype=np.float32)
        length = max(len(ids) for ids, _ in pairs)
        ids = np.zeros((len(pairs), length), dtype=np.int64)
        types = np.zeros_like(ids)
        mask = np.zeros((len(pairs), length), dtype=bool)
        for row, (i, t) in enumerate(pairs):
            ids[row, : len(i)], types[row, : len(t)], mask[row, : len(i)] = i, t, True
        x = self.words[ids].astype(np.float32) + self.positions[:length] + self.types[types]
        x = layer_norm(x, *self.ln)
        bias = np.where(mask, np.float32(0.0), np.float32(-1e9))[:, None, None, :]
        for layer in self.layers:
            x = _encode(x, layer, bias)
        return pooled(x, mask, types) @ self.head + self.head_bias


def pooled(x: np.ndarray, mask: np.ndarray, types: np.ndarray) -> np.ndarray:
    """The head's input: the question's and the passage's mean rows (by token type, padding left out), their
    product and their absolute difference; MiniLM was trained for mean pooling, so these carry meaning."""
    q = (mask & (types == 0))[..., None].astype(np.float32)
    p = (mask & (types == 1))[..., None].astype(np.float32)
    mq = (x * q).sum(1) / np.maximum(q.sum(1), 1.0)
    mp = (x * p).sum(1) / np.maximum(p.sum(1), 1.0)
    return np.concatenate([mq, mp, mq * mp, np.abs(mq - mp)], axis=-1)


def _encode(x: np.ndarray, layer: Layer, bias: np.ndarray) -> np.ndarray:
    # 2-D products and contiguous heads: numpy's stacked matmul on strided views skips BLAS (100x slower here).
    b, n, d = x.shape
    h = d // HEADS
    flat = x.reshape(b * n, d)
    qkv = (flat @ layer.qkv + layer.qkv_bias).reshape(b, n, 3, HEADS, h).transpose(2, 0, 3, 1, 4)
    q, k, v = (np.ascontiguousarray(qkv[i]) for i in range(3))
    att = q @ np.ascontiguousarray(k.transpose(0, 1, 3, 2)) / np.float32(np.sqrt(h)) + bias
    att = np.exp(att - att.max(-1, keepdims=True))
    att /= att.sum(-1, keepdims=True)
    ctx = np.ascontiguousarray((att @ v).transpose(0, 2, 1, 3)).reshape(b * n, d)
    flat = layer_norm(flat + ctx @ layer.out + layer.out_bias, *layer.ln1)
    flat = layer_norm(flat + gelu(flat @ layer.up + layer.up_bias) @ layer.down + layer.down_bias, *layer.ln2)
    return flat.reshape(b, n, d)


def read_reranker(path: Path = RERANKER_FILE, only: str = "") -> tuple[dict[str, np.ndarray], dict[str, str]]:
    """The trained tensors (float32; with `only`, those whose names start with it) and the file's metadata; a missing
    or damaged file is ModelNotFound."""
    try:
        data = Path(path).read_bytes()
        (size,) = struct.unpack("<Q", data[:8])
        meta = json.loads(data[8 : 8 + size]).get("__metadata__", {})
    except (OSError, ValueError, struct.error) as exc:
        raise ModelNotFound(f"cannot read the reranker {path} ({exc}): reinstall smoldocs or run with --rerank off") from None
    stored = read_safetensors(data, str(path))
    weights = {k: np.asarray(v, dtype=np.float32) for k, v in stored.items() if k.startswith(only)}
    return weights, dict(meta)


def minilm_word_embeddings(zip_path: Path) -> np.ndarray:
    """MiniLM's word-embedding table, from the installed package's zip (the table the reranker was trained on)."""
    try:
        with zipfile.ZipFile(zip_path) as zf:
            weights = read_safetensors(zf.read("model.safetensors"), f"{zip_path}!model.safetensors")
    except (OSError, KeyError, ValueError, zipfile.BadZipFile) as exc:
        raise ModelNotFound(f"{zip_path} is not a usable MiniLM archive ({exc})") from None
    return _f32(weights["embeddings.word_embeddings.weight"])


def optional_reranker(embedder) -> CrossEncoder | None:
    """The shipped cross-encoder for the in-process MiniLM embedder; None without one (BM25 only, or an embeddings
    server: the reranker reads MiniLM's own ids), or when the file is missing or was trained on another MiniLM."""
    from models.llama_cpp.embedder import LlamaEmbedder

    if not isinstance(embedder, LlamaEmbedder) or not RERANKER_FILE.is_file():
        return None
    known = _LOADED.get(id(embedder))
    if known is not None and known[0] is embedder:
        return known[1]  # one per process and embedder: a new chat session does not read the file again
    try:
        scorer = load_reranker(embedder.tokenize)
    except ModelNotFound:
        return None
    _LOADED[id(embedder)] = (embedder, scorer)
    return scorer


_LOADED: dict[int, tuple[object, CrossEncoder]] = {}


def load_reranker(tokenize: Callable[[str], list[int]], path: Path = RERANKER_FILE,
                  zip_path: Path | None = None) -> CrossEncoder:
    """The shipped cross-encoder over MiniLM's installed word table; refused when it was trained on another MiniLM."""
    from models.llama_cpp.bert_gguf import minilm_zip, source_sha256

    weights, meta = read_reranker(path)
    zip_path = zip_path or minilm_zip()
    trained_on = meta.get("minilm_sha256", "")
    if trained_on and trained_on != source_sha256(zip_path):
        raise ModelNotFound(f"the reranker was trained on another MiniLM ({trained_on[:10]}): run with --rerank off")
    return CrossEncoder(weights, minilm_word_embeddings(zip_path), tokenize, int(meta.get("max_tokens", 128)),
                        float(meta.get("answer_logit", 0.0)), meta.get("kind", "sentences"))
