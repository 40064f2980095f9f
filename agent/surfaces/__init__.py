"""The surfaces: what a person or another program talks to. `commands/` (one module per `smoldocs` subcommand),
`tui/` (the chat app), `mcp_server` and `mcp_transport` (the MCP server over stdio), `serve/` (the same tools over
HTTP), `progress` (the terminal's progress bar). Each consumes the turn's events (agent/events.py); nothing under
agent/ but the entry point, agent/cli.py, imports a surface."""
