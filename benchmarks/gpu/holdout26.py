"""The twenty-sixth held-out set (split "holdout26"): the issue's own experiment again, blind — ordinary Triton-style
kernels of the issue's families, most written for this set: a matmul on a two-axis grid without grouped ordering
(fp16, bf16, TF32, a decode-sized M = 32), causal attention at D = 64 and D = 128, a softmax of several rows a
program read through a row stride, an RMSNorm that loops over its row twice, a transpose through `tl.trans`; then
holdout1's GELU, adds, a paged decode, row and column sums and a looped LayerNorm at new shapes. Chosen at stop 41,
whose experiments left the model as stop 40 had it; no GPU was lent that session, so it is not measured yet. The
next session with the H200 measures it once (`WAVETILE_SWEEP_BACKEND=triton python benchmarks/gpu/sweep.py
OUT/h200_holdout26.csv --split holdout26`, then compile_facts.py the same way), adds it to
simulator.validate.HELD_OUT and scores it once with the model it then has, never fitting on it.
"""

from __future__ import annotations

import math

import numpy as np
from holdout1 import gelu_case
from holdout3 import layernorm_looped_case
from sweep_cases import (
    Case,
    _f32,
    _grid_configs,
    _itemsize,
    _np_dtype,
    _rand,
    add_case,
    attention_case,
    colsum_case,
    in_split,
    paged_decode_case,
    rowsum_case,
)
from sweep_kernels import jit, tl

SPLIT = "holdout26"


@jit
def grid2d_matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                         BLOCK_K: tl.constexpr):
    """C = A @ B, row-major, one program per (BLOCK_M, BLOCK_N) tile on a two-axis grid whose first axis walks M:
    the tiles running together share columns of B, not rows of A. K is masked at its end."""
    rm = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    rk = tl.arange(0, BLOCK_K)
    a_ptrs = a_ptr + rm[:, None] * K + rk[None, :]
    b_ptrs = b_ptr + rk[:, None] * N + rn[None, :]
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BLOCK_K)):
        left = K - k * BLOCK_K
        a = tl.load(a_ptrs, mask=(rm[:, None] < M) & (rk[None, :] < left), other=0.0)
        b = tl.load(b_ptrs, mask=(rk[:, None] < left) & (rn[None, :] < N), other=0.0)
        acc = tl.dot(a, b, acc)
        a_ptrs += BLOCK_K
        b_ptrs += BLOCK_K * N
    tl.store(c_ptr + rm[:, None] * N + rn[None, :], acc.to(c_ptr.dtype.element_ty),
             mask=(rm[:, None] < M) & (rn[None, :] < N))


@jit
def strided_softmax_kernel(x_ptr, y_ptr, n_rows, n_cols, stride, ROWS: tl.constexpr, BLOCK: tl.constexpr):
    """Softmax along rows of a [n_rows, n_cols] view with row stride `stride`, ROWS rows a program."""
    rows = tl.program_id(0) * ROWS + tl.arange(0, ROWS)
    cols = tl.arange(0, BLOCK)
    mask = (rows[:, None] < n_rows) & (cols[None, :] < n_cols)
    offs = rows[:, None] * stride + cols[None, :]
    x = tl.load(x_ptr + offs, mask=mask, other=-float("inf")).to(tl.float32)
    e = tl.exp(x - tl.max(x, axis=1)[:, None])
    tl.store(y_ptr + offs, (e / tl.sum(e, axis=1)[:, None]).to(y_ptr.dtype.element_ty), mask=mask)


@jit
def rmsnorm_two_pass_kernel(x_ptr, w_ptr, y_ptr, n_cols, eps, BLOCK: tl.constexpr):
    """RMSNorm of one row a program, BLOCK columns at a time: a loop for the mean square, a loop to scale."""
    row = tl.program_id(0).to(tl.int64) * n_cols
    acc = tl.zeros((BLOCK,), dtype=tl.float32)
    for start in range(0, n_cols, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        x = tl.load(x_ptr + row + cols, mask=cols < n_cols, other=0.0).to(tl.float32)
        acc += x * x
    rstd = 1.0 / tl.sqrt(tl.sum(acc, axis=0) / n_cols + eps)
    for start in range(0, n_cols, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        mask = cols < n_cols
        x = tl.load(x_ptr + row + cols, mask=mask, other=0.0).to(tl.float32)
        w = tl.load(w_ptr + cols, mask=mask, other=0.0).to(tl.float32)
        tl.store(y_ptr + row + cols, (x * rstd * w).to(y_ptr.dtype.element_ty), mask=mask)


@jit
def trans_transpose_kernel(x_ptr, y_ptr, M, N, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    """y = x.T for x [M, N]: a tile loaded along x's rows and stored, through tl.trans, along y's."""
    rm = tl.program_id(1) * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = tl.program_id(0) * BLOCK_N + tl.arange(0, BLOCK_N)
    tile = tl.load(x_ptr + rm[:, None] * N + rn[None, :], mask=(rm[:, None] < M) & (rn[None, :] < N))
    tl.store(y_ptr + rn[:, None] * M + rm[None, :], tl.trans(tile), mask=(rn[:, None] < N) & (rm[None, :] < M))


GRID2D_MATMUL_CONFIGS = _grid_configs({"BLOCK_M": [32, 64, 128, 256], "BLOCK_N": [32, 64, 128, 256],
                                       "BLOCK_K": [32, 64], "num_warps": [2, 4, 8], "num_stages": [2, 3, 4]},
                                      limit=18, seed=261, keep=lambda c: c["BLOCK_M"] * c["BLOCK_N"] <= 256 * 128)
GRID2D_SKINNY_CONFIGS = _grid_configs({"BLOCK_M": [16, 32], "BLOCK_N": [32, 64, 128, 256], "BLOCK_K": [64, 128, 256],
                                       "num_warps": [2, 4, 8], "num_stages": [2, 3, 4]}, limit=16, seed=262,
                                      keep=lambda c: c["BLOCK_N"] * c["BLOCK_K"] <= 128 * 256)


def grid2d_matmul_case(name, m, n, k, dtype, configs):
    def inputs(rng):
        return {"a": _rand(rng, (m, k), dtype), "b": _rand(rng, (k, n), dtype),
                "c": np.empty((m, n), dtype=_np_dtype(dtype))}

    size = _itemsize(dtype)
    return Case("matmul", name, SPLIT, grid2d_matmul_kernel, {"M": m, "N": n, "K": k}, dtype, configs, inputs, ("c",),
                lambda x, cfg: (x["a"], x["b"], x["c"], m, n, k),
                lambda cfg: (math.ceil(m / cfg["BLOCK_M"]), math.ceil(n / cfg["BLOCK_N"])),
                lambda x: {"c": _f32(x["a"]) @ _f32(x["b"])}, tolerance=2e-2, flops=2.0 * m * n * k,
                min_bytes=size * (m * k + k * n + m * n))


def strided_softmax_case(name, rows, cols, stride, dtype):
    """The columns between n_cols and the stride are never written: the check zeroes y (`zero_outputs`) and expects
    them still zero, where it would otherwise poison them and find the poison."""
    block = 1 << (cols - 1).bit_length()
    configs = _grid_configs({"ROWS": [1, 2, 4, 8], "num_warps": [1, 2, 4, 8, 16, 32]}, limit=16, seed=263,
                            keep=lambda c: 32 * c["num_warps"] <= c["ROWS"] * block <= min(65536,
                                                                                         256 * 32 * c["num_warps"]))

    def inputs(rng):
        return {"x": _rand(rng, (rows, stride), dtype, 2.0), "y": np.zeros((rows, stride), _np_dtype(dtype))}

    def reference(x):
        v = _f32(x["x"])[:, :cols]
        e = np.exp(v - v.max(axis=1, keepdims=True))
        return {"y": np.concatenate([e / e.sum(axis=1, keepdims=True), np.zeros((rows, stride - cols))], axis=1)}

    size = _itemsize(dtype)
    return Case("softmax", name, SPLIT, strided_softmax_kernel, {"rows": rows, "cols": cols, "stride": stride}, dtype,
                [{"BLOCK": block, **c} for c in configs], inputs, ("y",),
                lambda x, cfg: (x["x"], x["y"], rows, cols, stride), lambda cfg: (math.ceil(rows / cfg["ROWS"]),),
                reference, tolerance=1e-2, min_bytes=2.0 * size * rows * cols,
                extra={"zero_outputs": True})


def rmsnorm_two_pass_case(name, rows, cols, dtype):
    configs = _grid_configs({"BLOCK": [256, 512, 1024, 2048, 4096, 8192], "num_warps": [1, 2, 4, 8, 16]},
                            limit=18, seed=264, keep=lambda c: 32 * c["num_warps"] <= c["BLOCK"] <= 2 * cols)

    def inputs(rng):
        return {"x": _rand(rng, (rows, cols), dtype), "w": _rand(rng, (cols,), dtype),
                "y": np.empty((rows, cols), _np_dtype(dtype))}

    def reference(x):
        v = _f32(x["x"])
        return {"y": v / np.sqrt((v * v).mean(axis=1, keepdims=True) + 1e-6) * _f32(x["w"])}

    size = _itemsize(dtype)
    return Case("rmsnorm", name, SPLIT, rmsnorm_two_pass_kernel, {"rows": rows, "cols": cols}, dtype, configs, inputs,
                ("y",), lambda x, cfg: (x["x"], x["w"], x["y"], cols, 1e-6), lambda cfg: (rows,), reference,
                tolerance=1e-2, min_bytes=2.0 * size * rows * cols)


def trans_transpose_case(name, m, n, dtype):
    configs = _grid_configs({"BLOCK_M": [16, 32, 64, 128], "BLOCK_N": [16, 32, 64, 128], "num_warps": [2, 4, 8]},
                            limit=16, seed=265, keep=lambda c: 256 <= c["BLOCK_M"] * c["BLOCK_N"] <= 8192)

    def inputs(rng):
        return {"x": _rand(rng, (m, n), dtype), "y": np.empty((n, m), _np_dtype(dtype))}

    size = _itemsize(dtype)
    return Case("transpose", name, SPLIT, trans_transpose_kernel, {"M": m, "N": n}, dtype, configs, inputs, ("y",),
                lambda x, cfg: (x["x"], x["y"], m, n),
                lambda cfg: (math.ceil(n / cfg["BLOCK_N"]), math.ceil(m / cfg["BLOCK_M"])),
                lambda x: {"y": _f32(x["x"]).T}, tolerance=1e-6, min_bytes=2.0 * size * m * n)


GELU_CONFIGS = _grid_configs({"BLOCK": [256, 512, 1024, 2048, 4096, 8192], "num_warps": [1, 2, 4, 8, 16]},
                             limit=16, seed=266, keep=lambda c: c["BLOCK"] >= 32 * c["num_warps"])


def holdout26_cases() -> list[Case]:
    s = SPLIT
    return [
        grid2d_matmul_case("holdout26_matmul_fp16_3072x3072x3072", 3072, 3072, 3072, "fp16", GRID2D_MATMUL_CONFIGS),
        grid2d_matmul_case("holdout26_matmul_bf16_8192x2048x1024", 8192, 2048, 1024, "bf16", GRID2D_MATMUL_CONFIGS),
        grid2d_matmul_case("holdout26_matmul_bf16_1000x8192x4096", 1000, 8192, 4096, "bf16", GRID2D_MATMUL_CONFIGS),
        grid2d_matmul_case("holdout26_matmul_fp32_2560x2560x2048", 2560, 2560, 2048, "fp32", GRID2D_MATMUL_CONFIGS),
        grid2d_matmul_case("holdout26_matmul_fp16_skinny_m32", 32, 8192, 4096, "fp16", GRID2D_SKINNY_CONFIGS),
        strided_softmax_case("holdout26_softmax_fp32_8192x6000", 8192, 6000, 6016, "fp32"),
        strided_softmax_case("holdout26_softmax_fp16_4096x12000", 4096, 12000, 12288, "fp16"),
        rmsnorm_two_pass_case("holdout26_rmsnorm_bf16_6000x8192", 6000, 8192, "bf16"),
        rmsnorm_two_pass_case("holdout26_rmsnorm_fp16_16384x3000", 16384, 3000, "fp16"),
        trans_transpose_case("holdout26_transpose_fp16_5000x3000", 5000, 3000, "fp16"),
        trans_transpose_case("holdout26_transpose_fp32_4096x6144", 4096, 6144, "fp32"),
        gelu_case("holdout26_gelu_fp16_24M", 24_000_000, "fp16", SPLIT, "elementwise", GELU_CONFIGS),
        attention_case("holdout26_attention_fp16_d64_bh32_s2048", s, 32, 2048, 64, "fp16"),
        attention_case("holdout26_attention_bf16_d128_bh16_s3000", s, 16, 3000, 128, "bf16"),
        add_case("holdout26_add_bf16_40M", s, 40_000_000, "bf16"),
        add_case("holdout26_add_fp16_33M", s, 33_554_431, "fp16"),
        paged_decode_case("holdout26_decode_bf16_b48_h32_kv8_d128", s, 48, 32, 8, 128, 1500, "bf16"),
        rowsum_case("holdout26_rowsum_fp32_8192x5000", s, 8192, 5000, "fp32"),
        colsum_case("holdout26_colsum_bf16_6000x4096", s, 6000, 4096, "bf16"),
    ] + [in_split(layernorm_looped_case("holdout26_layernorm_looped_fp32_4096x10000", 4096, 10000, "fp32"), s)]
