"""Atomic-add throughput by the sectors each request touches and the lines the requests fall on, on a real GPU.

The cost model's atomic rate (simulator/data/h200_atomic_lines.json, `python -m simulator.calibrate`) was measured
with warp instructions that add 32 fp32 values to one 128-byte line: 4 sectors per request. This times requests of
8, 16 and 32 active lanes (1, 2 and 4 sectors of one line) over 4 to 16,384 distinct lines. On the H200 the sectors
matter only where few lines take the requests (4-64 lines: one-sector requests 1.7-2.1x as fast as whole-line
ones); from 1,024 lines on every size runs at 5.1-5.8 G requests/s (simulator/data/h200_atomic_sectors.json). So a
request is not charged by its sectors; that ceiling is one line per instruction, while holdout10's histogram, whose
instructions touch about 28 lines each, reaches 23 G line requests/s: what limits it is still to be measured.

Run on a machine with a CUDA GPU, torch and triton:  python benchmarks/gpu/atomic_sectors.py OUT.json
"""

from __future__ import annotations

import json
import sys


def main(out_path: str) -> None:
    import torch
    import triton
    import triton.language as tl
    from triton.testing import do_bench

    @triton.jit
    def add_sectors(dst, n_lines, LANES: tl.constexpr, REPS: tl.constexpr):
        pid = tl.program_id(0)
        lane = tl.arange(0, 32)
        for r in range(REPS):
            line = (pid * REPS + r) % n_lines
            tl.atomic_add(dst + line * 32 + lane, 1.0, mask=lane < LANES)

    units = torch.cuda.get_device_properties(0).multi_processor_count
    grid, reps = units * 64, 64
    points = []
    for lines in (4, 16, 64, 256, 1024, 4096, 16384):
        for lanes in (8, 16, 32):
            dst = torch.zeros(lines * 32, device="cuda")
            seconds = do_bench(lambda: add_sectors[(grid,)](dst, lines, LANES=lanes, REPS=reps, num_warps=1),
                               warmup=5, rep=40) * 1e-3
            points.append({"lines": lines, "sectors_per_request": lanes * 4 // 32, "requests": grid * reps,
                           "seconds": seconds, "requests_per_s": grid * reps / seconds})
            print(f"{lines:6d} lines {lanes:2d} lanes: {grid * reps / seconds / 1e9:6.2f} G requests/s", flush=True)
    with open(out_path, "w") as f:
        json.dump({"gpu": torch.cuda.get_device_name(0), "triton": triton.__version__, "points": points}, f, indent=1)


if __name__ == "__main__":
    main(sys.argv[1])
