"""Typed model settings, turned into explicit llama_cpp.Llama arguments (its **kwargs swallows typos)."""

from __future__ import annotations

import os
from dataclasses import dataclass, replace
from pathlib import Path

DEFAULT_N_CTX = 2048


def default_threads() -> int:
    return max(1, min(os.cpu_count() or 1, 8))


@dataclass(frozen=True)
class ModelConfig:
    path: Path
    n_ctx: int = DEFAULT_N_CTX
    n_threads: int = 0  # 0: one per core, up to 8
    n_batch: int = 512
    seed: int = 0
    verbose: bool = False

    def with_(self, **changes) -> "ModelConfig":
        return replace(self, **changes)

    def llama_kwargs(self) -> dict:
        """Every argument we pass to Llama(...), by name, so a rename in llama_cpp fails loudly."""
        threads = self.n_threads or default_threads()
        return dict(
            model_path=str(self.path),
            n_ctx=self.n_ctx,
            n_batch=min(self.n_batch, self.n_ctx),
            n_threads=threads,
            n_threads_batch=threads,
            seed=self.seed,
            verbose=self.verbose,
        )
