"""Speed-up of a 100-config wavetile-tune sweep on a Dask LocalCluster of 2 workers over 1 worker.

Both sweeps run in this one process, each on a fresh cluster of single-threaded worker processes that
compile into their own empty cache directory (no compiled kernel carries over), with every config
modeled and run once on the CPU. Both rankings must agree. Run: python benchmarks/bench_tune_dask.py
"""

from __future__ import annotations

import pathlib
import sys
import tempfile
import time

import numpy as np

ROOT = pathlib.Path(__file__).parents[1]
sys.path.insert(0, str(ROOT))

import dsl as tl  # noqa: E402
from jit import Config, cdiv, jit  # noqa: E402
from jit.tune import TuneProblem, rank, sweep, tune_problem  # noqa: E402

MACHINE = "mtt-s5000"
SIZES = {"n": 5000}
CONFIGS = [Config({"BLOCK": block, "UNROLL": unroll}, num_warps=warps)
           for block in (16, 32, 64, 128, 256) for warps in (1, 2, 4, 8) for unroll in (1, 2, 3, 4, 5)]
"""100 configs, each its own compiled kernel (a worker's in-memory kernel cache never serves two)."""


@jit
def gelu_tanh(x_ptr, out_ptr, n, BLOCK: tl.constexpr, UNROLL: tl.constexpr):
    for u in tl.static_range(UNROLL):
        offs = (tl.program_id(0) * UNROLL + u) * BLOCK + tl.arange(0, BLOCK)
        mask = offs < n
        x = tl.load(x_ptr + offs, mask=mask)
        inner = 0.7978845608 * (x + 0.044715 * x * x * x)
        e = tl.exp(-2.0 * tl.abs(inner))
        t = (1.0 - e) / (1.0 + e)
        tl.store(out_ptr + offs, 0.5 * x * (1.0 + tl.where(inner >= 0, t, -t)), mask=mask)


@tune_problem(gelu_tanh)
def gelu_problem(n: int = 5000) -> TuneProblem:
    x = np.random.default_rng(3).standard_normal(n).astype(np.float32)
    return TuneProblem(gelu_tanh, args=(x, np.zeros_like(x), n),
                       grid=lambda meta: (cdiv(n, meta["BLOCK"] * meta["UNROLL"]),),
                       outputs=["out_ptr"], rtol=1e-6, atol=1e-6)


def timed_sweep(workers: int) -> tuple[float, list]:
    from distributed import Client, LocalCluster

    with tempfile.TemporaryDirectory(prefix="wavetile-bench-dask-") as cache, \
            LocalCluster(n_workers=workers, threads_per_worker=1, processes=True, host="127.0.0.1",
                         dashboard_address=None) as cluster, Client(cluster) as client:
        start = time.perf_counter()
        rows = sweep(f"{pathlib.Path(__file__).resolve()}:gelu_problem", SIZES, MACHINE, CONFIGS, cpu_runs=1,
                     progress=False, executor=client.get_executor(), workers=workers, cache_dir=cache)
        return time.perf_counter() - start, rows


def main() -> None:
    import os

    print(f"cores: {os.cpu_count()}, load average before: {os.getloadavg()[0]:.1f} "
          "(the speed-up cannot exceed the cores other processes leave free)")
    one, rows_one = timed_sweep(1)
    two, rows_two = timed_sweep(2)
    order = [[str(r.record.config) for r in rank(rows, "model")] for rows in (rows_one, rows_two)]
    failed = sum(not r.record.ok for r in rows_two)
    print(f"{len(CONFIGS)}-config sweep of gelu_tanh n={SIZES['n']} on {MACHINE} (Dask LocalCluster)")
    print(f"  1 worker : {one:6.1f} s")
    print(f"  2 workers: {two:6.1f} s")
    print(f"  speed-up : {one / two:5.2f}x   same ranking: {order[0] == order[1]}   failed configs: {failed}")


if __name__ == "__main__":
    main()
