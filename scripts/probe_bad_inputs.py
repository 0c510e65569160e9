"""Probe: launch kernels with bad inputs and faults, each case in its own process, and print the table.

    python scripts/probe_bad_inputs.py [--jobs 2] [--only NAME_OR_ITEM ...]

Exits 1 unless every case is a clear error or a correct run (no crash, hang, silently wrong result,
unclear or unexpected error). The cases are in jit/fuzz/bad_inputs.py.
"""

from __future__ import annotations

import argparse

from jit.fuzz.bad_inputs import CASES, FAILURES, run_cases, table


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--jobs", type=int, default=2, help="cases run at once")
    parser.add_argument("--only", nargs="*", default=None, help="case names or issue items to run")
    args = parser.parse_args()
    cases = [c for c in CASES if not args.only or c.name in args.only or c.item in args.only]
    results = run_cases(cases, jobs=args.jobs)
    print(table(results), flush=True)
    return 1 if any(r.outcome in FAILURES for r in results) else 0


if __name__ == "__main__":
    raise SystemExit(main())
