"""How much of the L2 a reuse can count on, and how much written data a launch leaves in it: measured with ncu.

Run on the GPU machine:  python benchmarks/gpu/l2_reuse.py OUT.json
`reread` walks a buffer of F bytes twice in the same order with every unit busy, so each sector is reused at a
distance of F bytes of other traffic; the DRAM bytes of the second pass give the hit rate of a reuse at that
distance. `reread_other` is the same walk with the second pass's blocks read by another program (`shift` programs
on, so another SM): whether a line read from two SMs costs the L2 more room than one read from one (a copy in each
half of the L2). `copy` reads F bytes and writes F bytes once; the DRAM bytes written during the launch show how much
dirty data the L2 still holds when the launch ends (written back later, outside the launch's time). Both run
under `ncu --cache-control all` (the L2 starts empty, as after do_bench's flush); the result feeds the L2 model's
effective capacity (simulator/data/h200_l2_reuse.json, presets.py).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

SIZES_MB = (8, 16, 20, 24, 28, 32, 36, 40, 44, 48, 52, 56, 60, 64, 72, 80, 96, 128, 192)
OTHER_SIZES_MB = (16, 20, 24, 28, 32, 36, 40, 44, 48, 56)  # reread_other's: SIZES_MB gains 20 and 28 for it
METRICS = ("dram__bytes_read.sum", "dram__bytes_write.sum", "lts__t_sectors_srcunit_tex_op_read.sum",
           "lts__t_sectors_srcunit_tex_op_read_lookup_hit.sum", "gpu__time_duration.sum")


def launch_all() -> list[dict]:
    """Inside ncu: one reread and one copy launch per size, in order."""
    import torch
    import triton
    import triton.language as tl

    @triton.jit
    def reread(src, dst, n_blocks, BLOCK: tl.constexpr):
        pid = tl.program_id(0)
        step = tl.num_programs(0)
        acc = tl.zeros([BLOCK], tl.float32)
        for _ in range(2):
            for b in range(pid, n_blocks, step):
                acc += tl.load(src + b * BLOCK + tl.arange(0, BLOCK))
        tl.store(dst + pid * BLOCK + tl.arange(0, BLOCK), acc)

    @triton.jit
    def reread_other(src, dst, n_blocks, shift, BLOCK: tl.constexpr):
        pid = tl.program_id(0)
        step = tl.num_programs(0)
        acc = tl.zeros([BLOCK], tl.float32)
        for b in range(pid, n_blocks, step):
            acc += tl.load(src + b * BLOCK + tl.arange(0, BLOCK))
        for b in range((pid + shift) % step, n_blocks, step):
            acc += tl.load(src + b * BLOCK + tl.arange(0, BLOCK))
        tl.store(dst + pid * BLOCK + tl.arange(0, BLOCK), acc)

    @triton.jit
    def copy(src, dst, n_blocks, BLOCK: tl.constexpr):
        pid = tl.program_id(0)
        step = tl.num_programs(0)
        for b in range(pid, n_blocks, step):
            offs = b * BLOCK + tl.arange(0, BLOCK)
            tl.store(dst + offs, tl.load(src + offs))

    units = torch.cuda.get_device_properties(0).multi_processor_count
    block, grid = 1024, units * 8
    order = []
    for mb in SIZES_MB:
        n = mb * (1 << 20) // 4
        src = torch.randn(n, device="cuda")
        out = torch.empty(grid * block, device="cuda")
        reread[(grid,)](src, out, n // block, BLOCK=block, num_warps=4)
        order.append({"kernel": "reread", "mb": mb})
        if mb in OTHER_SIZES_MB:
            for shift in (1, grid // 2 + 1):
                reread_other[(grid,)](src, out, n // block, shift, BLOCK=block, num_warps=4)
                order.append({"kernel": "reread_other", "mb": mb, "shift": shift})
        dst = torch.empty_like(src)
        copy[(grid,)](src, dst, n // block, BLOCK=block, num_warps=4)
        order.append({"kernel": "copy", "mb": mb})
        torch.cuda.synchronize()
        del src, dst, out
    return order


def main(argv: list[str]) -> int:
    out = argv[0]
    if argv[1:2] == ["--parse"]:  # python l2_reuse.py OUT.json --parse: redo the join from OUT's CSV and order
        return parse(out)
    if argv[1:2] == ["--inner"]:
        with open(out + ".order.json", "w") as f:
            json.dump(launch_all(), f)
        return 0
    csv_path = out + ".ncu.csv"
    subprocess.run(["ncu", "--clock-control", "none", "--cache-control", "all", "--metrics", ",".join(METRICS),
                    "--csv", "--page", "raw", "--log-file", csv_path, sys.executable, os.path.abspath(__file__), out,
                    "--inner"], check=False)
    return parse(out)


def parse(out: str) -> int:
    """Join ncu's CSV with the launch order into OUT."""
    import csv

    csv_path = out + ".ncu.csv"

    with open(csv_path, newline="") as f:  # torch's own launches (randn) are profiled too: keep ours
        rows = [r for r in csv.DictReader(line for line in f if line.startswith('"'))
                if r.get("ID", "").isdigit() and r.get("Kernel Name") in ("reread", "reread_other", "copy")]
    order = json.load(open(out + ".order.json"))
    results = []
    for entry, row in zip(order, rows):
        entry.update({m: float(row[m].replace(",", "")) for m in METRICS if m in row})
        results.append(entry)
        print(json.dumps(entry), flush=True)
    with open(out, "w") as f:
        json.dump(results, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
