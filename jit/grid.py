"""Launch grids: what a kernel[grid] launch accepts, checked the same way for every executor, and the
order its programs run in (WAVETILE_SCHEDULE_SEED), the same for native code and the interpreters."""

from __future__ import annotations

import numpy as np

from jit import env

SCHEDULE_SEED = "WAVETILE_SCHEDULE_SEED"
GRID_LIMITS = (2**31 - 1, 65535, 65535)  # the largest x, y and z a CUDA launch (so Triton) accepts


def normalize_grid(grid, kernel_name: str = "") -> tuple[int, int, int]:
    """The grid as three ints (x, y, z) within Triton's limits; anything else is refused by name."""
    if type(grid) is tuple and len(grid) == 1 and type(grid[0]) is int and 0 <= grid[0] <= GRID_LIMITS[0]:
        return grid[0], 1, 1  # the common case, checked in one line
    dims = tuple(grid) if isinstance(grid, (tuple, list)) else (grid,)
    if not 1 <= len(dims) <= 3:
        raise ValueError(f"{kernel_name}: the grid must have 1 to 3 dimensions, got {grid!r}")
    for axis, (value, limit) in enumerate(zip(dims, GRID_LIMITS)):
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
            raise TypeError(f"{kernel_name}: grid dimension {axis} is {value!r} ({type(value).__name__}); "
                            "grid dimensions must be ints")
        if not 0 <= value <= limit:
            raise ValueError(f"{kernel_name}: grid dimension {axis} is {int(value)}, outside 0..{limit} "
                             f"(the launch limits are x < 2**31, y and z < 65536), in grid {grid!r}")
    return tuple(int(v) for v in dims) + (1,) * (3 - len(dims))  # type: ignore[return-value]


def schedule_seed() -> int | None:
    """WAVETILE_SCHEDULE_SEED: run programs in a seeded random order (flushes out order dependences)."""
    return env.integer(SCHEDULE_SEED, minimum=0)


def program_order(total: int) -> np.ndarray | None:
    """The linear program ids of a `total`-program grid in the order WAVETILE_SCHEDULE_SEED asks for, or
    None (id order). Every executor runs this one permutation, so a seed reproduces across them."""
    seed = env.integer(SCHEDULE_SEED, minimum=0)  # (schedule_seed, inlined: read on every launch)
    if seed is None:
        return None
    return np.random.default_rng(seed).permutation(total).astype(np.int64)
