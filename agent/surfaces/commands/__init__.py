"""One module per subcommand: each has HELP, add_arguments(parser), Options (its own flags, a frozen dataclass)
and run(settings, options) -> exit code; agent.cli turns the parsed flags into those two."""

COMMANDS = {
    "chat": "agent.surfaces.commands.chat",
    "ask": "agent.surfaces.commands.ask",
    "search": "agent.surfaces.commands.search",
    "index": "agent.surfaces.commands.index",
    "pack": "agent.surfaces.commands.pack",
    "eval": "agent.surfaces.commands.eval",
    "check": "agent.surfaces.commands.check",
    "mcp": "agent.surfaces.commands.mcp",
    "serve": "agent.surfaces.commands.serve",
    "config": "agent.surfaces.commands.config",
}
