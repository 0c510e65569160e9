"""How fast a few warps stream a loop whose every iteration waits for its loads, by loads a thread: on a real GPU.

simulator/calibrate.py's concurrency curve measured the DRAM bandwidth a unit reaches against the bytes it keeps in
flight, with 1-4 sixteen-byte loads a thread a round. Row kernels that give a whole row to one program of few warps
(a sampling softmax over 151,936 logits, 64 rows; column sums over 2,048 columns, 4-16 programs) load 8-32 vectors a
thread every iteration, and run there 2-5x slower than the curve's bytes in flight say. Here one program (or two) a
unit walks its own slice of a 1 GiB fp32 buffer in rounds of BLOCK = 32 x num_warps x 4 x VECTORS elements, adding
each round into a running BLOCK-wide sum (the loop is not software-pipelined: no dot, no num_stages hint), for
num_warps 1-16 and VECTORS 1-32 sixteen-byte loads a thread. Each point records the bandwidth and what Triton's
compiler made of the loop (registers, spills): a thread's loads of one round can only be in flight together while
their destination registers are free.

On the H200 (simulator/data/h200_warp_streams.json), one program of one warp a unit takes 0.11-0.12 us a round
at 1-2 vectors a thread (the backend unrolls the small body, several rounds in flight), 0.25 us at 4, then 0.82,
1.38 and 2.42 us at 8, 16 and 32: the unit moves 2.5-3.4 bytes a clock, where the concurrency curve gives 4-16 KB
in flight about 16. Two warps reach 4.5-6.0 bytes a clock, four 8-9, eight 12-13, sixteen the DRAM's 4.2 TB/s.
Triton's builds keep 63-168 registers there, fewer than a round's loads and the running sum need together (two an
element), so a round's loads leave in batches. The cost model, which keeps all of a round's loads in flight, times
the 1-2 warp, 16-32-vector rounds 1.7-2.3x fast. A cap of about 3 KB in flight a warp fits these points (mean
|log error| 0.28 -> 0.22) and ranks the row kernels better (softmax, row and column sums, mean pooling), but paged
decode's builds (150-213 registers, no running tile beside the loads) keep 16 KB a warp in flight and rank
inversely under it; what bounds a round's loads in flight is the registers the compiler gives them, which the
register estimate does not yet say, so the cap is not in the model.

Run on a machine with a CUDA GPU, torch and triton:  python benchmarks/gpu/warp_streams.py OUT.json
"""

from __future__ import annotations

import json
import sys

WARPS = (1, 2, 4, 8, 16)
VECTORS = (1, 2, 4, 8, 16, 32)
PER_UNIT = (1, 2)
TOTAL = 1 << 28  # fp32 elements: 1 GiB, read once per launch, L2 flushed by do_bench


def main(out_path: str) -> None:
    import torch
    import triton
    import triton.language as tl
    from triton.testing import do_bench

    @triton.jit
    def rounds(src, dst, chunks, BLOCK: tl.constexpr):
        pid = tl.program_id(0)
        acc = tl.zeros([BLOCK], tl.float32)
        for i in range(chunks):
            acc += tl.load(src + (pid.to(tl.int64) * chunks + i) * BLOCK + tl.arange(0, BLOCK))
        tl.store(dst + pid * BLOCK + tl.arange(0, BLOCK), acc)

    props = torch.cuda.get_device_properties(0)
    units = props.multi_processor_count
    src = torch.randn(TOTAL, device="cuda")
    points = []
    for per_unit in PER_UNIT:
        for warps in WARPS:
            if per_unit * warps > 32:
                continue
            for vectors in VECTORS:
                block = 32 * warps * 4 * vectors
                grid = units * per_unit
                chunks = max(4, TOTAL // (grid * block))
                dst = torch.empty(grid * block, device="cuda")
                compiled = rounds[(grid,)](src, dst, chunks, BLOCK=block, num_warps=warps)
                want = src[:grid * chunks * block].view(grid, chunks, block).sum(dim=1).flatten()
                error = float((dst - want).abs().max() / want.abs().max())
                ms = do_bench(lambda g=grid, d=dst, c=chunks, b=block, w=warps: rounds[(g,)](src, d, c, BLOCK=b,
                                                                                             num_warps=w),
                              warmup=5, rep=40)
                moved = grid * chunks * block * 4
                points.append({"num_warps": warps, "vectors": vectors, "programs_per_unit": per_unit,
                               "bytes_per_round": block * 4, "rounds": chunks, "bytes": moved, "ms": ms,
                               "bytes_per_s": moved / (ms * 1e-3), "n_regs": int(compiled.n_regs),
                               "n_spills": int(compiled.n_spills), "rel_err": error})
                p = points[-1]
                print(f"{per_unit} x {warps:2d} warps {vectors:2d} vectors  {p['bytes_per_s'] / 1e9:7.0f} GB/s  "
                      f"{ms * 1e3 / chunks:7.2f} us a round  regs {p['n_regs']:3d} spills {p['n_spills']:4d}  "
                      f"err {error:.1e}", flush=True)
    environment = {"gpu": props.name, "units": units, "torch": torch.__version__, "triton": triton.__version__}
    with open(out_path, "w") as f:
        json.dump({"environment": environment, "points": points}, f, indent=1)


if __name__ == "__main__":
    main(sys.argv[1])
