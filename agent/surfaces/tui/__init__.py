"""The Textual TUI: chat with your docs, see every citation and the token budget."""

from agent.surfaces.tui.app import SmoldocsApp, make_app

__all__ = ["SmoldocsApp", "make_app"]
