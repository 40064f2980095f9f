"""Typed model settings, turned into explicit llama_cpp.Llama arguments (its **kwargs swallows typos)."""

from __future__ import annotations

import os
from dataclasses import dataclass, replace
from pathlib import Path

from models.errors import BadSetting

DEFAULT_N_CTX = 2048


SMALL_MODEL_BYTES = 200 * 1024 * 1024  # below this, one thread decodes fastest (measured: SmolLM2-135M Q4_1, 98 MB)


def default_threads() -> int:
    """Threads for prompt evaluation (and embedding): one per core, up to 8."""
    return max(1, min(os.cpu_count() or 1, 8))


def decode_threads(path: Path) -> int:
    """Threads for generating one token at a time: `SMOLDOCS_THREADS` if set, else 1 for a small model file.

    A 98 MB model's per-token work is too small to split: on 2 cores, 2 decode threads gave 31-36 tok/s and
    1 thread 56-62 tok/s (quiet machine, 100 tokens after a 900-token prompt). Bigger models keep one per core.
    """
    raw = os.environ.get("SMOLDOCS_THREADS", "").strip()
    if raw:
        try:
            threads = int(raw)
        except ValueError:
            threads = 0
        if threads < 1:
            raise BadSetting(f"SMOLDOCS_THREADS={raw!r} is not a positive whole number: set it like SMOLDOCS_THREADS=2")
        return threads
    try:
        small = path.stat().st_size < SMALL_MODEL_BYTES
    except OSError:
        small = False
    return 1 if small else default_threads()


@dataclass(frozen=True)
class ModelConfig:
    path: Path
    n_ctx: int = DEFAULT_N_CTX
    n_threads: int = 0  # decoding one token at a time; 0: decode_threads(path)
    n_threads_batch: int = 0  # prompt evaluation; 0: one per core, up to 8
    n_batch: int = 512
    seed: int = 0
    verbose: bool = False

    def with_(self, **changes) -> "ModelConfig":
        return replace(self, **changes)

    def llama_kwargs(self) -> dict:
        """Every argument we pass to Llama(...), by name, so a rename in llama_cpp fails loudly."""
        threads = self.n_threads or decode_threads(self.path)
        return dict(
            model_path=str(self.path),
            n_ctx=self.n_ctx,
            n_batch=min(self.n_batch, self.n_ctx),
            n_threads=threads,
            n_threads_batch=self.n_threads_batch or default_threads(),
            seed=self.seed,
            verbose=self.verbose,
        )
