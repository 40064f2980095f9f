"""`python -m benchmarks.realdocs [build|check|score]`: the real-docs suite (default: score)."""

from __future__ import annotations

import sys

from benchmarks.realdocs.cli import main

if __name__ == "__main__":
    sys.exit(main())
