"""The question side of dense search, fine-tuned: MiniLM's encoder with its top layers trained on the suite's questions.

The index's chunk vectors are MiniLM's (llama.cpp computes them); only the question's vector changes. Training
(`python -m benchmarks.realdocs train-query-tower`, PyTorch) moved the top TRAINED_FROM.. layers so that a question
lands nearer the chunks that hold its answer, with every chunk of its package as the softmax's other choices. So
no index is re-embedded, and a question costs one small forward pass here in numpy.

The tuned layers live in the project's one weights file, `models/reranker.safetensors`, under the `query_tower.`
prefix beside the cross-encoder's tensors; the word table, the embeddings and the lower layers are read from the
installed MiniLM package (their sha256 is checked, as the reranker's is).

A second set of tuned top layers, under `quote_tower.`, is the question side of the quote scorer
(rag.answering.extractive): `python -m benchmarks.realdocs train-quote-tower` trained it so that, added to the
quote scorer's score, a question's cosine with each shown sentence (under its heading path, MiniLM's vector) picks
the sentence that holds the evidence. It is attached as `quote_encoder`, beside `query_encoder`.
"""

from __future__ import annotations

import functools
import os
import threading
import zipfile
from pathlib import Path
from typing import Callable, Mapping, Sequence

import numpy as np

from models.errors import ModelNotFound
from models.paths import cache_dir
from models.reranker import RERANKER_FILE, Layer, _encode, _f32, _layer, layer_norm, read_reranker
from models.safetensors import read_safetensors

PREFIX = "query_tower."
QUOTE_PREFIX = "quote_tower."  # the quote scorer's question encoder
MAX_QUESTION_TOKENS = 512  # as the embedder cuts its inputs (models.llama_cpp.embedder.MAX_TOKENS); [SEP] kept


class QueryTower:
    """A question's unit vector from MiniLM with the tuned top layers, in MiniLM's own space (mean pooling)."""

    def __init__(self, minilm: Mapping[str, np.ndarray], tuned: Mapping[str, np.ndarray],
                 tokenize: Callable[[str], list[int]], prefix: str = PREFIX) -> None:
        mine = {k[len(prefix):]: v for k, v in tuned.items() if k.startswith(prefix)}
        trained = sorted({int(k.split(".")[2]) for k in mine if k.startswith("encoder.layer.")})
        depth = len({k.split(".")[2] for k in minilm if k.startswith("encoder.layer.")})
        if not trained or trained[-1] != depth - 1 or trained != list(range(trained[0], depth)):
            command = "train-quote-tower" if prefix == QUOTE_PREFIX else "train-query-tower"
            raise ModelNotFound(f"the weights file holds no tuned question layers: rebuild it with {command}")
        self.trained_from = trained[0]
        self.layers = [_minilm_layer(minilm, i) for i in range(self.trained_from)] + [_layer(mine, i) for i in trained]
        self.words = minilm["embeddings.word_embeddings.weight"]  # float16: only a question's rows are widened
        self.positions = _f32(minilm["embeddings.position_embeddings.weight"])
        self.types = _f32(minilm["embeddings.token_type_embeddings.weight"])
        self.ln = (_f32(minilm["embeddings.LayerNorm.weight"]), _f32(minilm["embeddings.LayerNorm.bias"]))
        self._tokenize = tokenize

    def encode(self, questions: Sequence[str]) -> np.ndarray:
        """One L2-normalized float32 row per question."""
        return np.stack([self.forward(self.ids(q)) for q in questions]) if questions else np.zeros((0, 384), np.float32)

    def ids(self, question: str) -> list[int]:
        ids = self._tokenize(question)
        return ids if len(ids) <= MAX_QUESTION_TOKENS else ids[: MAX_QUESTION_TOKENS - 1] + ids[-1:]

    def forward(self, ids: Sequence[int]) -> np.ndarray:
        n = len(ids)
        x = self.words[np.asarray(ids)][None].astype(np.float32) + self.positions[:n] + self.types[0]
        x = layer_norm(x, *self.ln)
        bias = np.zeros((1, 1, 1, n), dtype=np.float32)
        for layer in self.layers:
            x = _encode(x, layer, bias)
        v = x[0].mean(0)
        return (v / max(float(np.linalg.norm(v)), 1e-12)).astype(np.float32)


def _minilm_layer(minilm: Mapping[str, np.ndarray], i: int) -> Layer:
    """MiniLM's own layer i, widened once a process for every encoder over the same tensors (search's and quotes')."""
    key = (id(minilm), i)
    kept = _MINILM_LAYERS.get(key)
    if kept is None or kept[0] is not minilm:
        kept = _MINILM_LAYERS[key] = (minilm, _layer(minilm, i))
    return kept[1]


_MINILM_LAYERS: dict[tuple[int, int], tuple[Mapping[str, np.ndarray], Layer]] = {}


@functools.lru_cache(maxsize=2)
def minilm_weights(zip_path: Path) -> dict[str, np.ndarray]:
    """Every float tensor of the installed MiniLM, as float16 (what llama.cpp embeds with too).

    The package ships them deflated (0.5 s to read, 90 MB at once), so the first use keeps an uncompressed float16
    copy in the cache, named by the zip's sha256, and later processes read that (45 MB). Read once a process: the
    search and quote encoders share the lower layers' tensors (callers must not change them)."""
    from models.llama_cpp.bert_gguf import source_sha256

    try:
        cached = cache_dir() / "models" / f"minilm-f16-{source_sha256(zip_path)[:16]}.npz"
    except OSError as exc:
        raise ModelNotFound(f"cannot read {zip_path}: {exc}") from None
    try:
        with np.load(cached) as stored:
            return {k: stored[k] for k in stored.files}
    except (OSError, ValueError, zipfile.BadZipFile, EOFError):
        pass  # not there yet, or damaged: made again from the package
    try:
        with zipfile.ZipFile(zip_path) as zf:
            raw = read_safetensors(zf.read("model.safetensors"), f"{zip_path}!model.safetensors")
    except (OSError, KeyError, ValueError, zipfile.BadZipFile) as exc:
        raise ModelNotFound(f"{zip_path} is not a usable MiniLM archive ({exc})") from None
    weights = {k: np.asarray(v, dtype=np.float16) for k, v in raw.items() if np.issubdtype(v.dtype, np.floating)}
    try:
        cached.parent.mkdir(parents=True, exist_ok=True)
        tmp = cached.with_name(f"{cached.name}.{os.getpid()}.tmp")
        with open(tmp, "wb") as f:
            np.savez(f, **weights)  # type: ignore[arg-type]  # numpy's stub types **kwds as its allow_pickle flag
        tmp.replace(cached)
    except OSError:
        pass  # a read-only cache: read from the package every time
    return weights


def has_query_tower(path: Path = RERANKER_FILE, prefix: str = PREFIX) -> bool:
    """Whether the weights file holds tuned question layers under `prefix` (a missing or damaged file holds none)."""
    try:
        weights, _ = read_reranker(path, only=prefix)
    except ModelNotFound:
        return False
    return bool(weights)


def load_query_tower(tokenize: Callable[[str], list[int]], path: Path = RERANKER_FILE,
                     zip_path: Path | None = None, prefix: str = PREFIX) -> QueryTower:
    """The tuned question encoder over the installed MiniLM; refused when it was trained on another MiniLM."""
    from models.llama_cpp.bert_gguf import minilm_zip, source_sha256

    tuned, meta = read_reranker(path, only=prefix)  # the other models' tensors stay as stored, unread
    zip_path = zip_path or minilm_zip()
    trained_on = meta.get(prefix + "minilm_sha256", "")
    if trained_on and trained_on != source_sha256(zip_path):
        raise ModelNotFound(f"the question encoder was trained on another MiniLM ({trained_on[:10]}): run with --queries base")
    return QueryTower(minilm_weights(zip_path), tuned, tokenize, prefix)


class TunedQueries:
    """A question encoder to attach to an in-process MiniLM embedder (`embedder.query_encoder`): the tuned layers
    under `prefix`, loaded on the first question; MiniLM's own vector when the weights file has none or was trained
    on another MiniLM. `or_base=False` (the quote encoder): None then, so the quote scorer goes without."""

    def __init__(self, embedder, path: Path = RERANKER_FILE, prefix: str = PREFIX, or_base: bool = True) -> None:
        self._embedder, self._path, self._prefix, self._or_base = embedder, path, prefix, or_base
        self._lock = threading.Lock()
        self._tower: QueryTower | None = None
        self._tried = False

    def tower(self) -> QueryTower | None:
        with self._lock:
            if not self._tried:
                self._tried = True
                try:
                    self._tower = load_query_tower(self._embedder.tokenize, self._path, prefix=self._prefix)
                except ModelNotFound:  # no such layers in the file, a damaged file, or another MiniLM
                    self._tower = None
            return self._tower

    def __call__(self, question: str) -> np.ndarray | None:
        tower = self.tower()
        if tower is not None:
            return tower.encode([question])[0]
        return self._embedder.embed([question])[0] if self._or_base else None


def attach_tuned_queries(embedder, tuned: bool = True) -> None:
    """Give an in-process MiniLM embedder the tuned question encoders (tuned: search's `query_encoder` and the quote
    scorer's `quote_encoder`) or take them away; one pair per embedder, so a new session does not read the file
    again. Any other embedder (a server's, none) keeps its own vectors, and quotes go without."""
    from models.llama_cpp.embedder import LlamaEmbedder

    if not isinstance(embedder, LlamaEmbedder):
        return
    if not tuned:
        embedder.query_encoder = embedder.quote_encoder = None
    elif not isinstance(embedder.query_encoder, TunedQueries) or not isinstance(embedder.quote_encoder, TunedQueries):
        _, search, quotes = _ATTACHED.setdefault(
            id(embedder), (embedder, TunedQueries(embedder), TunedQueries(embedder, prefix=QUOTE_PREFIX, or_base=False)))
        embedder.query_encoder, embedder.quote_encoder = search, quotes


_ATTACHED: dict[int, tuple[object, TunedQueries, TunedQueries]] = {}
