"""`smoldocs pack`."""

from __future__ import annotations

import argparse
import sys

HELP = "pack (not built yet)"


def add_arguments(p: argparse.ArgumentParser) -> None:
    pass


def run(args: argparse.Namespace) -> int:
    print("smoldocs pack: not built yet", file=sys.stderr)
    return 2
