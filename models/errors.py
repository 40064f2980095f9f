"""Errors of the models package: each is one line a user can act on."""

from __future__ import annotations


class ModelError(Exception):
    """A model cannot be used; the message names the path and the fix."""


class ModelNotFound(ModelError):
    """The model file is missing or unreadable."""


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
