"""The `smoldocs` command line: one subcommand per module in agent.surfaces.commands; `chat` is the default."""

from __future__ import annotations

import argparse
import importlib
import sys
from dataclasses import dataclass, fields
from typing import Any, Callable, Mapping, Sequence

from agent import __version__
from agent.surfaces.commands import COMMANDS
from agent.errors import AgentError
from models.errors import ModelError
from rag.errors import RagError
from rag.printable import visible

from agent.settings import Settings

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
        p.set_defaults(_module=module_name)
    return parser


@dataclass(frozen=True)
class Command:
    """One command line, parsed: the subcommand's `run`, the run's Settings, and the subcommand's own Options."""

    run: Callable[[Settings, Any], int | None]
    settings: Settings
    options: Any


def command_from(given: Mapping[str, Any]) -> Command:
    """The argparse values (`vars(args)`) as Settings, resolved once (flags > environment > config.toml >
    defaults), and the subcommand's Options: nothing past here sees the Namespace."""
    from agent import config

    module = importlib.import_module(given["_module"])
    options = module.Options(**{f.name: given[f.name] for f in fields(module.Options)})
    return Command(module.run, config.settings_from(given), options)


def parse(argv: Sequence[str]) -> Command:
    """`argv` as main() reads it (`chat` when no subcommand is named)."""
    return command_from(vars(build_parser().parse_args(_with_command(argv))))


def _with_command(argv: Sequence[str]) -> list[str]:
    argv = list(argv)
    if not argv or (argv[0].startswith("-") and argv[0] not in ("-h", "--help", "--version")):
        argv = ["chat", *argv]
    return argv


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(_with_command(sys.argv[1:] if argv is None else argv))
    try:
        command = command_from(vars(args))
        return int(command.run(command.settings, command.options) or 0)
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
