"""The KV state of a fixed prompt prefix (the system rules) on disk, so a cold start loads it instead of
evaluating it. Keyed by the model file, llama.cpp's version, the context size and the prefix's token ids.

Exactly equivalent: with or without the file the prefix is evaluated on its own first and the rest of the prompt
after it, so the logits of the first answer token are the same bit for bit (tests/test_prefix_cache.py).
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import tempfile
from pathlib import Path
from typing import Sequence

import numpy as np

FORMAT = "smoldocs-kv-1"


def prefix_key(model_path: Path, n_ctx: int, tokens: Sequence[int]) -> str:
    """A name that changes whenever the saved state could differ: model file, llama.cpp build, n_ctx, tokens."""
    import llama_cpp

    stat = Path(model_path).stat()
    h = hashlib.sha256()
    for part in (FORMAT, Path(model_path).resolve(), stat.st_size, stat.st_mtime_ns, llama_cpp.__version__, n_ctx):
        h.update(str(part).encode() + b"\0")
    h.update(np.asarray(tokens, dtype=np.int32).tobytes())
    return h.hexdigest()[:32]


class PrefixCache:
    """Keeps `llm`'s KV cache starting with a prefix: kept from the last call, loaded from disk, or evaluated
    (and then saved for the next process)."""

    def __init__(self, llm, model_path: Path, directory: Path) -> None:
        self.llm = llm
        self.model_path = Path(model_path)
        self.directory = Path(directory)

    def path(self, tokens: Sequence[int]) -> Path:
        return self.directory / f"{prefix_key(self.model_path, self.llm.n_ctx(), tokens)}.npz"

    def holds(self, tokens: Sequence[int]) -> bool:
        n = len(tokens)
        return self.llm.n_tokens >= n and bool(np.array_equal(self.llm.input_ids[:n], np.asarray(tokens)))

    def ensure(self, tokens: Sequence[int]) -> str:
        """Make the KV cache start with `tokens`; returns "kept", "loaded" or "saved"."""
        if self.holds(tokens):
            return "kept"
        path = self.path(tokens)
        if path.exists():
            try:
                self._load(path, tokens)
                return "loaded"
            # Damaged (truncated, emptied, bits flipped: zip's CRC-32 catches those in the arrays) or from another
            # build: whatever reading it raises (BadZipFile, EOFError, ValueError...), it is a miss, evaluated and saved again.
            except Exception:
                with contextlib.suppress(OSError):  # a folder in its place: left alone, and saving over it fails quietly
                    path.unlink(missing_ok=True)
        self.llm.reset()
        self.llm.eval(list(tokens))
        try:
            self._save(path, tokens)
        except OSError:
            pass  # a read-only cache only costs the next cold start its prompt evaluation
        return "saved"

    def _save(self, path: Path, tokens: Sequence[int]) -> None:
        state = self.llm.save_state()
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, suffix=".tmp")
        try:
            with os.fdopen(fd, "wb") as f:
                np.savez(f, tokens=np.asarray(tokens, dtype=np.int32), seed=np.int64(state.seed),
                         state=np.frombuffer(state.llama_state, dtype=np.uint8))
            os.replace(tmp, path)  # never a half-written state
        finally:
            if os.path.exists(tmp):
                os.unlink(tmp)

    def _load(self, path: Path, tokens: Sequence[int]) -> None:
        from llama_cpp.llama import LlamaState

        with np.load(path, allow_pickle=False) as data:
            saved, seed, blob = data["tokens"], int(data["seed"]), data["state"].tobytes()
        if not np.array_equal(saved, np.asarray(tokens, dtype=np.int32)):
            raise ValueError("the saved prefix has other tokens")
        n = len(tokens)
        input_ids = np.zeros(self.llm.n_ctx(), dtype=np.intc)
        input_ids[:n] = saved
        # The logits of the prefix are never read: the rest of the prompt is evaluated before sampling.
        scores = np.zeros((min(n, self.llm.scores.shape[0]), self.llm.n_vocab()), dtype=np.single)
        self.llm.load_state(LlamaState(input_ids, scores, n, blob, len(blob), seed))
