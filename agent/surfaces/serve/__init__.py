"""`smoldocs serve`: MCP over streamable HTTP for a team: tokens, the gate, limits, the access log."""
