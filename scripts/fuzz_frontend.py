"""Frontend fuzzer: compile N mutated kernels and count outcomes; exit 1 on any internal error.

    python scripts/fuzz_frontend.py --count 5000 [--seed 0]
"""

from __future__ import annotations

import argparse
import time
import warnings

from jit.fuzz.frontend import fuzz


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--count", type=int, default=5000)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    warnings.simplefilter("ignore", SyntaxWarning)  # Python's own hints about mutated code
    start = time.monotonic()
    outcome = fuzz(args.count, args.seed)
    for text, source in outcome.internal:
        print(f"--- internal error:\n{text}\n{source}", flush=True)
    counts = ", ".join(f"{k}: {v}" for k, v in sorted(outcome.counts.items()))
    print(f"frontend fuzz: {outcome.inputs} inputs compiled ({counts}); internal errors: {len(outcome.internal)}; "
          f"{time.monotonic() - start:.0f} s")
    return 1 if outcome.internal else 0


if __name__ == "__main__":
    raise SystemExit(main())
