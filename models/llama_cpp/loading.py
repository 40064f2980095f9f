"""Opening GGUF files with llama.cpp: one place that turns its failures into clear errors."""

from __future__ import annotations

import atexit
import collections
import ctypes
import threading
import weakref
from pathlib import Path
from typing import TYPE_CHECKING

from models.config import ModelConfig
from models.errors import ContextTooSmall, ModelLoadFailed
from models.gguf_header import scalar_metadata
from models.locate import check_gguf

if TYPE_CHECKING:
    from llama_cpp import Llama

# llama.cpp takes n_ctx as a uint32 and reserves its KV cache up front: past this, no GGUF we could run was trained,
# and a typo (--n-ctx 99999999999) would otherwise allocate tens of GB before failing. Used where the GGUF does not
# say its trained context; where it does, that is the limit.
MAX_N_CTX = 1 << 20
_LOAD_LOCK = threading.Lock()  # llama.cpp backend init is not re-entrant
_RECENT_LOG: collections.deque[str] = collections.deque(maxlen=20)
_log_callback = None  # kept referenced: llama.cpp calls it from C
_OPEN: "weakref.WeakSet" = weakref.WeakSet()


@atexit.register
def _close_all() -> None:
    # Free models while llama_cpp's module globals still exist; Llama.__del__ at interpreter teardown
    # otherwise prints "Exception ignored in Llama.__del__" on every exit.
    for llm in list(_OPEN):
        try:
            llm.close()
        except Exception:
            pass


def _quiet_llama_logs() -> None:
    """Keep llama.cpp's log lines off the user's terminal, but remember the last ones for error messages."""
    global _log_callback
    if _log_callback is not None:
        return
    import llama_cpp

    @llama_cpp.llama_log_callback
    def remember(level: int, text: bytes, user_data) -> None:
        if level in (2, 3):  # warnings and errors
            _RECENT_LOG.append(text.decode("utf-8", errors="replace").strip())

    _log_callback = remember
    llama_cpp.llama_log_set(remember, ctypes.c_void_p(0))


def open_llama(config: ModelConfig, *, vocab_only: bool = False, embedding: bool = False, **extra):
    """A llama_cpp.Llama for `config`, or a one-line ModelError naming the path and the fix."""
    from llama_cpp import Llama

    from models.cpu import use_safe_weight_buffers

    check_gguf(Path(config.path))
    if not vocab_only and not embedding:
        check_requested_context(config)
    use_safe_weight_buffers()
    if not config.verbose:
        _quiet_llama_logs()
    _RECENT_LOG.clear()
    kwargs = config.llama_kwargs()
    kwargs.update(vocab_only=vocab_only, embedding=embedding, **extra)
    try:
        with _LOAD_LOCK:
            llm = Llama(**kwargs)
        _OPEN.add(llm)
    except (ValueError, RuntimeError, OSError) as exc:
        detail = "; ".join(line for line in _RECENT_LOG if line)[-300:] or str(exc)
        raise ModelLoadFailed(
            f"llama.cpp could not load {config.path} ({detail}): check that it is a complete GGUF chat model "
            "supported by this llama-cpp-python, or pass another one with --model"
        ) from None
    if not vocab_only and not embedding:
        check_context(llm, config)
    return llm


def trained_context(metadata: dict) -> int | None:
    """The context length the model was trained for, from GGUF metadata."""
    arch = metadata.get("general.architecture", "")
    value = metadata.get(f"{arch}.context_length")
    try:
        return int(value) if value is not None else None
    except (TypeError, ValueError):
        return None


def gguf_trained_context(path: Path) -> int | None:
    """The trained context length from the GGUF's header, read without loading the model; None when it does not say."""
    found = scalar_metadata(
        path,
        keep=lambda key: key == "general.architecture" or key.endswith(".context_length"),
        enough=lambda found: f"{found.get('general.architecture')}.context_length" in found,
    )
    return trained_context(found)


def check_requested_context(config: ModelConfig) -> None:
    """Refuse an n_ctx beyond the model's trained context (or MAX_N_CTX) before llama.cpp allocates a KV cache for it."""
    trained = gguf_trained_context(Path(config.path))
    if trained is not None and config.n_ctx > trained:
        raise ContextTooSmall(
            f"model {config.path} holds only {trained} tokens of context (its GGUF metadata), not the {config.n_ctx} "
            f"asked for: pass --n-ctx {trained} or less, or a model with a larger context window with --model"
        )
    if config.n_ctx > MAX_N_CTX:
        raise ContextTooSmall(f"--n-ctx {config.n_ctx} is more than any model holds: smoldocs takes at most "
                              f"{MAX_N_CTX} tokens of context; pass a smaller --n-ctx")


def check_context(llm: Llama, config: ModelConfig) -> None:
    """Refuse a model whose window cannot hold the n_ctx tokens every budget assumes."""
    trained = trained_context(llm.metadata or {})  # Llama sets it always: {} when the GGUF's could not be read
    if (trained is not None and trained < config.n_ctx) or llm.n_ctx() < config.n_ctx:
        limit = trained if trained is not None and trained < config.n_ctx else llm.n_ctx()
        raise ContextTooSmall(
            f"model {config.path} holds only {limit} tokens of context, smoldocs needs {config.n_ctx}: "
            "pass a model with a larger context window with --model"
        )
