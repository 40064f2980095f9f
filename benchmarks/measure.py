"""Timing helpers: interleaved repeats with medians (the machine is shared and noisy), and machine facts."""

from __future__ import annotations

import os
import platform
import statistics
import time
from typing import Callable, Sequence


def median(values: Sequence[float]) -> float:
    return float(statistics.median(values)) if values else float("nan")


def percentile(values: Sequence[float], q: float) -> float:
    """The q-th percentile (0-100) by linear interpolation."""
    if not values:
        return float("nan")
    ordered = sorted(values)
    pos = (len(ordered) - 1) * q / 100
    low = int(pos)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (pos - low)


def timed(fn: Callable[[], object]) -> float:
    """Seconds one call of `fn` takes."""
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def interleaved(ours: Callable[[], float], baseline: Callable[[], float], repeats: int) -> tuple[list[float], list[float]]:
    """Run both measurements `repeats` times in ABBA order, so load that drifts during the run hits both alike."""
    a: list[float] = []
    b: list[float] = []
    for i in range(repeats):
        if i % 2 == 0:
            a.append(ours())
            b.append(baseline())
        else:
            b.append(baseline())
            a.append(ours())
    return a, b


def load_average() -> tuple[float, float, float]:
    return os.getloadavg()


def machine() -> dict:
    """What the table was measured on."""
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            cpu = next((line.split(":", 1)[1].strip() for line in f if line.startswith("model name")), cpu)
    except OSError:
        pass
    return {
        "cores": os.cpu_count(),
        "cpu": cpu,
        "load_average": [round(x, 2) for x in load_average()],
        "python": platform.python_version(),
        "platform": platform.platform(),
    }
