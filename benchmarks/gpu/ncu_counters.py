"""What the H200 itself counted for sweep configs: Nsight Compute metrics beside the simulator's counters.

Run on the GPU machine (ncu, torch and triton there):
    WAVETILE_SWEEP_BACKEND=triton python benchmarks/gpu/ncu_counters.py OUT.jsonl [--case C ...] [--every N]
It asks ncu which of METRICS the chip has, then runs itself under `ncu --clock-control none --cache-control all`
(the card's own clocks, caches flushed before each replay as do_bench flushes the L2), launching each selected
config once. Every launch's metrics are written as one JSON line with its case and config. The metrics are
what the cost model's counters claim to know (DRAM bytes, L2 hits, sectors, instructions by pipe, occupancy,
stall reasons), so each part of the model can be checked on its own (simulator/data/h200_ncu.jsonl).
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import subprocess
import sys

os.environ.setdefault("WAVETILE_SWEEP_BACKEND", "triton")
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import numpy as np  # noqa: E402
import sweep_cases as sk  # noqa: E402

METRICS = (
    "gpu__time_duration.sum", "sm__cycles_elapsed.avg", "sm__cycles_active.avg",
    "dram__bytes_read.sum", "dram__bytes_write.sum",
    "lts__t_sectors_srcunit_tex_op_read.sum", "lts__t_sectors_srcunit_tex_op_read_lookup_hit.sum",
    "lts__t_sectors_srcunit_tex_op_write.sum", "lts__t_sectors_srcunit_tex_op_atom.sum",
    "lts__t_sectors_srcunit_tex_op_red.sum",
    "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum", "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum",
    "l1tex__t_sectors_pipe_lsu_mem_global_op_ld_lookup_hit.sum",
    "l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum", "l1tex__t_requests_pipe_lsu_mem_global_op_st.sum",
    "l1tex__data_pipe_lsu_wavefronts_mem_shared.sum", "l1tex__data_bank_conflicts_pipe_lsu_mem_shared.sum",
    "l1tex__data_pipe_lsu_wavefronts.sum", "l1tex__t_output_wavefronts_pipe_lsu_mem_global_op_ld.sum",
    "smsp__inst_executed.sum", "smsp__inst_executed_pipe_alu.sum", "smsp__inst_executed_pipe_fma.sum",
    "smsp__inst_executed_pipe_fmaheavy.sum", "smsp__inst_executed_pipe_xu.sum", "smsp__inst_executed_pipe_lsu.sum",
    "smsp__inst_executed_pipe_adu.sum", "smsp__inst_executed_pipe_cbu.sum", "smsp__inst_executed_pipe_uniform.sum",
    "smsp__inst_executed_pipe_tensor_op_hmma.sum", "smsp__inst_executed_pipe_tensor_op_gmma.sum",
    "smsp__inst_executed_pipe_fp16.sum", "smsp__inst_executed_op_ldgsts.sum", "smsp__inst_executed_op_global_ld.sum",
    "smsp__inst_executed_op_shared_ld.sum", "smsp__inst_executed_op_shared_st.sum",
    "sm__warps_active.avg.pct_of_peak_sustained_active", "smsp__issue_active.avg.pct_of_peak_sustained_active",
    "sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active",
    "sm__pipe_tensor_op_gmma_cycles_active.avg.pct_of_peak_sustained_active",
    "launch__registers_per_thread", "launch__occupancy_limit_registers", "launch__occupancy_limit_shared_mem",
    "launch__occupancy_limit_warps", "launch__occupancy_limit_blocks", "launch__waves_per_multiprocessor",
    "launch__shared_mem_per_block", "launch__registers_per_thread_allocated", "launch__grid_size",
    "smsp__average_warp_latency_per_inst_issued.ratio",
    "smsp__average_warps_issue_stalled_long_scoreboard_per_issue_active.ratio",
    "smsp__average_warps_issue_stalled_barrier_per_issue_active.ratio",
    "smsp__average_warps_issue_stalled_math_pipe_throttle_per_issue_active.ratio",
    "smsp__average_warps_issue_stalled_lg_throttle_per_issue_active.ratio",
    "smsp__average_warps_issue_stalled_short_scoreboard_per_issue_active.ratio",
    "smsp__average_warps_issue_stalled_wait_per_issue_active.ratio",
    "smsp__average_warps_issue_stalled_mio_throttle_per_issue_active.ratio",
    "smsp__average_warps_issue_stalled_not_selected_per_issue_active.ratio",
    "smsp__average_warps_issue_stalled_selected_per_issue_active.ratio",
    "smsp__average_warps_issue_stalled_dispatch_stall_per_issue_active.ratio",
    "smsp__average_warps_issue_stalled_no_instruction_per_issue_active.ratio",
    "smsp__average_warps_issue_stalled_membar_per_issue_active.ratio",
    "smsp__average_warps_issue_stalled_sleeping_per_issue_active.ratio",
    "smsp__average_warps_issue_stalled_tex_throttle_per_issue_active.ratio",
    "smsp__average_warps_issue_stalled_drain_per_issue_active.ratio",
    "smsp__average_warps_issue_stalled_imc_miss_per_issue_active.ratio",
    "smsp__average_warps_issue_stalled_branch_resolving_per_issue_active.ratio",
)
# groups whose every config is counted; the others every --every-th config
FULL = ("layernorm", "attention")


def available(metrics: tuple[str, ...]) -> list[str]:
    """The metrics whose base name this machine's ncu lists (the rollup suffix is kept)."""
    listed = subprocess.run(["ncu", "--query-metrics", "--csv"], capture_output=True, text=True).stdout
    names = {line.split(",")[0].strip('"') for line in listed.splitlines()}
    return [m for m in metrics if m.split(".")[0] in names]


def selection(cases: list[str] | None, every: int) -> list[tuple[sk.Case, list[dict]]]:
    """The configs to count: FULL families whole, others thinned; held-out splits only when named."""
    chosen = []
    for case in sk.cases():
        if (cases and case.name not in cases) or (not cases and case.split.startswith("holdout")):
            continue
        configs = case.configs if case.family in FULL or cases else case.configs[::every]
        chosen.append((case, configs))
    return chosen


def launch_all(order_path: str, cases: list[str] | None, every: int, seed: int, budget_s: float) -> None:
    """Inside ncu: launch each selected config once, writing (case, config, launched) in launch order; no new
    case starts after budget_s."""
    import time

    import torch
    from sweep import to_device

    order, start = [], time.time()
    for case, configs in selection(cases, every):
        if time.time() - start > budget_s:
            print(f"budget spent: skipped {case.name}", flush=True)
            continue
        arrays = case.inputs(np.random.default_rng(seed))
        dev = {name: to_device(a) for name, a in arrays.items()}
        for cfg in configs:
            args, kwargs = sk.launch_args(case, dev, cfg)
            entry = {"case": case.name, "config": json.dumps(cfg, sort_keys=True), "launched": True,
                     "kernel": getattr(case.kernel, "__name__", "")}
            try:
                case.kernel[case.grid(cfg)](*args, **kwargs)
                torch.cuda.synchronize()
            except Exception as exc:  # noqa: BLE001 - a config that cannot launch has no counters
                entry.update(launched=False, error=f"{type(exc).__name__}: {str(exc)[:120]}")
            order.append(entry)
        del dev
        torch.cuda.empty_cache()
    with open(order_path, "w") as f:
        json.dump(order, f)


def parse(csv_path: str, order_path: str, out_path: str) -> int:
    """Join ncu's raw CSV (one row per profiled launch, in launch order) with the launch order."""
    with open(csv_path, newline="") as f:
        lines = [line for line in f if line.startswith('"')]  # ncu prefixes its own log lines with ==PROF==
    rows = list(csv.DictReader(lines))
    order = [e for e in json.load(open(order_path)) if e["launched"]]
    ours = {e.get("kernel") for e in order}  # other launches (a library's own kernels) are profiled too
    rows = [r for r in rows if r.get("ID", "").isdigit() and (None in ours or r.get("Kernel Name") in ours)]
    written = 0
    with open(out_path, "w") as out:
        for entry, row in zip(order, rows):
            metrics = {}
            for key in METRICS:  # ncu's raw page has every device attribute too: keep what was asked
                try:
                    metrics[key] = float(row[key].replace(",", ""))
                except (KeyError, ValueError):
                    pass
            out.write(json.dumps({"case": entry["case"], "config": entry["config"], "kernel": row.get("Kernel Name"),
                                  "metrics": metrics}) + "\n")
            written += 1
    if len(order) != len(rows):
        print(f"warning: {len(order)} launches but {len(rows)} profiled rows", flush=True)
    return written


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", help="JSONL to write (the raw ncu CSV and the launch order go beside it)")
    parser.add_argument("--case", action="append", help="only these cases, every config")
    parser.add_argument("--every", type=int, default=4, help="every N-th config of groups outside FULL")
    parser.add_argument("--seed", type=int, default=20261201)
    parser.add_argument("--budget-s", type=float, default=400.0, help="start no new case after this")
    parser.add_argument("--inner", action="store_true", help=argparse.SUPPRESS)
    opts = parser.parse_args(argv)
    stem = os.path.splitext(opts.out)[0]
    if opts.inner:
        launch_all(stem + ".order.json", opts.case, opts.every, opts.seed, opts.budget_s)
        return 0
    metrics = available(METRICS)
    print(f"{len(metrics)} of {len(METRICS)} metrics available", flush=True)
    inner = [sys.executable, os.path.abspath(__file__), opts.out, "--inner", "--every", str(opts.every),
             "--seed", str(opts.seed), "--budget-s", str(opts.budget_s)]
    inner += [a for c in (opts.case or []) for a in ("--case", c)]
    command = ["ncu", "--clock-control", "none", "--cache-control", "all", "--metrics", ",".join(metrics),
               "--csv", "--page", "raw", "--log-file", stem + ".ncu.csv", *inner]
    done = subprocess.run(command)
    if done.returncode:
        print(f"ncu exited {done.returncode}", flush=True)
    print(f"{parse(stem + '.ncu.csv', stem + '.order.json', opts.out)} launches written", flush=True)
    return done.returncode


if __name__ == "__main__":
    sys.exit(main())
