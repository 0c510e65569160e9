"""The second held-out set (split "holdout2"): kernels written for the December 2026 re-measurement, scored once at
the end of the session that built the concurrency-aware model, never looked at before.

Triton tutorial 02's persistent softmax (a fixed number of programs walk the rows, the row loop software-pipelined),
a residual add then RMSNorm, a batched matmul, a GEMV without tensor cores, NeoX RoPE computing its cos / sin in the
kernel, and column sums of a tall matrix by atomics. Kernels and cases live together here, one module for the set.
"""

from __future__ import annotations

import math

import numpy as np
from holdout1 import ROPE_CONFIGS
from sweep_cases import MATMUL_CONFIGS, ROW_WARPS, Case, _f32, _grid_configs, _itemsize, _np_dtype, _rand
from sweep_kernels import jit, tl


@jit
def softmax_persistent_kernel(out_ptr, in_ptr, n_rows, n_cols, BLOCK: tl.constexpr, STAGES: tl.constexpr):
    """Triton tutorial 02's shape: a fixed number of programs walk the rows, the row loop software-pipelined."""
    row_step = tl.num_programs(0)
    offs = tl.arange(0, BLOCK)
    mask = offs < n_cols
    for row in tl.range(tl.program_id(0), n_rows, row_step, num_stages=STAGES):
        x = tl.load(in_ptr + row * n_cols + offs, mask=mask, other=-float("inf")).to(tl.float32)
        x = x - tl.max(x, axis=0)
        num = tl.exp(x)
        tl.store(out_ptr + row * n_cols + offs, (num / tl.sum(num, axis=0)).to(out_ptr.dtype.element_ty), mask=mask)


@jit
def add_rmsnorm_kernel(x_ptr, r_ptr, w_ptr, out_ptr, res_ptr, n_cols, eps, BLOCK: tl.constexpr):
    """Residual add then RMSNorm: writes the new residual stream and the normalised row."""
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    mask = offs < n_cols
    h = (tl.load(x_ptr + row * n_cols + offs, mask=mask, other=0.0).to(tl.float32)
         + tl.load(r_ptr + row * n_cols + offs, mask=mask, other=0.0).to(tl.float32))
    tl.store(res_ptr + row * n_cols + offs, h.to(res_ptr.dtype.element_ty), mask=mask)
    w = tl.load(w_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    rstd = 1.0 / tl.sqrt(tl.sum(h * h, axis=0) / n_cols + eps)
    tl.store(out_ptr + row * n_cols + offs, (h * rstd * w).to(out_ptr.dtype.element_ty), mask=mask)


@jit
def bmm_kernel(a_ptr, b_ptr, c_ptr, M, N, K, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    """Batched C[b] = A[b] @ B[b], contiguous [batch, M, K] x [batch, K, N], one batch per grid row."""
    pid = tl.program_id(0)
    batch = tl.program_id(1).to(tl.int64)
    num_pid_n = tl.cdiv(N, BLOCK_N)
    offs_m = (pid // num_pid_n) * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = (pid % num_pid_n) * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_k = tl.arange(0, BLOCK_K)
    a_ptrs = a_ptr + batch * M * K + offs_m[:, None] * K + offs_k[None, :]
    b_ptrs = b_ptr + batch * K * N + offs_k[:, None] * N + offs_n[None, :]
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, K, BLOCK_K):
        a = tl.load(a_ptrs, mask=(offs_m[:, None] < M) & (offs_k[None, :] < K - k), other=0.0)
        b = tl.load(b_ptrs, mask=(offs_k[:, None] < K - k) & (offs_n[None, :] < N), other=0.0)
        acc = tl.dot(a, b, acc)
        a_ptrs += BLOCK_K
        b_ptrs += BLOCK_K * N
    mask = (offs_m[:, None] < M) & (offs_n[None, :] < N)
    tl.store(c_ptr + batch * M * N + offs_m[:, None] * N + offs_n[None, :], acc.to(c_ptr.dtype.element_ty), mask=mask)


@jit
def gemv_kernel(w_ptr, x_ptr, y_ptr, N, K, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    """y = W x for a row-major weight W [N, K]: a decode step's projection without tensor cores."""
    rows = tl.program_id(0) * BLOCK_N + tl.arange(0, BLOCK_N)
    acc = tl.zeros((BLOCK_N, BLOCK_K), dtype=tl.float32)
    for k in range(0, K, BLOCK_K):
        cols = k + tl.arange(0, BLOCK_K)
        w = tl.load(w_ptr + rows[:, None] * K + cols[None, :], mask=(rows[:, None] < N) & (cols[None, :] < K),
                    other=0.0)
        x = tl.load(x_ptr + cols, mask=cols < K, other=0.0)
        acc += w.to(tl.float32) * x.to(tl.float32)[None, :]
    tl.store(y_ptr + rows, tl.sum(acc, axis=1).to(y_ptr.dtype.element_ty), mask=rows < N)


@jit
def rope_inline_kernel(x_ptr, pos_ptr, out_ptr, n_tokens, n_heads, theta_log2, HALF: tl.constexpr,
                       BLOCK_T: tl.constexpr):
    """NeoX rotary embedding with the angles computed in the kernel (cos / sin per element)."""
    tokens = tl.program_id(0) * BLOCK_T + tl.arange(0, BLOCK_T)
    head = tl.program_id(1)
    d = tl.arange(0, HALF)
    mask = tokens[:, None] < n_tokens
    pos = tl.load(pos_ptr + tokens, mask=tokens < n_tokens, other=0).to(tl.float32)
    inv_freq = tl.exp2(-(d.to(tl.float32) / HALF) * theta_log2)
    angle = pos[:, None] * inv_freq[None, :]
    c = tl.cos(angle)
    s = tl.sin(angle)
    base = (tokens[:, None] * n_heads + head) * (2 * HALF) + d[None, :]
    x1 = tl.load(x_ptr + base, mask=mask, other=0.0).to(tl.float32)
    x2 = tl.load(x_ptr + base + HALF, mask=mask, other=0.0).to(tl.float32)
    tl.store(out_ptr + base, (x1 * c - x2 * s).to(out_ptr.dtype.element_ty), mask=mask)
    tl.store(out_ptr + base + HALF, (x2 * c + x1 * s).to(out_ptr.dtype.element_ty), mask=mask)


@jit
def colsum_atomic_kernel(x_ptr, out_ptr, M, N, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    """Column sums of a tall matrix: each program reduces a BLOCK_M x BLOCK_N tile and adds it atomically."""
    rows = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    cols = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    mask = (rows[:, None] < M) & (cols[None, :] < N)
    x = tl.load(x_ptr + rows[:, None] * N + cols[None, :], mask=mask, other=0.0).to(tl.float32)
    tl.atomic_add(out_ptr + cols, tl.sum(x, axis=0), mask=cols < N)


# --- cases

PERSISTENT_CONFIGS = _grid_configs({"PROGRAMS": [132, 264, 528, 1056], "num_warps": [4, 8, 16], "STAGES": [1, 2, 3]},
                                   limit=16, seed=11)


def softmax_persistent_case(name, rows, cols, dtype):
    block = 1 << (cols - 1).bit_length()

    def inputs(rng):
        return {"x": _rand(rng, (rows, cols), dtype), "out": np.empty((rows, cols), _np_dtype(dtype))}

    def reference(x):
        v = _f32(x["x"])
        e = np.exp(v - v.max(axis=1, keepdims=True))
        return {"out": e / e.sum(axis=1, keepdims=True)}

    size = _itemsize(dtype)
    return Case("holdout2_softmax_persistent", name, "holdout2", softmax_persistent_kernel,
                {"rows": rows, "cols": cols}, dtype, [{"BLOCK": block, **c} for c in PERSISTENT_CONFIGS], inputs,
                ("out",), lambda x, cfg: (x["out"], x["x"], rows, cols), lambda cfg: (min(rows, cfg["PROGRAMS"]),),
                reference, tolerance=1e-2, min_bytes=2.0 * size * rows * cols, extra={"launch_only": ("PROGRAMS",)})


def add_rmsnorm_case(name, rows, cols, dtype):
    def inputs(rng):
        return {"x": _rand(rng, (rows, cols), dtype), "r": _rand(rng, (rows, cols), dtype),
                "w": _rand(rng, (cols,), dtype), "out": np.empty((rows, cols), _np_dtype(dtype)),
                "res": np.empty((rows, cols), _np_dtype(dtype))}

    def reference(x):
        h = _f32(x["x"]) + _f32(x["r"])
        return {"res": h, "out": h / np.sqrt((h * h).mean(axis=1, keepdims=True) + 1e-6) * _f32(x["w"])}

    size = _itemsize(dtype)
    block = 1 << (cols - 1).bit_length()
    return Case("holdout2_add_rmsnorm", name, "holdout2", add_rmsnorm_kernel, {"rows": rows, "cols": cols}, dtype,
                [{"BLOCK": block, "num_warps": w} for w in ROW_WARPS], inputs, ("out", "res"),
                lambda x, cfg: (x["x"], x["r"], x["w"], x["out"], x["res"], cols, 1e-6), lambda cfg: (rows,),
                reference, tolerance=2e-2, min_bytes=4.0 * size * rows * cols)


BMM_CONFIGS = [{k: v for k, v in c.items() if k != "GROUP_M"} for c in MATMUL_CONFIGS]


def bmm_case(name, batch, m, n, k, dtype):
    def inputs(rng):
        return {"a": _rand(rng, (batch, m, k), dtype), "b": _rand(rng, (batch, k, n), dtype),
                "c": np.empty((batch, m, n), _np_dtype(dtype))}

    size = _itemsize(dtype)
    return Case("holdout2_bmm", name, "holdout2", bmm_kernel, {"batch": batch, "M": m, "N": n, "K": k}, dtype,
                BMM_CONFIGS, inputs, ("c",), lambda x, cfg: (x["a"], x["b"], x["c"], m, n, k),
                lambda cfg: (math.ceil(m / cfg["BLOCK_M"]) * math.ceil(n / cfg["BLOCK_N"]), batch),
                lambda x: {"c": _f32(x["a"]) @ _f32(x["b"])}, tolerance=2e-2, flops=2.0 * batch * m * n * k,
                min_bytes=size * batch * (m * k + k * n + m * n))


GEMV_CONFIGS = _grid_configs({"BLOCK_N": [1, 4, 16, 64], "BLOCK_K": [128, 256, 512, 1024], "num_warps": [1, 2, 4, 8]},
                             limit=16, seed=12, keep=lambda c: c["BLOCK_N"] * c["BLOCK_K"] <= 16384
                             and c["BLOCK_N"] * c["BLOCK_K"] >= 32 * c["num_warps"])


def gemv_case(name, n, k, dtype):
    def inputs(rng):
        return {"w": _rand(rng, (n, k), dtype, 0.05), "x": _rand(rng, (k,), dtype), "y": np.empty(n, _np_dtype(dtype))}

    size = _itemsize(dtype)
    return Case("holdout2_gemv", name, "holdout2", gemv_kernel, {"N": n, "K": k}, dtype, GEMV_CONFIGS, inputs, ("y",),
                lambda x, cfg: (x["w"], x["x"], x["y"], n, k), lambda cfg: (math.ceil(n / cfg["BLOCK_N"]),),
                lambda x: {"y": _f32(x["w"]) @ _f32(x["x"])}, tolerance=2e-2, flops=2.0 * n * k,
                min_bytes=size * (n * k + k + n))


def rope_inline_case(name, tokens, heads, d, dtype):
    half = d // 2
    theta = 10000.0

    def inputs(rng):
        return {"x": _rand(rng, (tokens, heads, d), dtype), "pos": rng.integers(0, 8192, tokens).astype(np.int32),
                "out": np.empty((tokens, heads, d), _np_dtype(dtype))}

    def reference(x):
        v = _f32(x["x"]).astype(np.float64)
        inv = theta ** (-(np.arange(half) / half))
        angle = x["pos"][:, None].astype(np.float64) * inv[None, :]
        c, s = np.cos(angle)[:, None, :], np.sin(angle)[:, None, :]
        x1, x2 = v[..., :half], v[..., half:]
        return {"out": np.concatenate([x1 * c - x2 * s, x2 * c + x1 * s], axis=-1)}

    size = _itemsize(dtype)
    return Case("holdout2_rope_inline", name, "holdout2", rope_inline_kernel, {"T": tokens, "H": heads, "D": d}, dtype,
                [{"HALF": half, **c} for c in ROPE_CONFIGS], inputs, ("out",),
                lambda x, cfg: (x["x"], x["pos"], x["out"], tokens, heads, math.log2(theta)),
                lambda cfg: (math.ceil(tokens / cfg["BLOCK_T"]), heads), reference, tolerance=2e-2,
                min_bytes=2.0 * size * tokens * heads * d)


ATOMIC_COLSUM_CONFIGS = _grid_configs({"BLOCK_M": [16, 64, 256], "BLOCK_N": [32, 128, 512], "num_warps": [1, 4, 8]},
                                      limit=16, seed=13, keep=lambda c: c["BLOCK_M"] * c["BLOCK_N"] <= 32768)


def colsum_atomic_case(name, m, n, dtype):
    def inputs(rng):
        return {"x": _rand(rng, (m, n), dtype), "out": np.zeros(n, np.float32)}

    size = _itemsize(dtype)
    return Case("holdout2_colsum_atomic", name, "holdout2", colsum_atomic_kernel, {"M": m, "N": n}, dtype,
                ATOMIC_COLSUM_CONFIGS, inputs, ("out",), lambda x, cfg: (x["x"], x["out"], m, n),
                lambda cfg: (math.ceil(m / cfg["BLOCK_M"]), math.ceil(n / cfg["BLOCK_N"])),
                lambda x: {"out": _f32(x["x"]).sum(axis=0)}, tolerance=1e-3, min_bytes=size * m * n,
                extra={"zero_outputs": True})


def holdout2_cases() -> list[Case]:
    return [
        softmax_persistent_case("holdout2_softmax_persistent_fp32_8192x1024", 8192, 1024, "fp32"),
        softmax_persistent_case("holdout2_softmax_persistent_fp16_16384x2048", 16384, 2048, "fp16"),
        add_rmsnorm_case("holdout2_add_rmsnorm_bf16_8192x4096", 8192, 4096, "bf16"),
        add_rmsnorm_case("holdout2_add_rmsnorm_fp16_16384x2048", 16384, 2048, "fp16"),
        bmm_case("holdout2_bmm_fp16_b32_512", 32, 512, 512, 512, "fp16"),
        bmm_case("holdout2_bmm_bf16_b8_1024x2048x1024", 8, 1024, 2048, 1024, "bf16"),
        gemv_case("holdout2_gemv_bf16_8192x8192", 8192, 8192, "bf16"),
        gemv_case("holdout2_gemv_fp16_4096x14336", 4096, 14336, "fp16"),
        rope_inline_case("holdout2_rope_inline_fp16_t4096_h32_d128", 4096, 32, 128, "fp16"),
        colsum_atomic_case("holdout2_colsum_atomic_fp32_65536x1024", 65536, 1024, "fp32"),
        colsum_atomic_case("holdout2_colsum_atomic_bf16_32768x4096", 32768, 4096, "bf16"),
    ]
