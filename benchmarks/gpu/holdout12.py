"""The twelfth held-out set (split "holdout12"): ordinary Triton kernels written after dots took Triton's MMA layouts
and pipelined loops their copy timing, measured once on the H200 and scored once with the model frozen, never fitted
on.

A persistent matmul (one program per SM walking the output tiles in grouped order), a matmul through block
pointers (tl.make_block_ptr / tl.advance, edges by boundary checks), LayerNorm's backward for dx over 2-D row tiles,
a softmax down the columns of a matrix, and a fused multiply-add of three vectors of odd length. Kernels and cases
live together here, one module for the set.
"""

from __future__ import annotations

import math

import numpy as np
from holdout4 import _next_pow2
from sweep_cases import Case, _f32, _grid_configs, _itemsize, _np_dtype, _rand
from sweep_kernels import jit, tl

SMS = 132  # the H200's; the persistent matmul launches one program per SM


@jit
def persistent_matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K, PROGRAMS: tl.constexpr, BLOCK_M: tl.constexpr,
                             BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr):
    """C = A @ B with PROGRAMS programs, each computing every PROGRAMS-th output tile in grouped order."""
    tiles_m = tl.cdiv(M, BLOCK_M)
    tiles_n = tl.cdiv(N, BLOCK_N)
    in_group = GROUP_M * tiles_n
    offs_k = tl.arange(0, BLOCK_K)
    for tile in range(tl.program_id(0), tiles_m * tiles_n, PROGRAMS):
        first_m = (tile // in_group) * GROUP_M
        rows_in_group = tl.minimum(tiles_m - first_m, GROUP_M)
        offs_m = (first_m + (tile % in_group) % rows_in_group) * BLOCK_M + tl.arange(0, BLOCK_M)
        offs_n = ((tile % in_group) // rows_in_group) * BLOCK_N + tl.arange(0, BLOCK_N)
        acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
        for k in range(0, K, BLOCK_K):
            k_ok = offs_k < K - k
            a = tl.load(a_ptr + offs_m[:, None] * K + (k + offs_k)[None, :],
                        mask=(offs_m[:, None] < M) & k_ok[None, :], other=0.0)
            b = tl.load(b_ptr + (k + offs_k)[:, None] * N + offs_n[None, :],
                        mask=k_ok[:, None] & (offs_n[None, :] < N), other=0.0)
            acc = tl.dot(a, b, acc)
        tl.store(c_ptr + offs_m[:, None] * N + offs_n[None, :], acc.to(c_ptr.dtype.element_ty),
                 mask=(offs_m[:, None] < M) & (offs_n[None, :] < N))


@jit
def block_ptr_matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                            BLOCK_K: tl.constexpr):
    """C = A @ B through block pointers that advance along K; the edges are zero-padded by boundary checks."""
    pid_m = tl.program_id(0) // tl.cdiv(N, BLOCK_N)
    pid_n = tl.program_id(0) % tl.cdiv(N, BLOCK_N)
    a_blocks = tl.make_block_ptr(a_ptr, (M, K), (K, 1), (pid_m * BLOCK_M, 0), (BLOCK_M, BLOCK_K), (1, 0))
    b_blocks = tl.make_block_ptr(b_ptr, (K, N), (N, 1), (0, pid_n * BLOCK_N), (BLOCK_K, BLOCK_N), (1, 0))
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for _ in range(0, K, BLOCK_K):
        a = tl.load(a_blocks, boundary_check=(0, 1), padding_option="zero")
        b = tl.load(b_blocks, boundary_check=(0, 1), padding_option="zero")
        acc += tl.dot(a, b)
        a_blocks = tl.advance(a_blocks, (0, BLOCK_K))
        b_blocks = tl.advance(b_blocks, (BLOCK_K, 0))
    c_blocks = tl.make_block_ptr(c_ptr, (M, N), (N, 1), (pid_m * BLOCK_M, pid_n * BLOCK_N), (BLOCK_M, BLOCK_N),
                                 (1, 0))
    tl.store(c_blocks, acc.to(c_ptr.dtype.element_ty), boundary_check=(0, 1))


@jit
def layernorm_dx_kernel(dy_ptr, x_ptr, w_ptr, mean_ptr, rstd_ptr, dx_ptr, n_rows, n_cols, ROWS: tl.constexpr,
                        BLOCK: tl.constexpr):
    """dx of y = (x - mean) * rstd * w + b, ROWS rows a program, each row one BLOCK-wide tile."""
    rows = tl.program_id(0) * ROWS + tl.arange(0, ROWS)
    cols = tl.arange(0, BLOCK)
    row_ok = rows < n_rows
    mask = row_ok[:, None] & (cols < n_cols)[None, :]
    offs = rows[:, None].to(tl.int64) * n_cols + cols[None, :]
    x = tl.load(x_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    dy = tl.load(dy_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    w = tl.load(w_ptr + cols, mask=cols < n_cols, other=0.0).to(tl.float32)
    mean = tl.load(mean_ptr + rows, mask=row_ok, other=0.0)
    rstd = tl.load(rstd_ptr + rows, mask=row_ok, other=0.0)
    x_hat = tl.where(mask, (x - mean[:, None]) * rstd[:, None], 0.0)
    w_dy = w[None, :] * dy
    c1 = tl.sum(x_hat * w_dy, axis=1) / n_cols
    c2 = tl.sum(w_dy, axis=1) / n_cols
    dx = (w_dy - (x_hat * c1[:, None] + c2[:, None])) * rstd[:, None]
    tl.store(dx_ptr + offs, dx.to(dx_ptr.dtype.element_ty), mask=mask)


@jit
def column_softmax_kernel(x_ptr, y_ptr, n_rows, n_cols, BLOCK_R: tl.constexpr, BLOCK_C: tl.constexpr):
    """Softmax down each column of a row-major [n_rows, n_cols] matrix, BLOCK_C columns a program."""
    rows = tl.arange(0, BLOCK_R)
    cols = tl.program_id(0) * BLOCK_C + tl.arange(0, BLOCK_C)
    mask = (rows < n_rows)[:, None] & (cols < n_cols)[None, :]
    offs = rows[:, None] * n_cols + cols[None, :]
    x = tl.load(x_ptr + offs, mask=mask, other=-float("inf")).to(tl.float32)
    e = tl.exp(x - tl.max(x, axis=0)[None, :])
    tl.store(y_ptr + offs, (e / tl.sum(e, axis=0)[None, :]).to(y_ptr.dtype.element_ty), mask=mask)


@jit
def fma3_kernel(a_ptr, b_ptr, c_ptr, out_ptr, n, BLOCK: tl.constexpr):
    """out = a * b + c over vectors of any length."""
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    a = tl.load(a_ptr + offs, mask=mask)
    b = tl.load(b_ptr + offs, mask=mask)
    c = tl.load(c_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, a * b + c, mask=mask)


# --- cases

def _matmul_reference(x):
    return {"c": _f32(x["a"]).astype(np.float64) @ _f32(x["b"]).astype(np.float64)}


def _matmul_inputs(m, n, k, dtype):
    def inputs(rng):
        return {"a": _rand(rng, (m, k), dtype), "b": _rand(rng, (k, n), dtype), "c": np.empty((m, n), _np_dtype(dtype))}
    return inputs


def _fits(c):
    """Tile and warps a matmul config may pair, and operand stages that fit the H200's shared memory."""
    return (32 * 32 * c["num_warps"] <= c["BLOCK_M"] * c["BLOCK_N"] <= 128 * 32 * c["num_warps"]
            and c["num_stages"] * c["BLOCK_K"] * (c["BLOCK_M"] + c["BLOCK_N"]) * 2 <= 227 * 1024)


PERSISTENT_CONFIGS = _grid_configs(
    {"BLOCK_M": [64, 128, 256], "BLOCK_N": [64, 128, 256], "BLOCK_K": [32, 64, 128], "GROUP_M": [1, 8],
     "num_warps": [4, 8], "num_stages": [2, 3, 4]}, limit=20, seed=121, keep=_fits)


def persistent_matmul_case(name, m, n, k, dtype):
    size = _itemsize(dtype)

    def tiles(cfg):
        return math.ceil(m / cfg["BLOCK_M"]) * math.ceil(n / cfg["BLOCK_N"])

    return Case("holdout12_persistent_matmul", name, "holdout12", persistent_matmul_kernel,
                {"M": m, "N": n, "K": k}, dtype, [{"PROGRAMS": SMS, **c} for c in PERSISTENT_CONFIGS],
                _matmul_inputs(m, n, k, dtype), ("c",), lambda x, cfg: (x["a"], x["b"], x["c"], m, n, k),
                lambda cfg: (min(SMS, tiles(cfg)),), _matmul_reference, tolerance=2e-2, flops=2.0 * m * n * k,
                min_bytes=size * (m * k + k * n + m * n))


BLOCK_PTR_CONFIGS = _grid_configs(
    {"BLOCK_M": [32, 64, 128, 256], "BLOCK_N": [32, 64, 128, 256], "BLOCK_K": [32, 64, 128],
     "num_warps": [2, 4, 8], "num_stages": [2, 3, 4, 5]}, limit=20, seed=122, keep=_fits)


def block_ptr_matmul_case(name, m, n, k, dtype):
    size = _itemsize(dtype)
    return Case("holdout12_block_ptr_matmul", name, "holdout12", block_ptr_matmul_kernel, {"M": m, "N": n, "K": k},
                dtype, BLOCK_PTR_CONFIGS, _matmul_inputs(m, n, k, dtype), ("c",),
                lambda x, cfg: (x["a"], x["b"], x["c"], m, n, k),
                lambda cfg: (math.ceil(m / cfg["BLOCK_M"]) * math.ceil(n / cfg["BLOCK_N"]),), _matmul_reference,
                tolerance=2e-2, flops=2.0 * m * n * k, min_bytes=size * (m * k + k * n + m * n))


def layernorm_dx_case(name, rows, cols, dtype):
    block = _next_pow2(cols)
    configs = _grid_configs({"ROWS": [1, 2, 4, 8, 16], "num_warps": [1, 2, 4, 8, 16]}, limit=16, seed=123,
                            keep=lambda c: 32 * c["num_warps"] <= c["ROWS"] * block
                            <= min(65536, 256 * 32 * c["num_warps"]))

    def inputs(rng):
        x = _rand(rng, (rows, cols), dtype)
        v = _f32(x).astype(np.float64)
        mean = v.mean(axis=1)
        return {"dy": _rand(rng, (rows, cols), dtype), "x": x, "w": _rand(rng, (cols,), dtype),
                "mean": mean.astype(np.float32), "rstd": (1 / np.sqrt(v.var(axis=1) + 1e-5)).astype(np.float32),
                "dx": np.empty((rows, cols), _np_dtype(dtype))}

    def reference(x):
        v, dy, w = (_f32(x[name]).astype(np.float64) for name in ("x", "dy", "w"))
        rstd = x["rstd"].astype(np.float64)[:, None]
        x_hat = (v - x["mean"].astype(np.float64)[:, None]) * rstd
        w_dy = w[None, :] * dy
        c1 = (x_hat * w_dy).mean(axis=1, keepdims=True)
        c2 = w_dy.mean(axis=1, keepdims=True)
        return {"dx": (w_dy - (x_hat * c1 + c2)) * rstd}

    size = _itemsize(dtype)
    return Case("holdout12_layernorm_dx", name, "holdout12", layernorm_dx_kernel, {"rows": rows, "cols": cols}, dtype,
                [{"BLOCK": block, **c} for c in configs], inputs, ("dx",),
                lambda x, cfg: (x["dy"], x["x"], x["w"], x["mean"], x["rstd"], x["dx"], rows, cols),
                lambda cfg: (math.ceil(rows / cfg["ROWS"]),), reference, tolerance=3e-2 if dtype != "fp32" else 1e-4,
                min_bytes=3.0 * size * rows * cols)


def column_softmax_case(name, rows, cols, dtype):
    block_r = _next_pow2(rows)
    configs = _grid_configs({"BLOCK_C": [4, 8, 16, 32, 64, 128], "num_warps": [1, 2, 4, 8, 16]}, limit=16, seed=124,
                            keep=lambda c: 32 * c["num_warps"] <= block_r * c["BLOCK_C"]
                            <= min(65536, 256 * 32 * c["num_warps"]))

    def inputs(rng):
        return {"x": _rand(rng, (rows, cols), dtype, 2.0), "y": np.empty((rows, cols), _np_dtype(dtype))}

    def reference(x):
        v = _f32(x["x"]).astype(np.float64)
        e = np.exp(v - v.max(axis=0, keepdims=True))
        return {"y": e / e.sum(axis=0, keepdims=True)}

    size = _itemsize(dtype)
    return Case("holdout12_column_softmax", name, "holdout12", column_softmax_kernel, {"rows": rows, "cols": cols},
                dtype, [{"BLOCK_R": block_r, **c} for c in configs], inputs, ("y",),
                lambda x, cfg: (x["x"], x["y"], rows, cols), lambda cfg: (math.ceil(cols / cfg["BLOCK_C"]),), reference,
                tolerance=2e-2 if dtype != "fp32" else 1e-5, min_bytes=2.0 * size * rows * cols)


FMA3_CONFIGS = _grid_configs({"BLOCK": [256, 512, 1024, 2048, 4096, 8192], "num_warps": [1, 2, 4, 8, 16]},
                             limit=16, seed=125,
                             keep=lambda c: 32 * c["num_warps"] <= c["BLOCK"] <= 256 * 32 * c["num_warps"])


def fma3_case(name, n, dtype):
    def inputs(rng):
        return {"a": _rand(rng, (n,), dtype), "b": _rand(rng, (n,), dtype), "c": _rand(rng, (n,), dtype),
                "out": np.empty((n,), _np_dtype(dtype))}

    def reference(x):
        a, b, c = (_f32(x[k]).astype(np.float64) for k in "abc")
        return {"out": a * b + c}

    return Case("holdout12_fma3", name, "holdout12", fma3_kernel, {"n": n}, dtype, FMA3_CONFIGS, inputs, ("out",),
                lambda x, cfg: (x["a"], x["b"], x["c"], x["out"], n), lambda cfg: (math.ceil(n / cfg["BLOCK"]),),
                reference, tolerance=2e-2 if dtype != "fp32" else 1e-5, min_bytes=4.0 * _itemsize(dtype) * n)


def holdout12_cases() -> list[Case]:
    return [
        persistent_matmul_case("holdout12_persistent_matmul_fp16_3072x3072x3072", 3072, 3072, 3072, "fp16"),
        persistent_matmul_case("holdout12_persistent_matmul_bf16_1024x6144x2048", 1024, 6144, 2048, "bf16"),
        block_ptr_matmul_case("holdout12_block_ptr_matmul_bf16_2000x2500x1800", 2000, 2500, 1800, "bf16"),
        block_ptr_matmul_case("holdout12_block_ptr_matmul_fp16_512x4096x4096", 512, 4096, 4096, "fp16"),
        layernorm_dx_case("holdout12_layernorm_dx_fp16_8192x5120", 8192, 5120, "fp16"),
        layernorm_dx_case("holdout12_layernorm_dx_bf16_16384x1000", 16384, 1000, "bf16"),
        column_softmax_case("holdout12_column_softmax_fp32_1024x8192", 1024, 8192, "fp32"),
        column_softmax_case("holdout12_column_softmax_fp16_512x30000", 512, 30000, "fp16"),
        fma3_case("holdout12_fma3_fp16_33554431", 33_554_431, "fp16"),
        fma3_case("holdout12_fma3_fp32_9999991", 9_999_991, "fp32"),
    ]
