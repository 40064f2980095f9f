"""Tool registry, agent loop, context window, sessions, CLI, TUI and eval."""

__version__ = "0.1.0"
