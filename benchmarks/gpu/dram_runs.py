"""DRAM bandwidth of reads and writes made of short contiguous runs, by run length and launch order, on a real GPU.

Each program reads a [128, W]-element fp32 tile of a 16,384 x 4,096 array (runs of W x 4 bytes, one per row, rows
16 KB apart) and writes its column sums; a second kernel writes such tiles instead. Launched column-block fastest,
the programs running at once touch neighbouring runs of the same rows; launched row-block fastest, far-apart ones.
On the H200 reads of runs of 128 bytes or more reach 95 % of the best bandwidth either way; 64-byte runs 93 % when
neighbours run together and 70 % when far apart, 32-byte runs 77 % and 66 %. Writes lose less at 64 bytes (96 % and
79 %) and more at 128 bytes far apart (83 %); 32-byte runs 64 % and 62 % (simulator/data/h200_dram_runs.json). The
cost model charges reads so (MachineSpec.run_efficiency), not writes. Runs shorter than a sector are another
matter for writes: stores of 4-, 8- and 16-byte runs, each part of a sector, go at 36-71 G runs/s (median 60) where
whole sectors go at 85 G/s, while the reads of such runs reach 100-150 G/s; the L2 charges each sector a store
writes only in part that rate (MachineSpec.l2_partial_writes_per_s, h200_dram_runs.json: sub_sector_*).

Run on a machine with a CUDA GPU, torch and triton:  python benchmarks/gpu/dram_runs.py OUT.json [RUN_BYTES,...]
(default run lengths 32 to 1,024 bytes; runs shorter than a 32-byte sector, 4,8,16, write part of a sector each)
"""

from __future__ import annotations

import json
import sys


def main(out_path: str, run_lengths: tuple[int, ...] = (32, 64, 128, 256, 512, 1024)) -> None:
    import torch
    import triton
    import triton.language as tl
    from triton.testing import do_bench

    @triton.jit
    def runs(src, dst, n_cols, ROWS: tl.constexpr, W: tl.constexpr, COLUMNS_FASTEST: tl.constexpr):
        if COLUMNS_FASTEST:
            column_block, row_block = tl.program_id(0), tl.program_id(1)
        else:
            row_block, column_block = tl.program_id(0), tl.program_id(1)
        rows = row_block * ROWS + tl.arange(0, ROWS)
        cols = column_block * W + tl.arange(0, W)
        x = tl.load(src + rows[:, None].to(tl.int64) * n_cols + cols[None, :])
        tl.store(dst + (row_block * (n_cols // W) + column_block) * W + tl.arange(0, W), tl.sum(x, axis=0))

    @triton.jit
    def write_runs(dst, n_cols, ROWS: tl.constexpr, W: tl.constexpr, COLUMNS_FASTEST: tl.constexpr):
        """The same tiles written: each program stores its [ROWS, W] tile of runs (no reads)."""
        if COLUMNS_FASTEST:
            column_block, row_block = tl.program_id(0), tl.program_id(1)
        else:
            row_block, column_block = tl.program_id(0), tl.program_id(1)
        rows = row_block * ROWS + tl.arange(0, ROWS)
        cols = column_block * W + tl.arange(0, W)
        value = (rows[:, None] + cols[None, :]).to(tl.float32)
        tl.store(dst + rows[:, None].to(tl.int64) * n_cols + cols[None, :], value)

    n_rows, n_cols, rows = 16384, 4096, 128
    src = torch.randn(n_rows, n_cols, device="cuda")
    found, written = [], []
    for run_bytes in run_lengths:
        w = run_bytes // 4
        column_blocks, row_blocks = n_cols // w, n_rows // rows
        dst = torch.empty(row_blocks * n_cols, device="cuda")
        for columns_fastest in (True, False):
            grid = (column_blocks, row_blocks) if columns_fastest else (row_blocks, column_blocks)

            def launch(grid=grid, w=w, columns_fastest=columns_fastest, dst=dst):
                runs[grid](src, dst, n_cols, ROWS=rows, W=w, COLUMNS_FASTEST=columns_fastest, num_warps=4)

            def store(grid=grid, w=w, columns_fastest=columns_fastest):
                write_runs[grid](src, n_cols, ROWS=rows, W=w, COLUMNS_FASTEST=columns_fastest, num_warps=4)

            for kind, fn, into in (("read", launch, found), ("write", store, written)):
                ms = do_bench(fn, warmup=10, rep=60, return_mode="median")
                into.append({"run_bytes": run_bytes, "columns_fastest": columns_fastest, "ms": ms,
                             "bytes_per_s": n_rows * n_cols * 4 / (ms * 1e-3)})
                print(f"{kind:5s} {run_bytes:5d} B runs, {'neighbours' if columns_fastest else 'far apart':10s} "
                      f"together: {into[-1]['bytes_per_s'] / 1e9:6.0f} GB/s", flush=True)
    env = {"gpu": torch.cuda.get_device_name(0), "triton": triton.__version__, "torch": torch.__version__}
    with open(out_path, "w") as f:
        json.dump({"environment": env, "runs": found, "write_runs": written}, f, indent=1)


if __name__ == "__main__":
    if len(sys.argv) > 2:
        main(sys.argv[1], tuple(int(b) for b in sys.argv[2].split(",")))
    else:
        main(sys.argv[1])
