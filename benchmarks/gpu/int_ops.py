"""How many H200 instructions integer ops take: SASS of small Triton kernels.

    python benchmarks/gpu/int_ops.py OUT.json

Each probe kernel is compiled for the GPU (Triton, no launch) once per op, with one and with eight elements a thread
(a [128] and a [1024] tile on 4 warps), and its cubin disassembled (cuobjdump). How the instruction count (NOPs left
out) grows from one to eight elements, less a plain copy's growth, is what the op costs an element; the rest is set
up once a thread (a runtime divisor's reciprocal). Ops: integer division and remainder by a runtime divisor and by
constants, which jit/isel.py counts by these figures (simulator/data/h200_int_ops.json), and 64-bit adds, multiplies
and compares of widened 32-bit values, which cost no more than a 32-bit op does beside the widening (not charged).
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile

import torch
import triton
import triton.language as tl


@triton.jit
def unary_probe(x_ptr, y_ptr, d, s64, OP: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    if OP == "copy":
        y = x
    elif OP == "add32":
        y = x + d
    elif OP == "div":
        y = x // d
    elif OP == "rem":
        y = x % d
    elif OP == "divrem":
        y = x // d + x % d
    elif OP == "div7":
        y = x // 7
    elif OP == "div8":
        y = x // 8
    elif OP == "rem7":
        y = x % 7
    elif OP == "cast64":
        y = x.to(tl.int64)
    elif OP == "add64":
        y = x.to(tl.int64) + s64
    elif OP == "mul64":
        y = x.to(tl.int64) * s64
    elif OP == "mul32to64":
        y = x.to(tl.int64) * d
    elif OP == "cmp64":
        y = tl.where(x.to(tl.int64) * s64 < s64 + d, 1, 0)
    elif OP == "cmp64base":
        y = tl.where(x.to(tl.int64) * s64 < s64, 1, 0)
    else:
        y = x.to(tl.int64) // s64
    tl.store(y_ptr + offs, y)



def count(kernel, *args, **meta) -> int:
    """Instructions of the kernel's machine code, as cuobjdump lists them."""
    compiled = kernel.warmup(*args, grid=(1,), **meta)
    with tempfile.NamedTemporaryFile(suffix=".cubin") as cubin:
        cubin.write(compiled.asm["cubin"])
        cubin.flush()
        sass = subprocess.run(["cuobjdump", "-sass", cubin.name], capture_output=True, text=True, check=True).stdout
    listing = [line for line in sass.splitlines() if "/*0" in line and ";" in line]
    return sum(1 for line in listing if " NOP" not in line)


def main(out: str) -> None:
    x = torch.arange(1, 1025, dtype=torch.int32, device="cuda")
    y = torch.empty_like(x)
    ops = ["copy", "add32", "div", "rem", "divrem", "div7", "div8", "rem7", "cast64", "add64", "mul64", "mul32to64",
           "cmp64base", "cmp64", "div64"]
    y64 = torch.empty(1024, dtype=torch.int64, device="cuda")
    counts = {(op, block): count(unary_probe, x, y64 if "64" in op else y, 5, 3, OP=op, BLOCK=block, num_warps=4)
              for op in ops for block in (128, 1024)}
    # one element a thread, then eight: the growth is an element's cost, the rest is set up once per thread
    # (a runtime divisor's reciprocal)
    grown = {op: (counts[op, 1024] - counts[op, 128]) / 7 for op in ops}
    per_element = {op: grown[op] - grown["copy"] for op in ops}
    once = {op: counts[op, 128] - counts["copy", 128] - per_element[op] for op in ops}
    counts = {f"{op}@{block}": n for (op, block), n in counts.items()}
    result = {"triton": triton.__version__, "torch": torch.__version__, "gpu": torch.cuda.get_device_name(),
              "sass": counts, "per_element": per_element, "once": once}
    print(json.dumps(result, indent=1))
    with open(out, "w") as f:
        json.dump(result, f, indent=1)


if __name__ == "__main__":
    main(sys.argv[1])
