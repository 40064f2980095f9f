"""The `smoldocs` command line: one subcommand per module in agent.commands; `chat` is the default."""

from __future__ import annotations

import argparse
import importlib
import sys
from typing import Sequence

from agent import __version__
from agent.commands import COMMANDS
from agent.errors import AgentError
from models.errors import ModelError
from rag.errors import RagError
from rag.printable import visible

USER_ERRORS = (AgentError, ModelError, RagError)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="smoldocs",
        description="Chat with your docs, offline: a local SmolLM2 agent with hybrid search and checked citations.",
    )
    parser.add_argument("--version", action="version", version=f"smoldocs {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name, module_name in COMMANDS.items():
        module = importlib.import_module(module_name)
        p = sub.add_parser(name, help=module.HELP, description=module.HELP)
        module.add_arguments(p)
        p.set_defaults(_run=module.run)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser()
    if not argv or (argv[0].startswith("-") and argv[0] not in ("-h", "--help", "--version")):
        argv = ["chat", *argv]
    args = parser.parse_args(argv)
    try:
        from agent import config

        config.apply(args)  # flags > environment > config.toml > defaults
        return int(args._run(args) or 0)
    except USER_ERRORS as exc:
        print(f"smoldocs: error: {visible(str(exc))}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("smoldocs: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        # The reader went away (e.g. `smoldocs search ... --json | head`): not an error worth a traceback.
        import os

        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0


if __name__ == "__main__":
    sys.exit(main())
