"""Time the cost-model sweep on a real GPU with Triton: every config of every case in sweep_cases.

Run on a machine with a CUDA GPU, torch and triton (the device tool's H200):
    WAVETILE_SWEEP_BACKEND=triton python benchmarks/gpu/sweep.py OUT.csv [--split S] [--family F]
Each config is compiled, run once and checked against the case's numpy reference, then timed with
`triton.testing.do_bench` (L2 flushed before every repetition, median of the repetitions). A second
pass times every config again, so the CSV carries the repeat noise (`ms_repeat`). Configs that Triton
cannot compile or launch (out of shared memory, ...) are kept with their status: the model must
predict those failures too. A JSON beside the CSV records the GPU, driver and library versions.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import sys
import time
import traceback

os.environ.setdefault("WAVETILE_SWEEP_BACKEND", "triton")
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import numpy as np  # noqa: E402
import sweep_cases as sk  # noqa: E402

FIELDS = ("case", "family", "split", "dtype", "shape", "config", "status", "ms", "ms_repeat", "rel_err", "error")
WARMUP_MS, REP_MS = 10, 60


def to_device(array: np.ndarray):
    import torch

    if array.dtype.name == "bfloat16":
        return torch.from_numpy(array.view(np.uint16)).cuda().view(torch.bfloat16)
    return torch.from_numpy(np.ascontiguousarray(array)).cuda()


def rel_error(got, want: np.ndarray) -> float:
    import torch

    got = got.to(torch.float32).cpu().numpy()
    scale = float(np.abs(want).max()) or 1.0
    return float(np.abs(got - want).max() / scale)


def classify(exc: BaseException) -> str:
    text = f"{type(exc).__name__}: {exc}"
    if "OutOfResources" in text or "out of resource" in text.lower() or "shared memory" in text.lower():
        return "out_of_resources"
    return "error"


def run_case(case: sk.Case, writer, out_file, seed: int) -> list[dict]:
    import torch
    from triton.testing import do_bench

    rng = np.random.default_rng(seed)
    arrays = case.inputs(rng)
    expected = case.reference(arrays)
    dev = {name: to_device(a) for name, a in arrays.items()}
    rows = []
    for cfg in case.configs:
        args, kwargs = sk.launch_args(case, dev, cfg)
        grid = case.grid(cfg)
        row = {"case": case.name, "family": case.family, "split": case.split, "dtype": case.dtype,
               "shape": json.dumps(case.shape), "config": json.dumps(cfg, sort_keys=True), "status": "ok",
               "ms": "", "ms_repeat": "", "rel_err": "", "error": ""}
        try:
            for name in case.outputs:  # poisoned, or zero for outputs the kernel accumulates into
                zero = case.extra.get("zero_outputs")
                dev[name].fill_(0 if zero else float("nan") if dev[name].dtype.is_floating_point else -1)
            case.kernel[grid](*args, **kwargs)
            torch.cuda.synchronize()
            err = max(rel_error(dev[name], expected[name]) for name in case.outputs)
            row["rel_err"] = f"{err:.3e}"
            if not err <= case.tolerance:
                row["status"] = "wrong"
            fn = lambda: case.kernel[grid](*args, **kwargs)  # noqa: E731
            row["ms"] = f"{do_bench(fn, warmup=WARMUP_MS, rep=REP_MS, return_mode='median'):.6f}"
        except Exception as exc:  # noqa: BLE001 - every failure is data
            row["status"] = classify(exc)
            row["error"] = f"{type(exc).__name__}: {str(exc)[:200]}"
            torch.cuda.synchronize()
        rows.append(row)
        print(f"{case.name:34s} {row['config']:90s} {row['status']:16s} {row['ms']}", flush=True)
    for row, cfg in zip(rows, case.configs):  # second pass: repeat noise
        if row["status"] != "ok":
            continue
        args, kwargs = sk.launch_args(case, dev, cfg)
        grid = case.grid(cfg)
        fn = lambda: case.kernel[grid](*args, **kwargs)  # noqa: E731
        row["ms_repeat"] = f"{do_bench(fn, warmup=WARMUP_MS, rep=REP_MS, return_mode='median'):.6f}"
    for row in rows:
        writer.writerow(row)
    out_file.flush()
    del dev
    torch.cuda.empty_cache()
    return rows


def environment() -> dict:
    import subprocess

    import torch
    import triton

    smi = subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version,clocks.max.sm,clocks.max.mem,memory.total",
                          "--format=csv,noheader"], capture_output=True, text=True).stdout.strip()
    props = torch.cuda.get_device_properties(0)
    return {"gpu": props.name, "sms": props.multi_processor_count, "nvidia_smi": smi, "torch": torch.__version__,
            "triton": triton.__version__, "cuda": torch.version.cuda, "python": sys.version.split()[0],
            "date": time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime()),
            "do_bench": {"warmup_ms": WARMUP_MS, "rep_ms": REP_MS, "return_mode": "median", "l2_flush": True}}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", help="CSV to write (a .json with the environment goes beside it)")
    parser.add_argument("--split", choices=sorted({c.split for c in sk.cases()}), help="only this split")
    parser.add_argument("--family", action="append", help="only these families (repeatable)")
    parser.add_argument("--case", action="append", help="only these cases (repeatable)")
    parser.add_argument("--seed", type=int, default=20261201)
    parser.add_argument("--budget-s", type=float, default=540.0, help="stop starting new cases after this")
    opts = parser.parse_args(argv)
    selected = [c for c in sk.cases() if (opts.split is None or c.split == opts.split)
                and (not opts.family or c.family in opts.family) and (not opts.case or c.name in opts.case)]
    start = time.time()
    with open(os.path.splitext(opts.out)[0] + ".json", "w") as f:
        json.dump(environment(), f, indent=1)
    with open(opts.out, "w", newline="") as out_file:
        writer = csv.DictWriter(out_file, FIELDS)
        writer.writeheader()
        for case in selected:
            if time.time() - start > opts.budget_s:
                print(f"budget spent: skipped {case.name}", flush=True)
                continue
            try:
                run_case(case, writer, out_file, opts.seed)
            except Exception:  # noqa: BLE001 - keep the other cases
                traceback.print_exc()
    print(f"done in {time.time() - start:.0f} s", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
