"""One turn of the agent: search, fit the context, answer in one mode, check it, and decide what is shown.

The surfaces (agent/surfaces/: the commands, the TUI, serve, the MCP server, progress) consume the turn's events
(agent/events.py); nothing here imports them.
"""
