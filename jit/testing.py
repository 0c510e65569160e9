"""Timing helpers in the spirit of `triton.testing`: benchmarks time kernels the same way everywhere."""

from __future__ import annotations

import time
from collections.abc import Callable


def median_time(fn: Callable[[], object], repeat: int = 7, warmup: int = 1) -> float:
    """Median wall seconds of `fn()` over `repeat` runs after `warmup` runs (compiles land in warmup)."""
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    times.sort()
    return times[len(times) // 2]


def do_bench(fn: Callable[[], object], warmup: int = 25, rep: int = 100, quantiles=None, return_mode: str = "mean"):
    """Triton's do_bench: warmup and rep are milliseconds of running; returns milliseconds."""
    start = time.perf_counter()
    fn()
    estimate = max(time.perf_counter() - start, 1e-6) * 1e3
    for _ in range(max(1, int(warmup / estimate))):
        fn()
    times = []
    for _ in range(max(1, int(rep / estimate))):
        t = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t) * 1e3)
    times.sort()
    if quantiles is not None:
        return [times[min(len(times) - 1, int(q * len(times)))] for q in quantiles]
    pick = {"min": times[0], "max": times[-1], "median": times[len(times) // 2],
            "mean": sum(times) / len(times), "all": times}
    return pick[return_mode]
