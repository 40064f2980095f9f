"""Embeddings from a server: the Embedder protocol over an OpenAI-compatible `/v1/embeddings` endpoint.

llama-server `--embedding`, llama-cpp-python's server, vLLM, Ollama and Text Embeddings Inference all speak it; the
official `openai` SDK does the talking, with its retries (connection errors, 429 and 5xx, backing off) and timeouts.
Texts go in batches; rows come back L2-normalized float32, whatever the server does. The model id is the served
model's name, so a store or index made with another embedder is refused rather than mixed.
"""

from __future__ import annotations

from typing import Sequence

import httpx2 as httpx
import numpy as np
import openai

from models.errors import ServerRefused, ServerUnreachable
from models.redaction import redact_url, scrub
from models.openai_server.server_api import NO_KEY

BATCH = 32  # texts per request: ~200-token chunks, so a request stays well under the servers' usual 8k-token cap
RETRIES = 3  # the SDK's own retries of connection errors, 408, 429 and 5xx, with exponential backoff
TIMEOUT = 60.0  # seconds for one request: a batch of 32 chunks took ~2 s on 2 cores (llama-cpp-python, MiniLM)
CONNECT_TIMEOUT = 5.0


class ServerEmbedder:
    """Embedder protocol over `base_url`'s /v1/embeddings; `model` None: the only model the server lists."""

    def __init__(self, base_url: str, model: str | None = None, api_key: str | None = None, batch: int = BATCH,
                 retries: int = RETRIES, timeout: float = TIMEOUT) -> None:
        self.base_url = base_url
        self.shown_url = redact_url(base_url)  # what messages show: never the URL's password or key parameters
        self._width: int | None = None  # the row width every reply must have: unknown until the first one
        self.batch = max(1, batch)
        self.timeout = timeout
        self.client = openai.OpenAI(base_url=base_url, api_key=api_key or NO_KEY, max_retries=retries,
                                    timeout=httpx.Timeout(timeout, connect=CONNECT_TIMEOUT))
        self.model = model or self._only_model()
        self.model_id = self.model
        self.dim = self._width = int(self._call(["dimension"]).shape[1])

    def _only_model(self) -> str:
        try:
            served = [m.id for m in self.client.models.list().data]
        except openai.OpenAIError as exc:
            raise self._explain(exc, model=None) from None  # no model chosen yet
        if len(served) != 1:
            names = ", ".join(served) or "none"
            raise ServerRefused(f"the embeddings server at {self.shown_url} serves {scrub(names, self.base_url)}: "
                                "name one with --embed-model")
        return served[0]

    def _call(self, texts: list[str]) -> np.ndarray:
        try:
            reply = self.client.embeddings.create(model=self.model, input=texts, encoding_format="float")
        except openai.OpenAIError as exc:
            raise self._explain(exc, self.model) from None
        return self._matrix(reply.data, len(texts))

    def _matrix(self, data, n_texts: int) -> np.ndarray:
        """The reply's rows, L2-normalized: one line when they are not n_texts rows of `dim` finite numbers (a NaN
        row stored in an index would never be found again)."""
        rows = sorted(data, key=lambda item: item.index)
        if len(rows) != n_texts:
            raise ServerRefused(f"the embeddings server at {self.shown_url} returned {len(rows)} rows for "
                                f"{n_texts} texts: check that it serves an embedding model")
        not_numbers = ServerRefused(f"the embeddings server at {self.shown_url} returned an embedding that is not a "
                                    "list of numbers: check that it speaks the OpenAI embeddings API")
        if not all(isinstance(row.embedding, list) and row.embedding for row in rows):
            raise not_numbers
        width = self._width if self._width is not None else len(rows[0].embedding)
        for row in rows:
            if len(row.embedding) != width:
                raise ServerRefused(f"the embeddings server at {self.shown_url} returned a row of {len(row.embedding)} "
                                    f"numbers, not {width}: was its model changed? Check --embed-model")
        try:
            with np.errstate(over="ignore"):  # 1e39 becomes inf in float32: refused just below
                matrix = np.asarray([[np.nan if v is None else v for v in row.embedding] for row in rows], dtype=np.float32)
        except (TypeError, ValueError):  # "abc" or [1] among the numbers
            raise not_numbers from None
        bad = ~np.isfinite(matrix).all(axis=1)
        if bad.any():
            raise ServerRefused(f"the embeddings server at {self.shown_url} returned a vector with a value that is not "
                                f"a finite number (text {int(np.argmax(bad)) + 1} of {n_texts}): check the server and its "
                                "model; nothing was stored")
        norms = np.linalg.norm(matrix, axis=1, keepdims=True)
        return matrix / np.where(norms > 0, norms, 1.0)

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """One L2-normalized float32 row per text, in order."""
        texts = list(texts)
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        parts = [self._call(texts[lo : lo + self.batch]) for lo in range(0, len(texts), self.batch)]
        return np.vstack(parts)

    def close(self) -> None:
        self.client.close()

    def _explain(self, exc: BaseException, model: str | None) -> Exception:
        """One line for a failed request, naming the server, the `model` asked for and what to do (the key is
        never shown)."""
        url = self.shown_url
        if isinstance(exc, openai.APIStatusError):
            detail = scrub(str(exc.message), self.base_url)[:160]
            if exc.status_code in (401, 403):
                return ServerRefused(f"the embeddings server at {url} refused the API key (HTTP {exc.status_code}): "
                                     "set SMOLDOCS_EMBED_API_KEY to a key it accepts")
            if exc.status_code == 404:
                return ServerRefused(f"the embeddings server at {url} has no model {model!r} "
                                     "or no /embeddings endpoint (HTTP 404): check --embed-model and that the URL ends in /v1")
            return ServerRefused(f"the embeddings server at {url} failed (HTTP {exc.status_code}: {detail})")
        if isinstance(exc, openai.APITimeoutError):
            return ServerUnreachable(f"the embeddings server at {url} did not answer within {self.timeout:g} s: "
                                     "check that it is running and not overloaded")
        cause = exc.__cause__ or exc
        reason = "connection refused" if "refused" in str(cause).lower() else (scrub(str(cause), self.base_url)[:120]
                                                                              or type(cause).__name__)
        return ServerUnreachable(f"cannot reach the embeddings server at {url} ({reason}): start it, or fix --embed-url")
