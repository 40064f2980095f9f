"""Errors of the agent package."""

from __future__ import annotations


class AgentError(Exception):
    """Base of every agent error; its message is one line a user can act on."""


class UsageError(AgentError):
    """The user asked for something that cannot be done as asked."""
