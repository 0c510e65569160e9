"""Why a loop's loads wait apart: the GPU compiler's register target (simulator.occupancy.register_target).

Runs on a CPU with Triton installed (no GPU: Triton builds for sm_90 from a given target, and its wheel carries
ptxas and cuobjdump):
    WAVETILE_SWEEP_BACKEND=triton python benchmarks/gpu/register_target.py
The sweep's column-sum kernel (16 x 128 fp32 tiles over 4,000 x 6,000, its arguments specialized as a launch
would: offline_build.py) is built once; its PTX is then rebuilt by ptxas with only the program size it declares
(.reqntid) changed. For 32 threads ptxas keeps the four loads of an iteration in flight together (57 registers, one
wait a body); for 64 threads and more it reaches 40 registers by waiting for each load before issuing the next
(three waits): it aims at the registers that let a unit hold the most warps of such programs (64 a thread for 1-warp
programs, of which a unit holds at most 32; 32 for larger ones), scheduling the loads apart to get there.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tempfile

os.environ.setdefault("WAVETILE_SWEEP_BACKEND", "triton")
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import numpy as np  # noqa: E402
import offline_build  # noqa: E402
import sass_loops  # noqa: E402
import sweep_kernels  # noqa: E402


def column_sum_ptx(block_m: int = 16, block_n: int = 128, num_warps: int = 4) -> str:
    """The column-sum kernel's PTX for sm_90 over 4,000 x 6,000 fp32, built without a GPU (offline_build)."""
    tensor = np.empty(1, np.float32)  # only its element type and alignment enter the build
    kernel = offline_build.build(sweep_kernels.colsum_kernel, (tensor, tensor, 4000, 6000),
                                 {"BLOCK_M": block_m, "BLOCK_N": block_n, "num_warps": num_warps})
    return kernel.asm["ptx"]


def build(ptx: str, threads: int) -> tuple[int, list[dict]]:
    """(registers, loops with their loads and waits) of the PTX assembled for programs of `threads` threads."""
    ptx = re.sub(r"\.reqntid \d+", f".reqntid {threads}", ptx)
    with tempfile.TemporaryDirectory() as folder:
        source, cubin = os.path.join(folder, "k.ptx"), os.path.join(folder, "k.cubin")
        with open(source, "w") as f:
            f.write(ptx)
        log = subprocess.run([offline_build.tool("ptxas"), "-arch=sm_90a", "-v", source, "-o", cubin],
                             capture_output=True, text=True, check=True).stderr
        sass = subprocess.run([offline_build.tool("cuobjdump"), "-sass", cubin], capture_output=True, text=True,
                              check=True).stdout
    return int(re.search(r"Used (\d+) registers", log).group(1)), sass_loops.loops(sass)


def main() -> int:
    ptx = column_sum_ptx()
    print("threads  registers  loads  waits a body")
    for threads in (32, 64, 128, 256, 1024):
        registers, loops = build(ptx, threads)
        main_loop = max(loops, key=lambda loop: loop["load_bytes"])
        print(f"{threads:7d}  {registers:9d}  {main_loop['loads']:5d}  {main_loop['waits']:5d}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
