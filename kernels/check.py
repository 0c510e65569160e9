"""`python -m kernels.check`: run every op of the library on the default emulated machine and check it.

Prints one table: op, shape, dtype, max error against the numpy reference, CPU time, and the
modeled time and bound on the emulated machine when the simulator recorded the launches.
"""

from __future__ import annotations

import sys
import time

import simulator
from kernels.registry import all_cases, check, max_error


def _modeled(prof) -> tuple[str, str]:
    launches = getattr(prof, "launches", [])
    if not launches:
        return "-", "-"
    seconds = sum(r.modeled_seconds for r in launches)
    bounds = sorted({r.bound for r in launches})
    sampled = "~" if any(getattr(r, "sampled", False) for r in launches) else ""
    return f"{sampled}{seconds * 1e6:.1f}", "/".join(bounds)


def main() -> int:
    rows, failed = [], 0
    spec = simulator.current_spec()
    for case in all_cases():
        expected = case.reference()
        with simulator.profile() as prof:
            start = time.perf_counter()
            got = case.run()
            cpu = time.perf_counter() - start
        ok = check(case, got, expected)
        failed += not ok
        modeled, bound = _modeled(prof)
        rows.append((case.op, case.shape, case.dtype, f"{max_error(got, expected):.2e}", "ok" if ok else "FAIL",
                     f"{cpu * 1e3:.2f}", modeled, bound))
    headers = ("op", "shape", "dtype", "max err", "check", "CPU ms", f"{spec.name} us", "bound")
    widths = [max(len(str(r[i])) for r in [headers, *rows]) for i in range(len(headers))]
    for i, row in enumerate([headers, *rows]):
        print("  ".join(str(c).ljust(w) for c, w in zip(row, widths)))
        if i == 0:
            print("  ".join("-" * w for w in widths))
    print(f"\n{len(rows) - failed}/{len(rows)} ops match their references")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
