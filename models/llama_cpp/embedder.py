"""Sentence embeddings from all-MiniLM-L6-v2 run by llama.cpp, in their own Llama instance."""

from __future__ import annotations

import atexit
import re
import threading
from pathlib import Path
from typing import Callable, Sequence

import numpy as np

from models.llama_cpp.bert_gguf import CONVERTER_VERSION, MINILM_NAME, CachedGGUF, ensure_minilm_gguf
from models.config import ModelConfig, default_threads
from models.errors import EmbedderNotInstalled, GenerationError, ModelLoadFailed

MAX_TOKENS = 512  # MiniLM's position table; [CLS] and [SEP] included
# Both chosen by benchmarks/embedding.py: decodes of 1024/2048 tokens were slower (attention spans every
# sequence in the batch). Texts per llama call do not matter for ~200-token chunks (two fill a decode); for
# short queries 32 per call is ~2x one per call, and the cap bounds how long a query waits behind indexing.
DEFAULT_BATCH_TOKENS = 512  # tokens per llama.cpp decode
TEXTS_PER_CALL = 32
# A group this small (a search query) runs on one thread: waking a second, passively waiting thread for each of
# the graph's steps cost more than it saved (8-token query: 8.1-8.7 ms on 2 threads, 5.1-5.5 ms on 1).
FEW_TOKENS = 64
_WORD = re.compile(r"\S+")


class LlamaEmbedder:
    """Embedder protocol over a llama.cpp BERT GGUF: float32 rows, L2-normalized, inputs cut at 512 tokens."""

    def __init__(
        self,
        gguf_path: Path,
        model_id: str,
        batch_tokens: int = DEFAULT_BATCH_TOKENS,
        n_threads: int = 0,
        texts_per_call: int = TEXTS_PER_CALL,
    ) -> None:
        import llama_cpp

        from models.cpu import use_safe_weight_buffers

        use_safe_weight_buffers()
        if batch_tokens < MAX_TOKENS:
            raise ValueError(f"batch_tokens must be >= {MAX_TOKENS} so a whole input fits one decode")
        # n_ctx bounds the tokens of one decode; a non-causal model needs n_ubatch to hold the whole batch.
        threads = n_threads or default_threads()  # every embed call is a batch: all cores help
        config = ModelConfig(
            path=gguf_path, n_ctx=batch_tokens, n_batch=batch_tokens, n_threads=threads, n_threads_batch=threads
        )
        try:
            self._llm = llama_cpp.Llama(
                **config.llama_kwargs(), n_ubatch=batch_tokens, embedding=True, flash_attn=True
            )
        except (ValueError, RuntimeError) as exc:
            raise ModelLoadFailed(
                f"llama.cpp could not load the embedding model {gguf_path} ({exc}): delete that file to rebuild it"
            ) from None
        self.model_id = model_id
        self.dim = int(self._llm.n_embd())
        self.max_tokens = MAX_TOKENS
        self._texts_per_call = max(1, texts_per_call)
        # embed() clears the context's memory and reuses one batch buffer: one caller at a time.
        self._lock = threading.Lock()
        self._threads = self._current_threads = threads
        # A search question's vector: this encoder's when one is attached (agent.opening attaches the tuned question
        # encoder, models.query_tower, unless the settings say `queries = "base"`), else embed()'s.
        self.query_encoder: Callable[[str], np.ndarray | None] | None = None
        # The quote scorer's question vector (models.query_tower's second tuned encoder), attached with it; None: none.
        self.quote_encoder: Callable[[str], np.ndarray | None] | None = None

    def tokenize(self, text: str) -> list[int]:
        """The ids llama.cpp embeds for `text`, [CLS] ... [SEP] included, before truncation."""
        with self._lock:
            return self._ids(text)

    def count(self, text: str) -> int:
        return len(self.tokenize(text))

    def truncate(self, text: str) -> str:
        """The longest prefix of `text` that tokenizes to at most 512 ids, cut at a word when possible."""
        with self._lock:
            return self._fit(text)

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """One L2-normalized float32 row per text; texts over 512 tokens are embedded from their first 512."""
        if isinstance(texts, str):
            raise TypeError("embed() takes a sequence of texts, not one string")
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        rows: list[list[float]] = []
        step = self._texts_per_call
        for start in range(0, len(texts), step):
            # The lock is taken per group, so a query waits for one group, not for a whole indexing run.
            with self._lock:
                fitted, counts = zip(*(self._fit_counted(t) for t in texts[start : start + step]))
                self._use_threads(1 if sum(counts) <= FEW_TOKENS else self._threads)
                try:
                    rows.extend(self._llm.embed(list(fitted), normalize=False, truncate=False))
                except (ValueError, RuntimeError) as exc:
                    raise GenerationError(f"llama.cpp failed to embed {len(fitted)} texts: {exc}") from None
        out = np.asarray(rows, dtype=np.float32).reshape(len(texts), self.dim)
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        return out / np.maximum(norms, np.float32(1e-12))

    def embed_query(self, text: str) -> np.ndarray:
        """A search question's unit vector: the attached question encoder's, else embed()'s. Documents are always
        embed()'s: the index's vectors stay MiniLM's."""
        encoder = self.query_encoder
        vector = encoder(text) if encoder is not None else None
        return vector if vector is not None else self.embed([text])[0]

    def embed_quote_query(self, text: str) -> np.ndarray | None:
        """The quote scorer's question vector (rag.answering.extractive), in the sentences' space; None when no quote
        encoder is attached: the quote scorer then goes without it."""
        encoder = self.quote_encoder
        return encoder(text) if encoder is not None else None

    def close(self) -> None:
        with self._lock:
            self._llm.close()

    def _use_threads(self, threads: int) -> None:
        if threads != self._current_threads:
            import llama_cpp

            llama_cpp.llama_set_n_threads(self._llm._ctx.ctx, threads, threads)
            self._current_threads = threads

    def _ids(self, text: str) -> list[int]:
        # The same call Llama.embed makes: [CLS] prepended, [SEP] appended, "[SEP]" in text is plain text.
        return self._llm.tokenize(text.encode("utf-8"), add_bos=True, special=False)

    def _fits(self, text: str) -> bool:
        return len(self._ids(text)) <= MAX_TOKENS

    def _fit_counted(self, text: str) -> tuple[str, int]:
        """`_fit(text)` and its token count, tokenizing a text that fits only once."""
        count = len(self._ids(text))
        if count <= MAX_TOKENS:
            return text, count
        fitted = self._fit(text)
        return fitted, len(self._ids(fitted))

    def _fit(self, text: str) -> str:
        # Llama.embed(truncate=True) would cut ids at n_batch and drop [SEP]; we cut the text instead,
        # so the model always sees a [CLS] ... [SEP] input it was trained on.
        if self._fits(text):
            return text
        spans = [m.span() for m in _WORD.finditer(text)]
        # Whole words: WordPiece splits at whitespace, so the count grows with every word added.
        words = _last_true(lambda k: k == 0 or self._fits(text[: spans[k - 1][1]]), len(spans))
        if words == len(spans):  # only trailing whitespace was over: cannot happen for WordPiece, but be safe
            return text[: spans[-1][1]] if spans else ""
        start, end = spans[words]  # the first word that does not fit whole
        chars = _last_true(lambda j: self._fits(text[: start + j]), end - start)
        return text[: start + chars].rstrip()


def _last_true(ok, upper: int) -> int:
    """Largest k in [0, upper] with ok(k), given ok(0); a binary search that never returns a failing k."""
    lo, hi = 0, upper
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if ok(mid):
            lo = mid
        else:
            hi = mid - 1
    return lo


_LOADED: dict[tuple[int, str], LlamaEmbedder] = {}
_LOAD_LOCK = threading.Lock()


def load_embedder(batch_tokens: int = DEFAULT_BATCH_TOKENS, quant: str = "f16") -> LlamaEmbedder:
    """The MiniLM embedder, converting the packaged model on first use; one instance per process and setting."""
    with _LOAD_LOCK:
        if not _LOADED:
            atexit.register(_close_loaded)
        key = (batch_tokens, quant)
        if key not in _LOADED:
            cached = ensure_minilm_gguf(quant=quant)
            _LOADED[key] = LlamaEmbedder(cached.path, minilm_model_id(cached, quant), batch_tokens=batch_tokens)
        return _LOADED[key]


def optional_embedder(batch_tokens: int = DEFAULT_BATCH_TOKENS) -> LlamaEmbedder | None:
    """The MiniLM embedder, or None when its package is not installed (then search runs on BM25 alone).

    A package that is installed but broken still raises: that is a fault to fix, not a choice.
    """
    try:
        return load_embedder(batch_tokens)
    except EmbedderNotInstalled:
        return None


def _close_loaded() -> None:
    # Freed here, while llama_cpp is still intact: Llama.__del__ at interpreter teardown prints a TypeError.
    for embedder in list(_LOADED.values()):
        embedder.close()
    _LOADED.clear()


def minilm_model_id(cached: CachedGGUF, quant: str = "f16") -> str:
    """Names the model and its conversion, so indexes built from another conversion are not mixed in."""
    return f"{MINILM_NAME}-{quant}-c{CONVERTER_VERSION}-{cached.short_hash}"
