"""How fast the GPU starts programs: the floor under launches of many short programs.

Run on the GPU machine:  python benchmarks/gpu/dispatch_rate.py OUT.json
The H200 sweeps show a floor: launches of 131,072 one-row programs (RMSNorm over 128-wide heads, RoPE, an
embedding gather) take 83 us whatever their warps or bytes, 0.63 ns a program, while the model gave them 36-50 us.
Here programs that do nothing but store their id (`tiny`) or nothing at all (`empty`) are launched back to back at
grids of 4,096 to 2,097,152 programs and 1 to 32 warps; the slope of time over programs is what the block
scheduler takes per program, the intercept the launch's fixed cost. Timed with CUDA events over back-to-back calls.
"""

from __future__ import annotations

import json
import pathlib
import sys

sys.path.insert(0, str(pathlib.Path(__file__).parents[2]))

from simulator.calibrate import program_starts, seconds_per_call  # noqa: E402

GRIDS = tuple(1 << k for k in range(12, 22))
WARPS = (1, 2, 4, 8, 16, 32)


def measure() -> dict:
    import torch
    import triton
    import triton.language as tl

    @triton.jit
    def tiny(dst):
        pid = tl.program_id(0)
        tl.store(dst + pid, pid)

    @triton.jit
    def empty(dst):
        pass

    dst = torch.empty(max(GRIDS), dtype=torch.int32, device="cuda")
    points = []
    for name, kernel in (("tiny", tiny), ("empty", empty)):
        for warps in WARPS:
            for grid in GRIDS:
                seconds = seconds_per_call(lambda: kernel[(grid,)](dst, num_warps=warps), iters=30)
                points.append({"kernel": name, "num_warps": warps, "programs": grid, "seconds": seconds})
    props = torch.cuda.get_device_properties(0)
    return {"device": props.name, "units": props.multi_processor_count, "torch": torch.__version__,
            "triton": triton.__version__, "cuda": torch.version.cuda, "points": points}


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print(__doc__)
        return 2
    result = measure()
    pathlib.Path(argv[0]).write_text(json.dumps(result, indent=1) + "\n")
    for (kernel, warps), seconds in program_starts(result["points"]).items():
        print(f"{kernel:6s} {warps:2d} warps: {seconds * 1e9:6.3f} ns a program")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
