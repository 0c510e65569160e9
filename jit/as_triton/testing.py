"""`triton.testing` under jit.as_triton: timing, assert_close, and perf_report benchmarks.

A `perf_report` benchmark sweeps sizes meant for a GPU (tutorial 01 goes to 2**27 elements, each
timed for 100 ms); on the CPU that takes hours, so `Mark.run` prints a note and skips the sweep
unless WAVETILE_TRITON_BENCH=1.
"""

from __future__ import annotations

import sys

import numpy as np

from jit import env
from jit.testing import do_bench

BENCH_ENV = "WAVETILE_TRITON_BENCH"


def do_bench_cudagraph(fn, rep: int = 20, grad_to_none=None, quantiles=None, return_mode: str = "mean"):
    """No CUDA graphs on the CPU: the plain timing loop."""
    return do_bench(fn, rep=rep, quantiles=quantiles, return_mode=return_mode)


def assert_close(x, y, atol=None, rtol=None, err_msg: str = "") -> None:
    """Triton's assert_close: numpy's allclose on host copies (torch tensors, arrays or scalars)."""
    def host(v):
        if hasattr(v, "detach"):
            v = v.detach().cpu()
            if str(v.dtype) == "torch.bfloat16":
                v = v.float()
            return v.numpy()
        return np.asarray(v)

    atol = 1e-2 if atol is None else atol
    rtol = 0.0 if rtol is None else rtol
    np.testing.assert_allclose(host(x), host(y), atol=atol, rtol=rtol, err_msg=err_msg, equal_nan=True)


class Benchmark:
    """One perf_report sweep, with Triton's fields."""

    def __init__(self, x_names, x_vals, line_arg, line_vals, line_names, plot_name, args, xlabel="", ylabel="",
                 x_log=False, y_log=False, styles=None, **kwargs):
        self.x_names, self.x_vals, self.line_arg = x_names, x_vals, line_arg
        self.line_vals, self.line_names, self.plot_name, self.args = line_vals, line_names, plot_name, args
        self.xlabel, self.ylabel, self.x_log, self.y_log, self.styles = xlabel, ylabel, x_log, y_log, styles


class Mark:
    """A function decorated with perf_report: `run()` sweeps its benchmarks (see the module note)."""

    def __init__(self, fn, benchmarks):
        self.fn, self.benchmarks = fn, benchmarks

    def run(self, show_plots: bool = False, print_data: bool = False, save_path: str = "", return_df: bool = False,
            **kwargs):
        benches = self.benchmarks if isinstance(self.benchmarks, list) else [self.benchmarks]
        if env.get(BENCH_ENV, "0") != "1":
            names = ", ".join(b.plot_name for b in benches)
            print(f"triton.testing: benchmark {names} skipped (GPU-sized sweep; "
                  f"set {BENCH_ENV}=1 to run it on the CPU)", file=sys.stderr)
            return None
        tables = [self._run_one(bench, print_data) for bench in benches]
        return tables if return_df else None

    def _run_one(self, bench: Benchmark, print_data: bool) -> list:
        rows = []
        for x in bench.x_vals:
            xs = x if isinstance(x, (list, tuple)) else [x] * len(bench.x_names)
            point = dict(zip(bench.x_names, xs))
            results = [self.fn(**point, **{bench.line_arg: line}, **bench.args) for line in bench.line_vals]
            rows.append(list(xs) + [r[0] if isinstance(r, tuple) else r for r in results])
        if print_data:
            print(bench.plot_name + ":")
            print("\t".join(list(bench.x_names) + list(bench.line_names)))
            for row in rows:
                print("\t".join(f"{v:g}" if isinstance(v, float) else str(v) for v in row))
        return rows


def perf_report(benchmarks):
    """Decorator: mark a function as a benchmark to sweep with `.run()`."""
    return lambda fn: Mark(fn, benchmarks)


__all__ = ["do_bench", "do_bench_cudagraph", "assert_close", "Benchmark", "Mark", "perf_report"]
