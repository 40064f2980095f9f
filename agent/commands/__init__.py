"""One module per subcommand: each has HELP, add_arguments(parser), Options (its own flags, a frozen dataclass)
and run(settings, options) -> exit code; agent.cli turns the parsed flags into those two."""

COMMANDS = {
    "chat": "agent.commands.chat",
    "ask": "agent.commands.ask",
    "search": "agent.commands.search",
    "index": "agent.commands.index",
    "pack": "agent.commands.pack",
    "eval": "agent.commands.eval",
    "check": "agent.commands.check",
    "mcp": "agent.commands.mcp",
    "serve": "agent.commands.serve",
    "config": "agent.commands.config",
}
