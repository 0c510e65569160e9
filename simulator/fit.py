"""Fit the cost model's free parameters on the calibration split: `python -m simulator.fit`.

The parameters no microbenchmark pins down (how much of the mma.sync rate a warp-level MMA reaches,
one warp's dependent issue rate, ...) are chosen by coordinate descent over candidate values, scoring
the model on the calibration groups of the measured sweep only (simulator/validate.py's data); the
validation groups are never read. It prints the chosen values and the scores before and after; they go
into presets.py by hand, with this script named as their source, so a machine's model stays data.
"""

from __future__ import annotations

import argparse
import io
import sys

from simulator import validate
from simulator.specs import MachineSpec, get_spec

CANDIDATES: dict[str, tuple[float, ...]] = {
    "mma_sync_fraction": (0.25, 0.35, 0.45, 0.6, 0.8),
    "warp_issue_ipc": (0.15, 0.2, 0.25, 0.3, 0.4, 0.5, 0.7, 1.0),
    "spill_traffic": (0.25, 0.5, 1.0, 2.0, 4.0, 8.0),
    "exchange_cycles": (0.0, 50.0, 100.0, 150.0, 200.0, 250.0, 400.0, 700.0),
    "alpha": (0.0, 0.05, 0.1, 0.2, 0.3),
    "shared_wavefronts_per_clk": (1.0, 2.0, 4.0),
    "mma_transpose_cycles": (0.25, 0.5, 1.0, 2.0),
    "tensor_efficiency": (0.7, 0.75, 0.8, 0.9, 1.0),
    "serialized_load_waits": (1.0, 1.5, 2.0, 3.0),
    # measured peaks of async copies from the L2 (simulator/data/h200_l2_bandwidth.json): every program its own
    # tiles, tiles shared by 2-4 programs at once, by 8-16
    "l2_bytes_per_s": (10.7e12, 13.3e12, 15.2e12),
}


def loss(scores: dict[str, float]) -> float:
    """Lower is better: how far each figure misses its acceptance threshold (validate.THRESHOLDS), then, as a
    tie-breaker, the figures themselves."""
    t = validate.THRESHOLDS
    shortfall = (max(0.0, t["rho"] - scores["rho"]) + max(0.0, scores["regret"] - t["regret"])
                 + max(0.0, scores["regret_p90"] - t["regret_p90"]) + max(0.0, scores["mape"] - t["mape"]))
    return shortfall + 0.1 * ((1 - scores["rho"]) + scores["regret"] + scores["regret_p90"] + scores["mape"])


def score(groups: list[validate.Group], spec: MachineSpec) -> dict[str, float]:
    return validate.report(groups, spec, out=io.StringIO())["model"]


def fit(groups: list[validate.Group], spec: MachineSpec, candidates: dict[str, tuple[float, ...]],
        rounds: int = 2) -> MachineSpec:
    """Coordinate descent: each parameter in turn takes its best candidate, the others held; `rounds` passes."""
    best = loss(score(groups, spec))
    for _ in range(rounds):
        for name, values in candidates.items():
            for value in values:
                trial = spec.replace(**{name: value})
                trial_loss = loss(score(groups, trial))
                if trial_loss < best - 1e-9:
                    spec, best = trial, trial_loss
    return spec


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--machine", default="h200")
    parser.add_argument("--measured", default=validate.DATA / "h200_sweep.csv")
    parser.add_argument("--modeled", default=validate.DATA / "h200_counters.jsonl")
    parser.add_argument("--only", action="append", help="fit only these parameters")
    opts = parser.parse_args(argv)
    groups = [g for g in validate.load(opts.measured, opts.modeled) if g.split == "calibration"]
    spec = get_spec(opts.machine)
    candidates = {k: v for k, v in CANDIDATES.items() if not opts.only or k in opts.only}
    before = score(groups, spec)
    fitted = fit(groups, spec, candidates)
    after = score(groups, fitted)
    for name in candidates:
        print(f"{name:28s} {getattr(spec, name)!r:>10} -> {getattr(fitted, name)!r}")
    for label, s in (("before", before), ("after", after)):
        print(f"{label}: calibration rho {s['rho']:.2f}, regret {s['regret']:.1%} (p90 {s['regret_p90']:.1%}), "
              f"MAPE {s['mape']:.1%}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
