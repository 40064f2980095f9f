"""`smoldocs search`."""

from __future__ import annotations

import argparse
import sys

HELP = "search (not built yet)"


def add_arguments(p: argparse.ArgumentParser) -> None:
    pass


def run(args: argparse.Namespace) -> int:
    print("smoldocs search: not built yet", file=sys.stderr)
    return 2
