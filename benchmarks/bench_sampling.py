"""Sampling error and profiling overhead on the benchmark kernels (benchmarks/bench_core.py).

For each kernel: modeled time from a full instrumented run (every program measured) against the
automatic sample (jit.sampling), the relative error (target within 5%), and the CPU time of a profiled
launch (`with simulator.profile()`, outputs computed) against a plain launch (target at most 3x).
Run: python benchmarks/bench_sampling.py [--small]
"""

from __future__ import annotations

import pathlib
import sys

import numpy as np

ROOT = pathlib.Path(__file__).parents[1]
sys.path.insert(0, str(ROOT))

import simulator  # noqa: E402
from benchmarks.bench_core import (  # noqa: E402
    add_kernel,
    interleaved_best,
    matmul_kernel,
    rmsnorm_kernel,
    softmax_kernel,
)
from jit import cdiv  # noqa: E402
from jit.launcher import model_launch  # noqa: E402
from tutorials._bench import print_table  # noqa: E402


def cases(small: bool):
    """(name, kernel, grid, args, constexprs) of the bench_core kernels, at bench_core's sizes."""
    rng = np.random.default_rng(0)
    n = 1 << (18 if small else 22)
    x, y = rng.standard_normal(n, dtype=np.float32), rng.standard_normal(n, dtype=np.float32)
    yield "vector add", add_kernel, (cdiv(n, 4096),), (x, y, np.empty_like(x), n), {"BLOCK": 4096}
    rows = 512 if small else 4096
    s = rng.standard_normal((rows, 1024), dtype=np.float32)
    yield "softmax", softmax_kernel, (64,), (np.empty_like(s), s, 1024, rows, 1024), {"BLOCK": 1024}
    r = rng.standard_normal((rows, 4096), dtype=np.float32)
    w = rng.standard_normal(4096, dtype=np.float32)
    yield "rmsnorm", rmsnorm_kernel, (64,), (np.empty_like(r), r, w, 4096, rows, 4096, 1e-6), {"BLOCK": 4096}
    size = 256 if small else 512
    for dtype in (np.float32, np.float16):
        a = rng.standard_normal((size, size)).astype(dtype)
        b = rng.standard_normal((size, size)).astype(dtype)
        c = np.empty((size, size), np.float32)
        yield (f"matmul {np.dtype(dtype).name}", matmul_kernel, (size // 64, size // 64), (a, b, c, size, size, size),
               {"BM": 64, "BN": 64, "BK": 32})


def main() -> None:
    small = "--small" in sys.argv
    rows = []
    for name, kernel, grid, args, meta in cases(small):
        kernel[grid](*args, **meta)  # compile the plain variant
        simulator.reset_device_l2()
        full = model_launch(kernel, grid, *args, sample=False, **meta)
        simulator.reset_device_l2()
        sampled = model_launch(kernel, grid, *args, **meta)
        error = abs(sampled.modeled_seconds - full.modeled_seconds) / full.modeled_seconds
        def profiled():
            with simulator.profile():
                kernel[grid](*args, **meta)

        plain, profiled_time = interleaved_best((lambda: kernel[grid](*args, **meta), profiled))
        overhead = profiled_time / plain
        rows.append((name, "x".join(map(str, grid)), f"{full.modeled_seconds * 1e6:.2f} us",
                     f"{sampled.modeled_seconds * 1e6:.2f} us" + (" ~" if sampled.sampled else ""),
                     f"{100 * error:.2f}%", f"{plain * 1e3:.2f} ms", f"{overhead:.1f}x"))
    print_table(rows, ("kernel", "grid", "modeled (all programs)", "modeled (auto sample)", "error", "plain CPU",
                       "profiled / plain"))
    print("targets: error within 5%, profiled / plain at most 3x ('~' = counters scaled from a sample)")


if __name__ == "__main__":
    main()
