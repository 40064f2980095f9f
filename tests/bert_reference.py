"""An independent MiniLM reference for tests: HF-style WordPiece and a numpy BERT forward pass.

It shares no code with models/ (its own safetensors parsing included), so agreement means something.
"""

from __future__ import annotations

import json
import math
import struct
import unicodedata
import zipfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np


def _is_control(ch: str) -> bool:
    return ch not in "\t\n\r" and unicodedata.category(ch).startswith("C")


def _is_whitespace(ch: str) -> bool:
    return ch in " \t\n\r" or unicodedata.category(ch) == "Zs"


def _is_punctuation(ch: str) -> bool:
    cp = ord(ch)
    if 33 <= cp <= 47 or 58 <= cp <= 64 or 91 <= cp <= 96 or 123 <= cp <= 126:
        return True
    return unicodedata.category(ch).startswith("P")


def _is_cjk(cp: int) -> bool:
    return any(
        lo <= cp <= hi
        for lo, hi in (
            (0x4E00, 0x9FFF), (0x3400, 0x4DBF), (0x20000, 0x2A6DF), (0x2A700, 0x2B73F),
            (0x2B740, 0x2B81F), (0x2B820, 0x2CEAF), (0xF900, 0xFAFF), (0x2F800, 0x2FA1F),
        )
    )


class WordPiece:
    """BERT uncased tokenization as HF's BertTokenizer does it: clean, split CJK, lowercase, strip accents,
    split punctuation, then greedy longest-match WordPiece with "##" continuations."""

    def __init__(self, vocab: dict[str, int], unk: str = "[UNK]", max_chars: int = 100) -> None:
        self.vocab = vocab
        self.unk_id = vocab[unk]
        self.cls_id = vocab["[CLS]"]
        self.sep_id = vocab["[SEP]"]
        self.max_chars = max_chars

    def words(self, text: str) -> list[str]:
        cleaned = []
        for ch in text:
            cp = ord(ch)
            if cp == 0 or cp == 0xFFFD or _is_control(ch):
                continue
            if _is_whitespace(ch):
                cleaned.append(" ")
            elif _is_cjk(cp):
                cleaned.append(f" {ch} ")
            else:
                cleaned.append(ch)
        out: list[str] = []
        for token in "".join(cleaned).split():
            token = unicodedata.normalize("NFD", token.lower())
            token = "".join(ch for ch in token if unicodedata.category(ch) != "Mn")
            current = ""
            for ch in token:
                if _is_punctuation(ch):
                    if current:
                        out.append(current)
                    out.append(ch)
                    current = ""
                else:
                    current += ch
            if current:
                out.append(current)
        return out

    def word_ids(self, word: str) -> list[int]:
        if len(word) > self.max_chars:
            return [self.unk_id]
        ids, start = [], 0
        while start < len(word):
            end = len(word)
            while end > start:
                piece = word[start:end] if start == 0 else "##" + word[start:end]
                if piece in self.vocab:
                    ids.append(self.vocab[piece])
                    break
                end -= 1
            if end == start:
                return [self.unk_id]
            start = end
        return ids

    def encode(self, text: str) -> list[int]:
        """[CLS] ids [SEP] for one text."""
        ids = [self.cls_id]
        for word in self.words(text):
            ids.extend(self.word_ids(word))
        return ids + [self.sep_id]


def _read_safetensors(raw: bytes) -> dict[str, np.ndarray]:
    (n,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8 : 8 + n])
    body = raw[8 + n :]
    dtypes = {"F32": np.float32, "F16": np.float16, "I64": np.int64}
    out = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        begin, end = info["data_offsets"]
        out[name] = np.frombuffer(body[begin:end], dtype=dtypes[info["dtype"]]).reshape(info["shape"]).astype(np.float32)
    return out


def _layer_norm(x: np.ndarray, w: np.ndarray, b: np.ndarray, eps: float) -> np.ndarray:
    mean = x.mean(axis=-1, keepdims=True)
    var = ((x - mean) ** 2).mean(axis=-1, keepdims=True)
    return (x - mean) / np.sqrt(var + eps) * w + b


def _erf(x: np.ndarray) -> np.ndarray:
    # Abramowitz & Stegun 7.1.26: |error| < 1.5e-7, far below the f16 weights' own noise; math.erf per element
    # would make a 512-token forward pass take seconds.
    sign, a = np.sign(x), np.abs(x)
    t = 1.0 / (1.0 + 0.3275911 * a)
    poly = t * (0.254829592 + t * (-0.284496736 + t * (1.421413741 + t * (-1.453152027 + t * 1.061405429))))
    return sign * (1.0 - poly * np.exp(-a * a))


def _gelu(x: np.ndarray) -> np.ndarray:
    """The exact (erf) GELU BERT was trained with, not the tanh approximation."""
    return 0.5 * x * (1.0 + _erf(x / math.sqrt(2.0)))


@dataclass
class ReferenceBert:
    """float32 BERT encoder with mean pooling and L2 norm, as sentence-transformers runs all-MiniLM-L6-v2."""

    weights: dict[str, np.ndarray]
    config: dict
    tokenizer: WordPiece

    @classmethod
    def from_zip(cls, path: Path) -> "ReferenceBert":
        with zipfile.ZipFile(path) as zf:
            weights = _read_safetensors(zf.read("model.safetensors"))
            config = json.loads(zf.read("config.json"))
            vocab = json.loads(zf.read("tokenizer.json"))["model"]["vocab"]
        return cls(weights, config, WordPiece(vocab))

    def forward(self, ids: list[int]) -> np.ndarray:
        w, eps = self.weights, self.config["layer_norm_eps"]
        n_heads = self.config["num_attention_heads"]
        n = len(ids)
        x = w["embeddings.word_embeddings.weight"][ids] + w["embeddings.position_embeddings.weight"][:n]
        x = x + w["embeddings.token_type_embeddings.weight"][0]
        x = _layer_norm(x, w["embeddings.LayerNorm.weight"], w["embeddings.LayerNorm.bias"], eps)
        for i in range(self.config["num_hidden_layers"]):
            p = f"encoder.layer.{i}."

            def dense(h: np.ndarray, name: str) -> np.ndarray:
                return h @ w[p + name + ".weight"].T + w[p + name + ".bias"]

            q, k, v = (dense(x, f"attention.self.{m}") for m in ("query", "key", "value"))
            d = q.shape[1] // n_heads
            q, k, v = (t.reshape(n, n_heads, d).transpose(1, 0, 2) for t in (q, k, v))
            scores = q @ k.transpose(0, 2, 1) / math.sqrt(d)
            scores = np.exp(scores - scores.max(axis=-1, keepdims=True))
            probs = scores / scores.sum(axis=-1, keepdims=True)
            ctx = (probs @ v).transpose(1, 0, 2).reshape(n, n_heads * d)
            x = _layer_norm(dense(ctx, "attention.output.dense") + x,
                            w[p + "attention.output.LayerNorm.weight"], w[p + "attention.output.LayerNorm.bias"], eps)
            h = dense(_gelu(dense(x, "intermediate.dense")), "output.dense")
            x = _layer_norm(h + x, w[p + "output.LayerNorm.weight"], w[p + "output.LayerNorm.bias"], eps)
        pooled = x.mean(axis=0)
        return pooled / np.linalg.norm(pooled)

    def embed(self, text: str) -> np.ndarray:
        return self.forward(self.tokenizer.encode(text))
