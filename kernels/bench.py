"""`python -m kernels.bench`: per op, CPU time against its numpy reference, modeled time and bound on the
emulated machine, and the bytes the simulator saw moved against the op's minimum. One table, one run.

The references are vectorised numpy (float64; loops only over experts, sequences, chunks or taps, never
over tokens or rows), so "vs numpy" compares with what numpy does well. Every case starts from a cold
emulated L2 (kernels.registry), so one case's bytes never count another's.
"""

from __future__ import annotations

import sys

import simulator
from jit.testing import median_time
from kernels.registry import all_cases


def main(argv: list[str]) -> int:
    only = argv[0] if argv else ""
    rows = []
    for case in all_cases():
        if only and not case.op.startswith(only):
            continue
        cpu = median_time(case.run, repeat=5)
        ref = median_time(case.reference, repeat=5)
        with simulator.profile() as prof:
            case.run()
        launches = prof.launches
        modeled = sum(r.modeled_seconds for r in launches) if launches else None
        bound = "/".join(sorted({r.bound for r in launches})) if launches else "-"
        moved = sum(r.counters.get("dram_bytes", 0) for r in launches) if launches else None
        ratio = f"{moved / case.min_bytes:.2f}" if moved and case.min_bytes else "-"
        extra = " ".join(f"{k}={v}" for k, v in case.notes.items())
        rows.append((case.op, case.shape, case.dtype, f"{cpu * 1e3:.2f}", f"{ref * 1e3:.2f}", f"{ref / cpu:.2f}x",
                     "-" if modeled is None else f"{modeled * 1e6:.1f}", bound, ratio, extra))
    headers = ("op", "shape", "dtype", "CPU ms", "numpy ms", "vs numpy", "modeled us", "bound", "bytes/min", "notes")
    widths = [max(len(str(r[i])) for r in [headers, *rows]) for i in range(len(headers))]
    for i, row in enumerate([headers, *rows]):
        print("  ".join(str(c).ljust(w) for c, w in zip(row, widths)))
        if i == 0:
            print("  ".join("-" * w for w in widths))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
