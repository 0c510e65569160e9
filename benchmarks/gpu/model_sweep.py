"""Model every config of the cost-model sweep with wavetile: the counters each one's launch produces.

    python benchmarks/gpu/model_sweep.py OUT.jsonl [--machine h200] [--case NAME ...] [--split S ...] [--jobs N]

For each (case, config) of sweep_cases, one modeled launch (`jit.launcher.model_launch`, a cold
L2 as `do_bench` leaves it) gives the simulator counters. They are written one JSON line per config,
with the grid and the CPU seconds the modeling took, so `python -m simulator.validate` can score the
cost model against the GPU's times without running the kernels again. A config the cost model
refuses is kept with its error; configs already in OUT are skipped, so an interrupted run resumes.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import sys
import time
from concurrent.futures import ProcessPoolExecutor, as_completed

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import numpy as np  # noqa: E402
import sweep_cases as sk  # noqa: E402

import simulator  # noqa: E402
from jit.launcher import model_launch  # noqa: E402
from simulator.recorder import reset_device_l2  # noqa: E402


def model_case(case: sk.Case, machine: str, seed: int, done: frozenset = frozenset()) -> list[dict]:
    """Counters of every config of `case` not in `done` ((case, config) pairs already modeled)."""
    todo = [cfg for cfg in case.configs if (case.name, json.dumps(cfg, sort_keys=True)) not in done]
    if not todo:
        return []
    arrays = case.inputs(np.random.default_rng(seed))
    rows = []
    for cfg in todo:
        args, kwargs = sk.launch_args(case, arrays, cfg)
        grid = case.grid(cfg)
        row = {"case": case.name, "config": json.dumps(cfg, sort_keys=True), "grid": list(grid), "machine": machine}
        reset_device_l2()
        start = time.process_time()
        try:
            record = model_launch(case.kernel, grid, *args, machine=machine, **kwargs)
            row["counters"] = record.totals.as_dict()
            row["modeled_ms"] = record.modeled_seconds * 1e3
        except ValueError as exc:  # the cost model refuses it (does not fit the machine)
            row["counters"] = getattr(exc, "counters", None)
            row["error"] = str(exc)
        row["cpu_s"] = time.process_time() - start
        rows.append(row)
        print(f"{case.name:34s} {row['config']:90s} {row.get('modeled_ms', 'rejected')} {row['cpu_s']:.2f}s",
              flush=True)
    return rows


def _model_named(name: str, machine: str, seed: int, done: frozenset) -> list[dict]:
    return model_case(next(c for c in sk.cases() if c.name == name), machine, seed, done)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out")
    parser.add_argument("--machine", default="h200", choices=simulator.registered_specs())
    parser.add_argument("--case", action="append")
    parser.add_argument("--split", action="append", help="only these splits")
    parser.add_argument("--jobs", type=int, default=1, help="processes modeling at once (one case each)")
    parser.add_argument("--seed", type=int, default=20261201)
    opts = parser.parse_args(argv)
    done = set()
    if os.path.exists(opts.out):  # resume: configs already in OUT are not modeled again
        with open(opts.out) as f:
            done = {(row["case"], row["config"]) for row in map(json.loads, f)}
    names = [c.name for c in sk.cases() if (not opts.case or c.name in opts.case)
             and (not opts.split or c.split in opts.split)]
    spawn = multiprocessing.get_context("spawn")
    with open(opts.out, "a") as f, ProcessPoolExecutor(opts.jobs, mp_context=spawn) as pool:
        jobs = [pool.submit(_model_named, name, opts.machine, opts.seed, frozenset(done)) for name in names]
        for job in as_completed(jobs):
            for row in job.result():
                f.write(json.dumps(row) + "\n")
            f.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
