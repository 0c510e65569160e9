"""Timing helpers shared by the tutorials: median of repeated runs, and a ratio table."""

from __future__ import annotations

import sys

from jit.testing import median_time  # noqa: F401  (re-exported for the lessons)


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
