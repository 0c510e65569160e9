"""Sanitizer overhead: time one launch interpreted plain and with each sanitizer (ratio to the plain run),
and the compiled launch for scale.

    python scripts/bench_sanitizers.py [--n 65536]
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np

import dsl as tl
from jit import jit
from jit.sanitize import SANITIZERS


@jit
def _softmax_rows(x_ptr, out_ptr, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + row * n_cols + offs, mask=offs < n_cols, other=-float("inf"))
    e = tl.exp(x - tl.max(x, axis=0))
    tl.store(out_ptr + row * n_cols + offs, e / tl.sum(e, axis=0), mask=offs < n_cols)


def _time(fn, repeat: int = 3) -> float:
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rows", type=int, default=256)
    parser.add_argument("--cols", type=int, default=1000)
    args = parser.parse_args()
    x = np.random.default_rng(0).standard_normal((args.rows, args.cols)).astype(np.float32)
    out = np.empty_like(x)
    block = 1 << (args.cols - 1).bit_length()
    launch = lambda **kw: _softmax_rows[(args.rows,)](x, out, args.cols, BLOCK=block, **kw)  # noqa: E731
    launch()
    compiled = _time(launch)
    os.environ.pop("WAVETILE_SANITIZE", None)
    plain = _time(lambda: launch(interpret=True))
    print(f"softmax {args.rows}x{args.cols}: compiled {compiled * 1e3:.2f} ms, interpreted {plain * 1e3:.1f} ms")
    print(f"{'sanitizer':<10} {'ms':>8} {'x plain interpreter':>20}")
    for name in SANITIZERS + ("all",):
        os.environ["WAVETILE_SANITIZE"] = name
        t = _time(lambda: launch(interpret=True))
        print(f"{name:<10} {t * 1e3:8.1f} {t / plain:20.2f}")
    os.environ.pop("WAVETILE_SANITIZE", None)


if __name__ == "__main__":
    main()
