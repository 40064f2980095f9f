"""Benchmarks: `python -m benchmarks` prints the performance table (see benchmarks/__main__.py)."""
