"""Soak: generate random kernels for a while and compare compiled with interpreted results.

    python scripts/soak_differential.py --minutes 10 [--start-seed 0]

Prints every mismatch (with the kernel's source) and a summary line with the counts.
"""

from __future__ import annotations

import argparse
import time

from jit.fuzz.differential import check
from jit.fuzz.kernels import RandomChooser, generate


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--minutes", type=float, default=10.0)
    parser.add_argument("--start-seed", type=int, default=100_000)
    args = parser.parse_args()
    end = time.monotonic() + 60 * args.minutes
    seed, runs, mismatches, errors = args.start_seed, 0, 0, 0
    while time.monotonic() < end:
        kernel = generate(RandomChooser(seed), seed=seed)
        try:
            problem = check(kernel, seed)
        except Exception as e:  # a crash of either side is a finding too
            problem = f"exception {type(e).__name__}: {e}"
            errors += 1
        runs += 1
        if problem:
            mismatches += 1
            print(f"--- seed {seed}: {problem}\n{kernel.source}", flush=True)
        seed += 1
    print(f"soak: {runs} kernels, {mismatches} mismatches ({errors} exceptions), seeds "
          f"{args.start_seed}..{seed - 1}, {args.minutes} min", flush=True)
    return 1 if mismatches else 0


if __name__ == "__main__":
    raise SystemExit(main())
