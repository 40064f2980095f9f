"""Fakes that pin exact behaviour in unit tests: a word tokenizer, a scripted chat model, a hashing embedder.

Every capability is also tested against the real components; these only make unit tests exact and fast.
"""

from __future__ import annotations

import hashlib
import re
import time
from typing import Iterator, Sequence

import numpy as np

from benchmarks.word_tokenizer import WordTokenizer
from models.protocols import CancelFlag, GenerationOptions, GenerationStats, Message

__all__ = ["CountingEmbedder", "HashEmbedder", "ScriptedChatModel", "WordTokenizer"]


class ScriptedChatModel:
    """Replies with enqueued texts, one per call, streamed word by word. Records every prompt it saw."""

    def __init__(self, replies: Sequence[str] = (), n_ctx: int = 2048, tokenizer=None, delay: float = 0.0) -> None:
        self.name = "scripted"
        self.n_ctx = n_ctx
        self.n_params: int | None = None
        self.supports_grammar = True  # options are recorded (tests read them), never enforced
        self.supports_guard = True
        self.tokenizer = tokenizer or WordTokenizer()
        self.last_stats = GenerationStats()
        self.calls: list[list[Message]] = []
        self.options: list[GenerationOptions] = []
        self._replies: list[str] = list(replies)
        self._delay = delay

    def enqueue(self, replies: Sequence[str]) -> "ScriptedChatModel":
        self._replies.extend(replies)
        return self

    def cache_prefix(self, messages: Sequence[Message]) -> None:
        return None  # nothing to keep: a scripted model has no KV state

    def stream(
        self,
        messages: Sequence[Message],
        options: GenerationOptions = GenerationOptions(),
        cancel: CancelFlag | None = None,
    ) -> Iterator[str]:
        self.calls.append([dict(m) for m in messages])
        self.options.append(options)
        prompt_tokens = self.tokenizer.count_chat(messages)
        if prompt_tokens > self.n_ctx:
            raise ValueError(f"Requested tokens ({prompt_tokens}) exceed context window of {self.n_ctx}")
        if not self._replies:
            raise AssertionError("ScriptedChatModel: no reply enqueued for this call")
        reply = self._replies.pop(0)
        stats = GenerationStats(prompt_tokens=prompt_tokens)
        start = time.perf_counter()
        pieces = re.findall(r"\S+\s*|\s+", reply)
        finish = "stop"
        for i, piece in enumerate(pieces):
            if i >= options.max_tokens:
                finish = "length"
                break
            if cancel is not None and cancel.cancelled:
                finish = "cancelled"
                break
            if self._delay:
                time.sleep(self._delay)
            if i == 0:
                stats.time_to_first_token = time.perf_counter() - start
            stats.completion_tokens += 1
            yield piece
        stats.total_time = time.perf_counter() - start
        stats.finish_reason = finish
        self.last_stats = stats


class HashEmbedder:
    """Bag-of-words hashed into `dim` buckets, L2-normalized: texts sharing words are near."""

    def __init__(self, dim: int = 64) -> None:
        self.dim = dim
        self.model_id = f"hash-{dim}"

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for row, text in enumerate(texts):
            for word in re.findall(r"\w+", text.lower()):
                bucket = int(hashlib.blake2b(word.encode(), digest_size=4).hexdigest(), 16) % self.dim
                out[row, bucket] += 1.0
            norm = np.linalg.norm(out[row])
            if norm > 0:
                out[row] /= norm
        return out


class CountingEmbedder(HashEmbedder):
    """A hash embedder that records every text it embeds and how many calls it took."""

    def __init__(self, dim: int = 64, model_id: str | None = None) -> None:
        super().__init__(dim)
        if model_id is not None:
            self.model_id = model_id  # its own key in a vector cache
        self.seen: list[str] = []
        self.calls = 0

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        self.calls += 1
        self.seen.extend(texts)
        return super().embed(texts)
