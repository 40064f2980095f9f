"""Errors of the models package: each is one line a user can act on."""

from __future__ import annotations


class ModelError(Exception):
    """A model cannot be used; the message names the path and the fix."""


class ModelNotFound(ModelError):
    """The model file is missing or unreadable."""


class EmbedderNotInstalled(ModelNotFound):
    """The MiniLM package is not installed: search runs on BM25 alone until it is."""


class NotGGUF(ModelError):
    """The file exists but is not a GGUF model."""


class ContextTooSmall(ModelError):
    """The model cannot hold the context window we need."""


class ModelLoadFailed(ModelError):
    """llama.cpp refused to load the file."""


class GenerationError(ModelError):
    """llama.cpp failed while generating."""


class BadSetting(ModelError):
    """An environment setting for the models cannot be used."""


class ServerError(ModelError):
    """A model server could not be used; the message names the URL and the fix."""


class ServerUnreachable(ServerError):
    """Nothing answers at the base URL (refused, down, wrong address) or it timed out."""


class ServerRefused(ServerError):
    """The server answered with an error status: a bad key (401/403), an unknown model (404), a failure (5xx)."""


class ServerInterrupted(ServerError):
    """The server failed after the answer had started streaming; what streamed is kept."""


class CountMismatch(ServerError):
    """Our count of a prompt differs from the server's: counts would not be exact, so we refuse."""


class NoTokenizer(ServerError):
    """Neither --tokenizer nor the server gives the model's tokenizer and chat template."""
