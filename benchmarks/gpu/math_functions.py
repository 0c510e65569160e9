"""What fp64 arithmetic and math functions cost on a real GPU, in the clocks of a unit per element.

The library's rotary embedding forms its angles in fp64 (kernels/rope.py: theta ** (-2i / d) through exp2 and log2,
then sin and cos of position x frequency), one [64]-wide vector per program, and the cost model counted fp64 like
fp32. Here every lane of 132 x 8 programs of 8 warps applies one op to 2^24 fp64 elements, 16 times over in a
dependent chain (so the loads and stores are a sixteenth of the work), and the time gives the unit's clocks per
element and op; fp32 runs of the same ops beside them show the ratio.

On the H200 (simulator/data/h200_math_functions.json): fp64 exp2 takes 0.31 unit clocks an element, exp 0.30,
log2 0.79, sin 0.56, cos 0.59, a division 0.21 (20, 19, 50, 36, 38 and 13 instructions of the 64-lane fp64 pipe);
fp32 log2 0.27, sin 0.29 and cos 0.28 (Triton calls libdevice's exact routines: 34-37 instructions of the 128-lane
FMA pipe, where the model counted one special-function instruction), while fp32 exp2 and exp (0.07) and the fma and
mul chains of both types are bound by the loads and stores here.

Run on a machine with a CUDA GPU, torch and triton:  python benchmarks/gpu/math_functions.py OUT.json
"""

from __future__ import annotations

import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from l1_lines import sm_clock_hz  # noqa: E402

OPS = ("fma", "mul", "exp2", "log2", "sin", "cos", "exp", "div", "floor")
CHAIN = 16
N = 1 << 24


def main(out_path: str) -> None:
    import torch
    import triton
    import triton.language as tl
    from triton.testing import do_bench

    @triton.jit
    def chain(x_ptr, y_ptr, n, OP: tl.constexpr, STEPS: tl.constexpr, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        x = tl.load(x_ptr + offs, mask=offs < n, other=1.0)
        for _ in tl.static_range(STEPS):
            if OP == "fma":
                x = x * 0.999 + 0.001
            elif OP == "mul":
                x = x * 1.0001
            elif OP == "exp2":
                x = tl.exp2(x) * 0.25
            elif OP == "log2":
                x = tl.log2(x + 2.0)
            elif OP == "sin":
                x = tl.sin(x) + 1.5
            elif OP == "cos":
                x = tl.cos(x) + 0.5
            elif OP == "exp":
                x = tl.exp(x) * 0.25
            elif OP == "div":
                x = 1.0 / (x + 2.0)
            else:
                x = tl.floor(x * 3.7) * 0.25 + 0.5
        tl.store(y_ptr + offs, x, mask=offs < n)

    props = torch.cuda.get_device_properties(0)
    units, clock = props.multi_processor_count, sm_clock_hz()
    points = []
    for dtype in (torch.float64, torch.float32):
        x = torch.rand(N, device="cuda", dtype=dtype) + 0.5
        y = torch.empty_like(x)
        for op in OPS:
            block = 1024
            grid = (triton.cdiv(N, block),)
            ms = do_bench(lambda o=op: chain[grid](x, y, N, OP=o, STEPS=CHAIN, BLOCK=block, num_warps=8),
                          warmup=5, rep=40)
            clocks = ms * 1e-3 * clock * units / (N * CHAIN)  # a unit's clocks per element and op
            points.append({"dtype": str(dtype).removeprefix("torch."), "op": op, "ms": ms,
                           "unit_clocks_per_element": clocks})
            print(f"{points[-1]['dtype']:8s} {op:6s} {ms:8.3f} ms  {clocks:7.3f} unit clocks an element", flush=True)
    environment = {"gpu": props.name, "units": units, "sm_clock_hz": clock, "torch": torch.__version__,
                   "triton": triton.__version__, "elements": N, "chain": CHAIN}
    with open(out_path, "w") as f:
        json.dump({"environment": environment, "points": points}, f, indent=1)


if __name__ == "__main__":
    main(sys.argv[1])
