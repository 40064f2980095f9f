"""One module per subcommand: each has HELP, add_arguments(parser) and run(args) -> exit code."""

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
