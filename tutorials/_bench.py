"""Timing helpers shared by the tutorials: median of repeated runs, and a ratio table."""

from __future__ import annotations

import sys
import time


def median_time(fn, repeat: int = 7, warmup: int = 1) -> float:
    """Median seconds of `fn()` over `repeat` runs after `warmup` runs."""
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    times.sort()
    return times[len(times) // 2]


def small() -> bool:
    """Tutorials run at small sizes under the test suite (`--small`)."""
    return "--small" in sys.argv


def print_table(rows: list[tuple], headers: tuple) -> None:
    cells = [headers] + [tuple(str(c) for c in row) for row in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(headers))]
    for i, row in enumerate(cells):
        print("  ".join(c.rjust(w) for c, w in zip(row, widths)))
        if i == 0:
            print("  ".join("-" * w for w in widths))
