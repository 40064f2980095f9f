"""Errors of the rag package: each is one line a user can act on."""

from __future__ import annotations


class RagError(Exception):
    """Base of every rag error."""


class DocsNotFound(RagError):
    """The docs folder is missing or holds no readable text."""


class IndexCorrupt(RagError):
    """A stored index cannot be read; callers rebuild it."""


class IndexNotSaved(RagError):
    """The index was built but could not be written; the previous one is left as it was."""


class IndexDirNotFolder(RagError):
    """The index location (--index) or a folder above it is a file."""


class BudgetError(RagError, ValueError):
    """A token budget that makes no sense (negative)."""


class ShownUnreadable(RagError):
    """What an agent was shown (`smoldocs check --shown`) cannot be read as excerpts or a JSON list."""


class Unreadable(RagError):
    """A file of the docs folder skipped with a short reason the index counts ("encrypted PDF", ...)."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class SemanticSearchOff(RagError, ValueError):
    """Dense search was asked for, but the index has no embeddings (the MiniLM package is not installed)."""


class StoreUnavailable(RagError):
    """The PostgreSQL store cannot be reached, refused the login, or went away mid-query (its password never shown)."""


class StoreRefused(RagError):
    """The PostgreSQL store cannot be used as it is: no pgvector, another schema version, other index settings."""
