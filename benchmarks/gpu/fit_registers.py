"""Fit the register estimate to Triton's own counts: `python benchmarks/gpu/fit_registers.py [--split S]`.

The estimate is base + share * (other bytes + weight * accumulator bytes) / (4 * threads) at the peak of the
tile values' liveness (jit.gpu_resources.live_profile), the weight one per kind of the kernel's dots on the H200
(jit.gpu_resources.dot_kind). Triton's n_regs of every sweep config are in
simulator/data/h200_compile_facts.jsonl; configs that spill (n_regs is then the cap) say nothing about demand and
are left out. The grid search runs on the calibration split only and prints the median error on each split; the
chosen values go into jit/gpu_resources.py (MMA_WEIGHTS) by hand, and with --base-share, which searches base and share
too, into simulator/occupancy.py (every kernel's counters then change: re-model them all).
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import sys

os.environ.setdefault("WAVETILE_SWEEP_BACKEND", "wavetile")
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import numpy as np  # noqa: E402
import sweep_cases as sk  # noqa: E402

from dsl.ir import parse_function  # noqa: E402
from jit import gpu_resources  # noqa: E402
from jit.launch import bind  # noqa: E402
from simulator.occupancy import REGISTER_BASE, REGISTER_SHARE  # noqa: E402
from simulator.specs import get_spec  # noqa: E402

FACTS = os.path.join(os.path.dirname(__file__), "..", "..", "simulator", "data", "h200_compile_facts.jsonl")
H200 = get_spec("h200")
BASES = (8, 12, 16, 20, 24)
SHARES = (0.35, 0.4, 0.45, 0.5, 0.55, 0.6, 0.7)
MMA_WEIGHTS = {"sync": (2.0, 2.5, 3.0), "async_registers": (1.5, 1.75, 2.0, 2.5), "async": (1.0, 1.25, 1.5)}


def profiles(splits: tuple[str, ...]) -> list[tuple[str, int, int, list, str, str]]:
    """(split, Triton's n_regs, threads, liveness profile, the kind of its dots, the case) of every config that
    compiled without spilling."""
    facts = {(r["case"], r["config"]): r for r in map(json.loads, open(FACTS))}
    out = []
    for case in sk.cases():
        if case.split not in splits:
            continue
        arrays = case.inputs(np.random.default_rng(0))
        for cfg in case.configs:
            fact = facts.get((case.name, json.dumps(cfg, sort_keys=True)))
            if not fact or "n_regs" not in fact or fact.get("n_spills"):
                continue
            args, kwargs = sk.launch_args(case, arrays, cfg)
            kernel = bind(case.kernel, args, kwargs, case.grid(cfg)).compiled(instrument=True)
            threads = kernel.options.num_warps * 32
            func = parse_function(kernel.asm["ir"])
            kind = gpu_resources.dot_kind(func, H200, kernel.options.num_warps)
            copies = gpu_resources.layout_copies(func, H200, kernel.options.num_warps)
            out.append((case.split, fact["n_regs"], threads, gpu_resources.live_profile(func, copies), kind,
                        case.name))
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--split", action="append", help="splits to report (default calibration, validation)")
    parser.add_argument("--base-share", action="store_true", help="search base and share too (default: the current)")
    opts = parser.parse_args(argv)
    rows = profiles(tuple(opts.split or ("calibration", "validation")))
    regs = np.array([r[1] for r in rows], float)
    threads = np.array([r[2] for r in rows], float)
    calibration = np.array([r[0] == "calibration" for r in rows])
    peaks = {(i, w): gpu_resources.peak_bytes(r[3], w) for i, r in enumerate(rows)
             for w in (*MMA_WEIGHTS[r[4]], gpu_resources.MMA_WEIGHTS[r[4]])}
    best = None
    for weights in itertools.product(*MMA_WEIGHTS.values()):
        chosen = dict(zip(MMA_WEIGHTS, weights))
        per_thread = np.array([peaks[i, chosen[r[4]]] for i, r in enumerate(rows)]) / (4 * threads)
        for base in BASES if opts.base_share else (REGISTER_BASE,):
            for share in SHARES if opts.base_share else (REGISTER_SHARE,):
                error = np.abs(np.log(np.minimum(255, base + np.ceil(share * per_thread)) / regs))
                score = float(np.median(error[calibration]))
                if best is None or score < best[0]:
                    best = (score, base, share, chosen, error)
    score, base, share, weight, error = best
    print(f"base {base}, share {share}, mma weights {weight}")
    for split in sorted({r[0] for r in rows}):
        at = np.array([r[0] == split for r in rows])
        print(f"  {split}: {at.sum()} configs, median error {np.expm1(np.median(error[at])):.1%}, "
              f"p90 {np.expm1(np.percentile(error[at], 90)):.1%}")
    current = np.array([peaks[i, gpu_resources.MMA_WEIGHTS[r[4]]] for i, r in enumerate(rows)]) / (4 * threads)
    signed = np.log(regs / np.minimum(255, REGISTER_BASE + np.ceil(REGISTER_SHARE * current)))
    spread = _spread(rows, signed, calibration)
    print(f"the estimate in use misses one calibration kernel's configs apart by {spread:.3f} (REGISTER_SPREAD)")
    return 0


def _spread(rows: list, error: np.ndarray, where: np.ndarray) -> float:
    """Robust standard deviation of the log errors about each kernel's median (simulator.occupancy.REGISTER_SPREAD):
    kernels with at least three configs."""
    by_case: dict[str, list[float]] = {}
    for row, signed, keep in zip(rows, error, where):
        if keep:
            by_case.setdefault(row[5], []).append(signed)
    residuals = np.concatenate([np.array(v) - np.median(v) for v in by_case.values() if len(v) >= 3])
    return float(1.4826 * np.median(np.abs(residuals - np.median(residuals))))


if __name__ == "__main__":
    sys.exit(main())
