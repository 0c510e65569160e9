"""How many cache lines a unit's L1 serves per clock when a warp's access touches several, on a real GPU.

Every warp of a launch loads, over and over, 32 fp32 elements that lie on LINES different 128-byte lines (SECTORS
32-byte sectors of each): the few lines all warps read stay in every unit's L1, so the time is the L1's, and the
lines it serves per clock and unit are LINES x requests / (time x clock x units). On the H200 loads of 8, 16 and
32 lines a request reach 0.97-1.00 lines a clock, whatever the sectors of each line; with fewer lines the warps'
own round trips bound this kernel first (simulator/data/h200_l1_lines.json). Every lane here reads a word whose
bank it shares with the other lines' words, so each line takes a wavefront of the L1's data banks: the cost model
charges wavefronts at that rate (MachineSpec.l1_wavefronts_per_clk); benchmarks/gpu/l1_banks.py measures the lines
whose words spread over the banks, which go faster (MachineSpec.l1_lines_per_clk). A tile laid down its rows
(Triton's layout where no dim of the pointer is contiguous) reads 32 lines a request where a coalesced one reads 1
to 4. A second kernel stores
runs of 4 or 16 bytes a lane to 1-16 lines a request, every sector written whole: those go at 0.14-0.41 lines a
clock, bound by the L2 they pass through to, so stores are left to the L2 term.

Run on a machine with a CUDA GPU, torch and triton:  python benchmarks/gpu/l1_lines.py OUT.json
"""

from __future__ import annotations

import json
import subprocess
import sys

LOAD_PATTERNS = ((1, 1), (1, 4), (2, 4), (4, 1), (4, 4), (8, 1), (8, 4), (16, 1), (16, 2), (32, 1))  # lines, sectors
STORE_PATTERNS = ((1, 1), (2, 1), (4, 1), (4, 4), (8, 4), (16, 4))  # lines, elements a lane stores
WARPS, ITERS = 4, 4096


def main(out_path: str) -> None:
    import torch
    import triton
    import triton.language as tl
    from triton.testing import do_bench

    @triton.jit
    def load_lines(src, dst, iters, period, LINES: tl.constexpr, SECTORS: tl.constexpr, BLOCK: tl.constexpr):
        lane = tl.arange(0, BLOCK) % 32
        line, sector = lane % LINES, (lane // LINES) % SECTORS
        word = (lane // (LINES * SECTORS)) % 8
        offs = line * 32 + sector * 8 + word
        acc = tl.zeros([BLOCK], tl.float32)
        for i in range(iters):  # two regions in turn, so the load cannot be hoisted; both stay in the L1
            acc += tl.load(src + offs + (i % period) * (32 * LINES))
        tl.store(dst + tl.program_id(0) * BLOCK + tl.arange(0, BLOCK), acc)

    @triton.jit
    def store_lines(dst, iters, period, LINES: tl.constexpr, VEC: tl.constexpr, BLOCK: tl.constexpr):
        lane = tl.arange(0, BLOCK) % 32
        per_line = 32 // LINES  # lanes of a line, VEC elements each
        starts = tl.multiple_of((lane % LINES) * 32 + (lane // LINES) % per_line * VEC, VEC)
        offs = starts[:, None] + tl.arange(0, VEC)[None, :]
        value = tl.zeros([BLOCK, VEC], tl.float32) + tl.program_id(0).to(tl.float32)
        base = dst + tl.program_id(0) * (64 * LINES)
        for i in range(iters):  # two regions in turn, so no store is seen to overwrite the one before it
            tl.store(base + offs + (i % period) * (32 * LINES), value + i)

    props = torch.cuda.get_device_properties(0)
    units = props.multi_processor_count
    clock_hz = sm_clock_hz()
    programs = units * 16
    block = 32 * WARPS
    src = torch.randn(64 * 32, device="cuda")
    dst = torch.empty(programs * block, device="cuda")
    out = torch.empty(programs * 64 * 16, device="cuda")

    def timed(launch, lines: int, label: str, **row) -> dict:
        """One pattern's median time and the lines a unit serves per clock: every warp makes ITERS requests."""
        ms = do_bench(launch, warmup=10, rep=60, return_mode="median")
        rate = lines * programs * WARPS * ITERS / (ms * 1e-3 * clock_hz * units)
        print(f"{label}: {ms:7.3f} ms, {rate:5.2f} lines/clk/unit", flush=True)
        return {"lines": lines, **row, "ms": ms, "lines_per_clk": rate}

    loads = [timed(lambda lines=lines, sectors=sectors: load_lines[(programs,)](
                       src, dst, ITERS, 2, LINES=lines, SECTORS=sectors, BLOCK=block, num_warps=WARPS),
                   lines, f"load  {lines:2d} lines x {sectors} sectors a request", sectors_per_line=sectors)
             for lines, sectors in LOAD_PATTERNS]
    stores = [timed(lambda lines=lines, vec=vec: store_lines[(programs,)](
                        out, ITERS, 2, LINES=lines, VEC=vec, BLOCK=block, num_warps=WARPS),
                    lines, f"store {lines:2d} lines x {4 * vec:2d} B a lane", lane_bytes=4 * vec)
              for lines, vec in STORE_PATTERNS]
    env = {"gpu": torch.cuda.get_device_name(0), "triton": triton.__version__, "torch": torch.__version__,
           "units": units, "clock_hz": clock_hz, "warps": WARPS, "programs": programs, "iterations": ITERS}
    with open(out_path, "w") as f:
        json.dump({"environment": env, "loads": loads, "stores": stores}, f, indent=1)


def sm_clock_hz() -> float:
    """The SM clock nvidia-smi reports now (the H200 runs at its 1,980 MHz boost under these loads)."""
    text = subprocess.run(["nvidia-smi", "--query-gpu=clocks.max.sm", "--format=csv,noheader,nounits"],
                          capture_output=True, text=True, check=True).stdout
    return float(text.split()[0]) * 1e6


if __name__ == "__main__":
    main(sys.argv[1])
