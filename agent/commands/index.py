"""`smoldocs index`."""

from __future__ import annotations

import argparse
import sys

HELP = "index (not built yet)"


def add_arguments(p: argparse.ArgumentParser) -> None:
    pass


def run(args: argparse.Namespace) -> int:
    print("smoldocs index: not built yet", file=sys.stderr)
    return 2
