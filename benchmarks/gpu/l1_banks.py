"""Whether a unit's L1 serves a load's lines one a clock, or its banks' words: a load down 32 rows, on a real GPU.

benchmarks/gpu/l1_lines.py measured 0.97-1.00 lines a clock per SM for loads whose 32 lanes each read word 0 of
a line of their own (or 8-16 lines, the same words): all in one 4-byte bank. A matmul's B tile read down its K rows
(columns wrapped at an odd N: one fp16 element a lane, rows 6,002 bytes apart, holdout18) reaches 1.8-2.0 lines a
clock with the same 32 lines a request. Here every warp reads, over and over, one element a lane from 32 rows
STRIDE bytes apart (all in the L1 after the first touch), with the rows' words in one bank (a stride of 128 or 256
bytes) or spread over the banks (132, 130, 6,002): if the L1 serves words, one bank's, a clock (a wavefront per
distinct line a bank holds), the spread strides run faster; if it serves lines, all run alike. Each pattern runs
at 16 programs of 4 warps a unit, and the spread fp16 one also at 2 and 4, to see where the warps' own round trips
bound it instead. A second kernel streams: each program's warps walk along 32 rows of their own, each warp a column in
four at a time, so a line is read by the next 8-16 loads of all four warps and then left, as a matmul's B tile read
down its K rows and a reversal's tile are (the lines miss once, then hit); the same strides, at 4 and 16 programs a
unit.

Run on a machine with a CUDA GPU, torch and triton:  python benchmarks/gpu/l1_banks.py OUT.json
"""

from __future__ import annotations

import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from l1_lines import sm_clock_hz  # noqa: E402

# (element bytes, row stride in bytes, programs a unit)
PATTERNS = ((4, 128, 16), (4, 256, 16), (4, 132, 16), (4, 136, 16), (4, 160, 16), (2, 128, 16), (2, 130, 16),
            (2, 132, 16), (2, 6002, 16), (2, 6002, 4), (2, 6002, 2), (4, 6004, 16), (2, 2002, 16))
WARPS, ITERS = 4, 4096
# (element bytes, row stride in elements, programs a unit): rows of 4,096 fp32 / 8,192 fp16 and a few elements more
STREAM_PATTERNS = ((4, 4096, 16), (4, 4097, 16), (4, 4104, 16), (2, 8192, 16), (2, 8193, 16), (2, 8195, 16),
                   (4, 4096, 4), (4, 4097, 4), (2, 8192, 4), (2, 8193, 4))
STREAM_ITERS = 1024


def banks_hit(itemsize: int, stride: int) -> tuple[int, int]:
    """(distinct banks the 32 rows' words fall in, most rows one bank holds)."""
    banks = [(row * stride // 4) % 32 for row in range(32)]
    return len(set(banks)), max(banks.count(b) for b in set(banks))


def main(out_path: str) -> None:
    import torch
    import triton
    import triton.language as tl
    from triton.testing import do_bench

    @triton.jit
    def load_rows(src, dst, iters, STRIDE: tl.constexpr, SHIFT: tl.constexpr, BLOCK: tl.constexpr):
        rows = tl.arange(0, BLOCK) % 32
        acc = tl.zeros([BLOCK], tl.float32)
        for i in range(iters):  # two regions in turn, so the load cannot be hoisted; both stay in the L1
            acc += tl.load(src + rows * STRIDE + (i % 2) * SHIFT).to(tl.float32)
        tl.store(dst + tl.program_id(0) * BLOCK + tl.arange(0, BLOCK), acc)

    props = torch.cuda.get_device_properties(0)
    units = props.multi_processor_count
    clock_hz = sm_clock_hz()
    block = 32 * WARPS
    runs = []
    for itemsize, stride, per_unit in PATTERNS:
        dtype = torch.float32 if itemsize == 4 else torch.float16
        step = stride // itemsize
        shift = 128 // itemsize  # the second region a line over: the same banks
        src = torch.randn(32 * step + 2 * shift, device="cuda").to(dtype)
        programs = units * per_unit
        dst = torch.empty(programs * block, device="cuda")
        ms = do_bench(lambda: load_rows[(programs,)](src, dst, ITERS, STRIDE=step, SHIFT=shift, BLOCK=block,
                                                     num_warps=WARPS), warmup=10, rep=60, return_mode="median")
        rate = 32 * programs * WARPS * ITERS / (ms * 1e-3 * clock_hz * units)
        banks, deepest = banks_hit(itemsize, stride)
        print(f"{itemsize} B, rows {stride:5d} B apart ({banks:2d} banks, {deepest:2d} rows in one), {per_unit:2d} "
              f"programs a unit: {ms:7.3f} ms, {rate:5.2f} lines/clk/unit", flush=True)
        runs.append({"itemsize": itemsize, "stride": stride, "programs_per_unit": per_unit, "banks": banks,
                     "rows_per_bank": deepest, "ms": ms, "lines_per_clk": rate})
    @triton.jit
    def stream_rows(src, dst, iters, STRIDE: tl.constexpr, BLOCK: tl.constexpr):
        rows = tl.arange(0, BLOCK) % 32
        warp = tl.arange(0, BLOCK) // 32
        start = src + tl.program_id(0).to(tl.int64) * 32 * STRIDE + rows * STRIDE + warp
        acc = tl.zeros([BLOCK], tl.float32)
        for i in range(iters):
            acc += tl.load(start + i * 4).to(tl.float32)
        tl.store(dst + tl.program_id(0) * BLOCK + tl.arange(0, BLOCK), acc)

    streams = []
    for itemsize, step, per_unit in STREAM_PATTERNS:
        dtype = torch.float32 if itemsize == 4 else torch.float16
        programs = units * per_unit
        src = torch.randn(programs * 32 * step, device="cuda", dtype=dtype)
        dst = torch.empty(programs * block, device="cuda")
        ms = do_bench(lambda: stream_rows[(programs,)](src, dst, STREAM_ITERS, STRIDE=step, BLOCK=block,
                                                       num_warps=WARPS, num_stages=1),
                      warmup=10, rep=60, return_mode="median")
        rate = 32 * programs * WARPS * STREAM_ITERS / (ms * 1e-3 * clock_hz * units)
        banks, deepest = banks_hit(itemsize, step * itemsize)
        print(f"stream {itemsize} B, rows {step * itemsize:6d} B apart ({banks:2d} banks, {deepest:2d} rows in one), "
              f"{per_unit:2d} programs a unit: {ms:7.3f} ms, {rate:5.2f} lines/clk/unit, "
              f"{programs * 32 * step * itemsize / (ms * 1e-3) / 1e12:5.2f} TB/s", flush=True)
        streams.append({"itemsize": itemsize, "stride": step * itemsize, "programs_per_unit": per_unit,
                        "banks": banks, "rows_per_bank": deepest, "ms": ms, "lines_per_clk": rate})
    env = {"gpu": torch.cuda.get_device_name(0), "triton": triton.__version__, "torch": torch.__version__,
           "units": units, "clock_hz": clock_hz, "warps": WARPS, "iterations": ITERS}
    with open(out_path, "w") as f:
        json.dump({"environment": env, "loads": runs, "streams": streams}, f, indent=1)


if __name__ == "__main__":
    main(sys.argv[1])
