"""The sixth held-out set (split "holdout6"): kernels written for a fresh measurement with the model frozen, steps of
training and serving the other sets lack, measured once and scored once.

Qwen3's per-head q/k norm, an AdamW step, a MoE top-k combine, RMSNorm's backward, and a SwiGLU MLP's two projections
in one kernel. Kernels and cases live together here, one module for the set.
"""

from __future__ import annotations

import math

import numpy as np
from holdout3 import BLOCK_WARPS, _whole_warps
from sweep_cases import Case, _f32, _grid_configs, _itemsize, _np_dtype, _rand
from sweep_kernels import jit, tl


@jit
def qk_norm_kernel(x_ptr, w_ptr, out_ptr, n_rows, eps, HEAD_DIM: tl.constexpr, BLOCK_R: tl.constexpr):
    """Qwen3's RMSNorm of every head of the queries or keys: each HEAD_DIM-wide row of x [rows, HEAD_DIM] is
    scaled by its reciprocal root mean square and the weight; one program per BLOCK_R rows."""
    rows = tl.program_id(0) * BLOCK_R + tl.arange(0, BLOCK_R)
    d = tl.arange(0, HEAD_DIM)
    mask = rows[:, None] < n_rows
    offs = rows[:, None].to(tl.int64) * HEAD_DIM + d[None, :]
    x = tl.load(x_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    rstd = 1.0 / tl.sqrt(tl.sum(x * x, axis=1) / HEAD_DIM + eps)
    w = tl.load(w_ptr + d).to(tl.float32)
    tl.store(out_ptr + offs, (x * rstd[:, None] * w[None, :]).to(out_ptr.dtype.element_ty), mask=mask)


@jit
def adamw_kernel(p_ptr, g_ptr, m_ptr, v_ptr, p_out_ptr, m_out_ptr, v_out_ptr, n, lr, beta1, beta2, eps, decay,
                 bias1, bias2, BLOCK: tl.constexpr):
    """One AdamW step over flat fp32 parameters and moments with gradients of any float type; the new values go to
    separate outputs (bias1, bias2: 1 - beta ** step)."""
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    g = tl.load(g_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    m = beta1 * tl.load(m_ptr + offs, mask=mask, other=0.0) + (1.0 - beta1) * g
    v = beta2 * tl.load(v_ptr + offs, mask=mask, other=0.0) + (1.0 - beta2) * g * g
    p = tl.load(p_ptr + offs, mask=mask, other=0.0)
    p = p * (1.0 - lr * decay) - lr * (m / bias1) / (tl.sqrt(v / bias2) + eps)
    tl.store(p_out_ptr + offs, p, mask=mask)
    tl.store(m_out_ptr + offs, m, mask=mask)
    tl.store(v_out_ptr + offs, v, mask=mask)


@jit
def moe_combine_kernel(y_ptr, w_ptr, out_ptr, n_tokens, dim, TOP_K: tl.constexpr, BLOCK_T: tl.constexpr,
                       BLOCK_D: tl.constexpr):
    """A MoE layer's combine: out[t] = sum_k w[t, k] * y[t, k, :] over the TOP_K experts' outputs y [T, TOP_K, dim];
    one program per (BLOCK_T tokens, BLOCK_D columns)."""
    t = tl.program_id(0) * BLOCK_T + tl.arange(0, BLOCK_T)
    d = tl.program_id(1) * BLOCK_D + tl.arange(0, BLOCK_D)
    valid = t < n_tokens
    mask = valid[:, None] & (d[None, :] < dim)
    acc = tl.zeros((BLOCK_T, BLOCK_D), dtype=tl.float32)
    for k in range(TOP_K):
        w = tl.load(w_ptr + t * TOP_K + k, mask=valid, other=0.0)
        y = tl.load(y_ptr + (t[:, None].to(tl.int64) * TOP_K + k) * dim + d[None, :], mask=mask, other=0.0)
        acc += w[:, None] * y.to(tl.float32)
    tl.store(out_ptr + t[:, None].to(tl.int64) * dim + d[None, :], acc.to(out_ptr.dtype.element_ty), mask=mask)


@jit
def rmsnorm_bwd_kernel(dy_ptr, x_ptr, w_ptr, dx_ptr, n_rows, n_cols, eps, BLOCK_R: tl.constexpr,
                       BLOCK_N: tl.constexpr):
    """RMSNorm's input gradient for y = x * rstd * w: dx = rstd * (w dy - x rstd^2 mean(w dy x)), rstd recomputed
    from x; one program per BLOCK_R rows, each row one BLOCK_N-wide tile."""
    rows = tl.program_id(0) * BLOCK_R + tl.arange(0, BLOCK_R)
    cols = tl.arange(0, BLOCK_N)
    mask = (rows[:, None] < n_rows) & (cols[None, :] < n_cols)
    offs = rows[:, None].to(tl.int64) * n_cols + cols[None, :]
    x = tl.load(x_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    dy = tl.load(dy_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    w = tl.load(w_ptr + cols, mask=cols < n_cols, other=0.0).to(tl.float32)
    rstd = 1.0 / tl.sqrt(tl.sum(x * x, axis=1) / n_cols + eps)
    wdy = dy * w[None, :]
    c = tl.sum(wdy * x, axis=1) / n_cols
    dx = (wdy - x * (c * rstd * rstd)[:, None]) * rstd[:, None]
    tl.store(dx_ptr + offs, dx.to(dx_ptr.dtype.element_ty), mask=mask)


@jit
def gated_mlp_kernel(x_ptr, wg_ptr, wu_ptr, h_ptr, M, N, K, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                     BLOCK_K: tl.constexpr):
    """h = silu(x @ Wg) * (x @ Wu), a SwiGLU MLP's gate and up projections in one kernel with two accumulators;
    x [M, K], Wg and Wu [K, N] row-major, K a multiple of BLOCK_K; programs along N first, so neighbours share
    x's rows."""
    offs_n = tl.program_id(0) * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_m = tl.program_id(1) * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_k = tl.arange(0, BLOCK_K)
    gate = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    up = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, K, BLOCK_K):
        a = tl.load(x_ptr + offs_m[:, None] * K + (k + offs_k)[None, :], mask=offs_m[:, None] < M, other=0.0)
        w_offs = (k + offs_k)[:, None] * N + offs_n[None, :]
        gate = tl.dot(a, tl.load(wg_ptr + w_offs, mask=offs_n[None, :] < N, other=0.0), gate)
        up = tl.dot(a, tl.load(wu_ptr + w_offs, mask=offs_n[None, :] < N, other=0.0), up)
    h = gate / (1.0 + tl.exp(-gate)) * up
    mask = (offs_m[:, None] < M) & (offs_n[None, :] < N)
    tl.store(h_ptr + offs_m[:, None] * N + offs_n[None, :], h.to(h_ptr.dtype.element_ty), mask=mask)


# --- cases

QK_NORM_CONFIGS = _grid_configs({"BLOCK_R": [1, 2, 4, 8, 16, 32, 64], "num_warps": [1, 2, 4, 8]}, limit=16, seed=51)
EPS = 1e-6


def qk_norm_case(name, tokens, heads, d, dtype):
    rows = tokens * heads

    def inputs(rng):
        return {"x": _rand(rng, (rows, d), dtype, 2.0), "w": _rand(rng, (d,), dtype),
                "out": np.empty((rows, d), _np_dtype(dtype))}

    def reference(x):
        v = _f32(x["x"]).astype(np.float64)
        return {"out": v / np.sqrt((v * v).mean(axis=1, keepdims=True) + EPS) * _f32(x["w"])}

    size = _itemsize(dtype)
    return Case("holdout6_qk_norm", name, "holdout6", qk_norm_kernel, {"T": tokens, "H": heads, "D": d}, dtype,
                [{"HEAD_DIM": d, **c} for c in QK_NORM_CONFIGS if c["BLOCK_R"] * d >= 32 * c["num_warps"]], inputs,
                ("out",), lambda x, cfg: (x["x"], x["w"], x["out"], rows, EPS),
                lambda cfg: (math.ceil(rows / cfg["BLOCK_R"]),), reference, tolerance=1e-2,
                min_bytes=2.0 * size * rows * d)


ADAMW_CONFIGS = _grid_configs(BLOCK_WARPS, limit=16, seed=52, keep=_whole_warps)
ADAMW = {"lr": 1e-3, "beta1": 0.9, "beta2": 0.999, "eps": 1e-8, "decay": 0.01, "step": 10}


def adamw_case(name, n, grad_dtype):
    h = ADAMW
    bias1, bias2 = 1 - h["beta1"] ** h["step"], 1 - h["beta2"] ** h["step"]

    def inputs(rng):
        return {"p": _rand(rng, (n,), "fp32"), "g": _rand(rng, (n,), grad_dtype, 0.1),
                "m": _rand(rng, (n,), "fp32", 0.01), "v": np.abs(_rand(rng, (n,), "fp32", 1e-3)),
                "p_out": np.empty(n, np.float32), "m_out": np.empty(n, np.float32), "v_out": np.empty(n, np.float32)}

    def reference(x):
        g = _f32(x["g"]).astype(np.float64)
        m = h["beta1"] * x["m"] + (1 - h["beta1"]) * g
        v = h["beta2"] * x["v"] + (1 - h["beta2"]) * g * g
        p = x["p"] * (1 - h["lr"] * h["decay"]) - h["lr"] * (m / bias1) / (np.sqrt(v / bias2) + h["eps"])
        return {"p_out": p, "m_out": m, "v_out": v}

    def args(x, cfg):
        return (x["p"], x["g"], x["m"], x["v"], x["p_out"], x["m_out"], x["v_out"], n, h["lr"], h["beta1"],
                h["beta2"], h["eps"], h["decay"], bias1, bias2)

    return Case("holdout6_adamw", name, "holdout6", adamw_kernel, {"n": n}, grad_dtype, ADAMW_CONFIGS, inputs,
                ("p_out", "m_out", "v_out"), args, lambda cfg: (math.ceil(n / cfg["BLOCK"]),), reference,
                tolerance=1e-4, min_bytes=(24.0 + _itemsize(grad_dtype)) * n)


MOE_COMBINE_CONFIGS = _grid_configs({"BLOCK_T": [1, 2, 4, 8], "BLOCK_D": [128, 256, 512, 1024, 2048],
                                     "num_warps": [1, 2, 4, 8]}, limit=16, seed=53,
                                    keep=lambda c: 32 * c["num_warps"] <= c["BLOCK_T"] * c["BLOCK_D"] <= 8192)


def moe_combine_case(name, tokens, top_k, dim, dtype):
    def inputs(rng):
        weights = rng.random((tokens, top_k), dtype=np.float32)
        return {"y": _rand(rng, (tokens, top_k, dim), dtype), "w": weights / weights.sum(axis=1, keepdims=True),
                "out": np.empty((tokens, dim), _np_dtype(dtype))}

    def reference(x):
        return {"out": np.einsum("tk,tkd->td", x["w"].astype(np.float64), _f32(x["y"]))}

    size = _itemsize(dtype)
    return Case("holdout6_moe_combine", name, "holdout6", moe_combine_kernel, {"T": tokens, "K": top_k, "D": dim},
                dtype, [{"TOP_K": top_k, **c} for c in MOE_COMBINE_CONFIGS], inputs, ("out",),
                lambda x, cfg: (x["y"], x["w"], x["out"], tokens, dim),
                lambda cfg: (math.ceil(tokens / cfg["BLOCK_T"]), math.ceil(dim / cfg["BLOCK_D"])), reference,
                tolerance=1e-2, min_bytes=size * tokens * dim * (top_k + 1) + 4.0 * tokens * top_k)


def rmsnorm_bwd_case(name, rows, cols, dtype):
    block = 1 << (cols - 1).bit_length()
    configs = _grid_configs({"BLOCK_R": [1, 2, 4, 8], "num_warps": [1, 2, 4, 8, 16]}, limit=16, seed=54,
                            keep=lambda c: c["BLOCK_R"] * block <= 512 * 32 * c["num_warps"])

    def inputs(rng):
        return {"dy": _rand(rng, (rows, cols), dtype), "x": _rand(rng, (rows, cols), dtype),
                "w": _rand(rng, (cols,), dtype), "dx": np.empty((rows, cols), _np_dtype(dtype))}

    def reference(x):
        v, wdy = _f32(x["x"]).astype(np.float64), _f32(x["dy"]) * _f32(x["w"])
        rstd = 1 / np.sqrt((v * v).mean(axis=1, keepdims=True) + EPS)
        c = (wdy * v).mean(axis=1, keepdims=True)
        return {"dx": rstd * (wdy - v * rstd * rstd * c)}

    size = _itemsize(dtype)
    return Case("holdout6_rmsnorm_bwd", name, "holdout6", rmsnorm_bwd_kernel, {"rows": rows, "cols": cols}, dtype,
                [{"BLOCK_N": block, **c} for c in configs], inputs, ("dx",),
                lambda x, cfg: (x["dy"], x["x"], x["w"], x["dx"], rows, cols, EPS),
                lambda cfg: (math.ceil(rows / cfg["BLOCK_R"]),), reference, tolerance=1e-2,
                min_bytes=3.0 * size * rows * cols)


GATED_MLP_CONFIGS = _grid_configs({"BLOCK_M": [16, 32, 64, 128], "BLOCK_N": [32, 64, 128, 256],
                                   "BLOCK_K": [32, 64, 128], "num_warps": [4, 8], "num_stages": [2, 3, 4]},
                                  limit=24, seed=55, keep=lambda c: c["BLOCK_M"] * c["BLOCK_N"] <= 128 * 128)


def gated_mlp_case(name, m, n, k, dtype):
    def inputs(rng):
        return {"x": _rand(rng, (m, k), dtype), "wg": _rand(rng, (k, n), dtype, 0.05),
                "wu": _rand(rng, (k, n), dtype, 0.05), "h": np.empty((m, n), _np_dtype(dtype))}

    def reference(x):
        a = _f32(x["x"])
        gate, up = a @ _f32(x["wg"]), a @ _f32(x["wu"])
        return {"h": gate / (1 + np.exp(-gate)) * up}

    size = _itemsize(dtype)
    return Case("holdout6_gated_mlp", name, "holdout6", gated_mlp_kernel, {"M": m, "N": n, "K": k}, dtype,
                GATED_MLP_CONFIGS, inputs, ("h",), lambda x, cfg: (x["x"], x["wg"], x["wu"], x["h"], m, n, k),
                lambda cfg: (math.ceil(n / cfg["BLOCK_N"]), math.ceil(m / cfg["BLOCK_M"])), reference,
                tolerance=2e-2, flops=4.0 * m * n * k, min_bytes=size * (m * k + 2 * k * n + m * n))


def holdout6_cases() -> list[Case]:
    return [
        qk_norm_case("holdout6_qk_norm_bf16_t8192_h32_d128", 8192, 32, 128, "bf16"),
        qk_norm_case("holdout6_qk_norm_fp16_t4096_h16_d256", 4096, 16, 256, "fp16"),
        adamw_case("holdout6_adamw_fp32_16M", 16 * 1024 * 1024, "fp32"),
        adamw_case("holdout6_adamw_bf16grad_30M", 30_000_017, "bf16"),
        moe_combine_case("holdout6_moe_combine_bf16_t8192_k8_d2048", 8192, 8, 2048, "bf16"),
        moe_combine_case("holdout6_moe_combine_fp16_t3000_k4_d5120", 3000, 4, 5120, "fp16"),
        rmsnorm_bwd_case("holdout6_rmsnorm_bwd_bf16_4096x4096", 4096, 4096, "bf16"),
        rmsnorm_bwd_case("holdout6_rmsnorm_bwd_fp16_16384x2560", 16384, 2560, "fp16"),
        gated_mlp_case("holdout6_gated_mlp_fp16_1000x5504x2048", 1000, 5504, 2048, "fp16"),
        gated_mlp_case("holdout6_gated_mlp_bf16_64x11008x4096", 64, 11008, 4096, "bf16"),
    ]
