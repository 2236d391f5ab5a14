"""Timing helper shared by the benchmarks (imported as ``_timing``: a script's own folder is on
sys.path when it runs)."""

from __future__ import annotations

import statistics
import time


def median_time(fn, repeats: int) -> float:
    """Median wall time of ``repeats`` calls of ``fn()`` in seconds."""
    times = []
    for _ in range(repeats):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def best_time(fn, repeats: int = 3) -> float:
    """Best (smallest) wall time of ``repeats`` calls of ``fn()`` in seconds."""
    best = float("inf")
    for _ in range(repeats):
        t = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t)
    return best
