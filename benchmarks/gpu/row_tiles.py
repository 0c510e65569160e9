"""Probe set (split "rowtiles"): row kernels that give a program ROWS rows of one tile, to see what a row costs.

Over the held-out sets, a row kernel's configs that put two or more rows in a program run slower next to its
one-row configs than the model says, the more so the more warps: the log ratio of measured to modeled time, less
its group's median, is -0.03 at one row a program and +0.03 / +0.11 at 2-16 rows on 8 / 16 warps (the held-out
cross-entropy backward, softmax backward, log-softmax, causal masked softmax, RMSNorm backward), and the model's
pick there is a multi-row config where one row a program is fastest. Here the same row tile [ROWS, BLOCK] feeds
a copy that scales each row (no reduction), an RMS norm (one row sum) and a softmax (a row max and a row sum),
at 1-16 rows and 1-16 warps, over rows whose width is a multiple of 16 and one that is not: the H200's times
(sweep.py --split rowtiles) and Triton's registers (compile_facts.py --split rowtiles) beside the model's
(model_sweep.py --split rowtiles) tell whether the rows, the reductions or the registers cost what the model
misses. Measured once; not part of the calibration, validation or held-out scores.

On the H200 (simulator/data/h200_rowtiles.csv: 200 of the 225 configs; the call's time ran out before the softmax
over 3,000-wide bf16 rows), the rows themselves cost little: over the builds that do not spill, the same log ratio
is -0.01 to -0.03 at one row a program and 0.00 / +0.01 / +0.03 at 2-16 rows on 4 / 8 / 16 warps, 2-6 % slower
than modeled next to one row. What the model misses is spilling, which multi-row tiles reach first: 64 of the 200
builds spill. The 33 that Triton builds with 32-64 registers, spilling 0.5-6 KB a thread, run 2.6-31x slower than
their group's best, where the model says 1.3-300x; the 31 kept at 128-255 registers with 2-1,020 bytes spilled run
1.0-10x slower, the model says 1.0-107x (it waits an L2 round trip for every reload, one after another, and takes
a demand from the register estimate that is 1.0-4.1x, a median 1.9x, Triton's registers and spilled words
together). Rank correlation over
the eight groups 0.64 (0.40), picks 2.5 % / 33 % slow, time error 9.8 %.
"""

from __future__ import annotations

import numpy as np
from holdout4 import _next_pow2
from sweep_cases import Case, _f32, _grid_configs, _itemsize, _np_dtype, _rand
from sweep_kernels import jit, tl


@jit
def row_scale_kernel(x_ptr, w_ptr, y_ptr, n_rows, n_cols, ROWS: tl.constexpr, BLOCK: tl.constexpr):
    rows = tl.program_id(0) * ROWS + tl.arange(0, ROWS)
    cols = tl.arange(0, BLOCK)
    mask = (rows < n_rows)[:, None] & (cols < n_cols)[None, :]
    offs = rows[:, None].to(tl.int64) * n_cols + cols[None, :]
    x = tl.load(x_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    w = tl.load(w_ptr + cols, mask=cols < n_cols, other=0.0).to(tl.float32)
    tl.store(y_ptr + offs, (x * w[None, :]).to(y_ptr.dtype.element_ty), mask=mask)


@jit
def row_rms_kernel(x_ptr, w_ptr, y_ptr, n_rows, n_cols, ROWS: tl.constexpr, BLOCK: tl.constexpr):
    rows = tl.program_id(0) * ROWS + tl.arange(0, ROWS)
    cols = tl.arange(0, BLOCK)
    mask = (rows < n_rows)[:, None] & (cols < n_cols)[None, :]
    offs = rows[:, None].to(tl.int64) * n_cols + cols[None, :]
    x = tl.load(x_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    w = tl.load(w_ptr + cols, mask=cols < n_cols, other=0.0).to(tl.float32)
    rstd = 1.0 / tl.sqrt(tl.sum(x * x, axis=1) / n_cols + 1e-6)
    tl.store(y_ptr + offs, (x * rstd[:, None] * w[None, :]).to(y_ptr.dtype.element_ty), mask=mask)


@jit
def row_softmax_kernel(x_ptr, w_ptr, y_ptr, n_rows, n_cols, ROWS: tl.constexpr, BLOCK: tl.constexpr):
    rows = tl.program_id(0) * ROWS + tl.arange(0, ROWS)
    cols = tl.arange(0, BLOCK)
    mask = (rows < n_rows)[:, None] & (cols < n_cols)[None, :]
    offs = rows[:, None].to(tl.int64) * n_cols + cols[None, :]
    x = tl.load(x_ptr + offs, mask=mask, other=-float("inf")).to(tl.float32)
    e = tl.exp(x - tl.max(x, axis=1)[:, None])
    tl.store(y_ptr + offs, (e / tl.sum(e, axis=1)[:, None]).to(y_ptr.dtype.element_ty), mask=mask)


def _reference(kind: str, n_cols: int):
    def reference(x):
        v, w = _f32(x["x"]).astype(np.float64), _f32(x["w"]).astype(np.float64)
        if kind == "scale":
            return {"y": v * w[None, :]}
        if kind == "rms":
            return {"y": v / np.sqrt((v * v).sum(axis=1, keepdims=True) / n_cols + 1e-6) * w[None, :]}
        e = np.exp(v - v.max(axis=1, keepdims=True))
        return {"y": e / e.sum(axis=1, keepdims=True)}
    return reference


KERNELS = {"scale": row_scale_kernel, "rms": row_rms_kernel, "softmax": row_softmax_kernel}
ROW_CONFIGS = _grid_configs({"ROWS": [1, 2, 4, 8, 16], "num_warps": [1, 2, 4, 8, 16]})


def row_tile_case(kind: str, n_rows: int, n_cols: int, dtype: str) -> Case:
    block = _next_pow2(n_cols)
    configs = [{"BLOCK": block, **c} for c in ROW_CONFIGS if c["ROWS"] * block <= 65536]

    def inputs(rng):
        return {"x": _rand(rng, (n_rows, n_cols), dtype), "w": _rand(rng, (n_cols,), dtype),
                "y": np.empty((n_rows, n_cols), _np_dtype(dtype))}

    size = _itemsize(dtype)
    return Case(f"rowtiles_{kind}", f"rowtiles_{kind}_{dtype}_{n_rows}x{n_cols}", "rowtiles", KERNELS[kind],
                {"M": n_rows, "N": n_cols}, dtype, configs, inputs, ("y",),
                lambda x, cfg: (x["x"], x["w"], x["y"], n_rows, n_cols),
                lambda cfg: (-(-n_rows // cfg["ROWS"]),), _reference(kind, n_cols),
                tolerance=2e-2 if dtype == "bf16" else 1e-4, min_bytes=float(2 * size * n_rows * n_cols))


def row_tile_cases() -> list[Case]:
    shapes = ((16384, 1024, "fp32"), (16384, 4096, "bf16"), (8192, 3000, "bf16"))
    return [row_tile_case(kind, m, n, dtype) for kind in KERNELS for m, n, dtype in shapes]
