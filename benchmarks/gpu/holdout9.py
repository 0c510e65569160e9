"""The ninth held-out set (split "holdout9"): ordinary Triton-tutorial kernels in a style the sweep's own lack, at
shapes no other case uses, written for a fresh measurement and scored once with the model frozen.

A matmul with a bias and activation epilogue, non-causal flash attention over [batch, heads, seq, dim], a two-pass
online softmax, a several-rows LayerNorm that keeps its statistics, and a strided transposing copy. Kernels and cases
live together here, one module for the set.
"""

from __future__ import annotations

import math

import numpy as np
from holdout4 import _next_pow2
from sweep_cases import Case, _f32, _grid_configs, _itemsize, _np_dtype, _rand
from sweep_kernels import jit, tl


@jit
def leaky_relu(x):
    """max(x, 0.01 x), as Triton tutorial 03's fused activation."""
    return tl.where(x >= 0, x, 0.01 * x)


@jit
def matmul_epilogue_kernel(a_ptr, b_ptr, bias_ptr, c_ptr, M, N, K, stride_am, stride_ak, stride_bk, stride_bn,
                           stride_cm, stride_cn, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
                           GROUP_M: tl.constexpr):
    """C = leaky_relu(A @ B + bias) with a bias per column, in Triton tutorial 03's shape: grouped program order, a
    K loop of masked tiles accumulated in fp32, the epilogue applied before the store in C's type."""
    pid = tl.program_id(axis=0)
    num_pid_m = tl.cdiv(M, BLOCK_M)
    num_pid_n = tl.cdiv(N, BLOCK_N)
    num_pid_in_group = GROUP_M * num_pid_n
    group_id = pid // num_pid_in_group
    first_pid_m = group_id * GROUP_M
    group_size_m = tl.minimum(num_pid_m - first_pid_m, GROUP_M)
    pid_m = first_pid_m + ((pid % num_pid_in_group) % group_size_m)
    pid_n = (pid % num_pid_in_group) // group_size_m
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_k = tl.arange(0, BLOCK_K)
    a_ptrs = a_ptr + offs_m[:, None] * stride_am + offs_k[None, :] * stride_ak
    b_ptrs = b_ptr + offs_k[:, None] * stride_bk + offs_n[None, :] * stride_bn
    accumulator = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BLOCK_K)):
        k_left = K - k * BLOCK_K
        a = tl.load(a_ptrs, mask=(offs_m[:, None] < M) & (offs_k[None, :] < k_left), other=0.0)
        b = tl.load(b_ptrs, mask=(offs_k[:, None] < k_left) & (offs_n[None, :] < N), other=0.0)
        accumulator += tl.dot(a, b)
        a_ptrs += BLOCK_K * stride_ak
        b_ptrs += BLOCK_K * stride_bk
    bias = tl.load(bias_ptr + offs_n, mask=offs_n < N, other=0.0).to(tl.float32)
    c = leaky_relu(accumulator + bias[None, :]).to(c_ptr.dtype.element_ty)
    c_ptrs = c_ptr + offs_m[:, None] * stride_cm + offs_n[None, :] * stride_cn
    tl.store(c_ptrs, c, mask=(offs_m[:, None] < M) & (offs_n[None, :] < N))


@jit
def attention_fwd_kernel(q_ptr, k_ptr, v_ptr, o_ptr, stride_b, stride_h, stride_s, n_heads, seq, sm_scale,
                         HEAD_DIM: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    """Non-causal flash attention forward on q, k, v, o [batch, heads, seq, HEAD_DIM]: one program per (BLOCK_M
    queries, batch * head) streams every key and value block through an online softmax, K read as K^T tiles."""
    start_m = tl.program_id(0)
    off_hz = tl.program_id(1)
    offset = (off_hz // n_heads).to(tl.int64) * stride_b + (off_hz % n_heads).to(tl.int64) * stride_h
    offs_m = start_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = tl.arange(0, BLOCK_N)
    offs_d = tl.arange(0, HEAD_DIM)
    q = tl.load(q_ptr + offset + offs_m[:, None] * stride_s + offs_d[None, :], mask=offs_m[:, None] < seq, other=0.0)
    kt_ptrs = k_ptr + offset + offs_d[:, None] + offs_n[None, :] * stride_s
    v_ptrs = v_ptr + offset + offs_n[:, None] * stride_s + offs_d[None, :]
    m_i = tl.full([BLOCK_M], -float("inf"), tl.float32)
    l_i = tl.zeros([BLOCK_M], dtype=tl.float32)
    acc = tl.zeros([BLOCK_M, HEAD_DIM], dtype=tl.float32)
    for start_n in range(0, seq, BLOCK_N):
        kv_valid = start_n + offs_n < seq
        kt = tl.load(kt_ptrs, mask=kv_valid[None, :], other=0.0)
        qk = tl.where(kv_valid[None, :], tl.dot(q, kt) * sm_scale, -float("inf"))
        m_new = tl.maximum(m_i, tl.max(qk, axis=1))
        p = tl.exp(qk - m_new[:, None])
        alpha = tl.exp(m_i - m_new)
        v = tl.load(v_ptrs, mask=kv_valid[:, None], other=0.0)
        acc = acc * alpha[:, None] + tl.dot(p.to(v.dtype), v)
        l_i = l_i * alpha + tl.sum(p, axis=1)
        m_i = m_new
        kt_ptrs += BLOCK_N * stride_s
        v_ptrs += BLOCK_N * stride_s
    o = acc / l_i[:, None]
    tl.store(o_ptr + offset + offs_m[:, None] * stride_s + offs_d[None, :], o.to(o_ptr.dtype.element_ty),
             mask=offs_m[:, None] < seq)


@jit
def online_softmax_kernel(x_ptr, out_ptr, n_cols, BLOCK_N: tl.constexpr):
    """Softmax of rows wider than a block, one program per row: a first pass over BLOCK_N-wide chunks keeps the
    running max and the sum of exponentials rescaled to it, a second pass reads the row again and writes
    exp(x - max) / sum."""
    row = tl.program_id(0).to(tl.int64)
    x_row = x_ptr + row * n_cols
    out_row = out_ptr + row * n_cols
    row_max = -float("inf")
    row_sum = 0.0
    for start in range(0, n_cols, BLOCK_N):
        cols = start + tl.arange(0, BLOCK_N)
        x = tl.load(x_row + cols, mask=cols < n_cols, other=-float("inf")).to(tl.float32)
        new_max = tl.maximum(row_max, tl.max(x, axis=0))
        row_sum = row_sum * tl.exp(row_max - new_max) + tl.sum(tl.exp(x - new_max), axis=0)
        row_max = new_max
    for start in range(0, n_cols, BLOCK_N):
        cols = start + tl.arange(0, BLOCK_N)
        x = tl.load(x_row + cols, mask=cols < n_cols, other=-float("inf")).to(tl.float32)
        tl.store(out_row + cols, (tl.exp(x - row_max) / row_sum).to(out_ptr.dtype.element_ty), mask=cols < n_cols)


@jit
def layernorm_rows_kernel(x_ptr, y_ptr, w_ptr, b_ptr, mean_ptr, rstd_ptr, n_rows, n_cols, eps, BLOCK_M: tl.constexpr,
                          BLOCK_N: tl.constexpr):
    """LayerNorm forward, y = (x - mean) * rstd * w + b, of BLOCK_M rows per program, each row one BLOCK_N tile
    (N rounded up to a power of two); each row's mean and rstd are stored in fp32 for the backward."""
    rows = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    cols = tl.arange(0, BLOCK_N)
    row_mask = rows < n_rows
    col_mask = cols < n_cols
    mask = row_mask[:, None] & col_mask[None, :]
    offs = rows[:, None].to(tl.int64) * n_cols + cols[None, :]
    x = tl.load(x_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    mean = tl.sum(x, axis=1) / n_cols
    centered = tl.where(mask, x - mean[:, None], 0.0)
    rstd = 1 / tl.sqrt(tl.sum(centered * centered, axis=1) / n_cols + eps)
    w = tl.load(w_ptr + cols, mask=col_mask, other=0.0).to(tl.float32)
    b = tl.load(b_ptr + cols, mask=col_mask, other=0.0).to(tl.float32)
    y = centered * rstd[:, None] * w[None, :] + b[None, :]
    tl.store(y_ptr + offs, y.to(y_ptr.dtype.element_ty), mask=mask)
    tl.store(mean_ptr + rows, mean, mask=row_mask)
    tl.store(rstd_ptr + rows, rstd, mask=row_mask)


@jit
def copy2d_kernel(x_ptr, out_ptr, M, N, stride_xm, stride_xn, stride_om, stride_on, alpha, BLOCK_M: tl.constexpr,
                  BLOCK_N: tl.constexpr):
    """out[j, i] = alpha * x[i, j] for x [M, N] and out [N, M] addressed through their strides: one program per
    BLOCK_M x BLOCK_N tile of x on a 2D grid."""
    offs_m = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    mask = (offs_m[:, None] < M) & (offs_n[None, :] < N)
    x = tl.load(x_ptr + offs_m[:, None] * stride_xm + offs_n[None, :] * stride_xn, mask=mask, other=0.0)
    y = (x.to(tl.float32) * alpha).to(out_ptr.dtype.element_ty)
    tl.store(out_ptr + offs_n[None, :] * stride_om + offs_m[:, None] * stride_on, y, mask=mask)


# --- cases

MATMUL_EPILOGUE_CONFIGS = _grid_configs(
    {"BLOCK_M": [32, 64, 128, 256], "BLOCK_N": [32, 64, 128, 256], "BLOCK_K": [32, 64, 128], "GROUP_M": [1, 8],
     "num_warps": [4, 8], "num_stages": [2, 3, 4, 5]}, limit=24, seed=91,
    keep=lambda c: (c["BLOCK_M"] * c["BLOCK_N"] <= 128 * 32 * c["num_warps"]  # at most 128 fp32 accumulators a thread
                    and 2 * c["num_stages"] * c["BLOCK_K"] * (c["BLOCK_M"] + c["BLOCK_N"]) <= 227 * 1024))


def matmul_epilogue_case(name, m, n, k, dtype):
    """fp16 / bf16 only: fp32 inputs would multiply in TF32."""
    def inputs(rng):
        return {"a": _rand(rng, (m, k), dtype), "b": _rand(rng, (k, n), dtype, 0.05),
                "bias": _rand(rng, (n,), dtype), "c": np.empty((m, n), _np_dtype(dtype))}

    def reference(x):
        h = _f32(x["a"]).astype(np.float64) @ _f32(x["b"]).astype(np.float64) + _f32(x["bias"])
        return {"c": np.where(h >= 0, h, 0.01 * h)}

    size = _itemsize(dtype)
    return Case("holdout9_matmul_epilogue", name, "holdout9", matmul_epilogue_kernel, {"M": m, "N": n, "K": k}, dtype,
                MATMUL_EPILOGUE_CONFIGS, inputs, ("c",),
                lambda x, cfg: (x["a"], x["b"], x["bias"], x["c"], m, n, k, k, 1, n, 1, n, 1),
                lambda cfg: (math.ceil(m / cfg["BLOCK_M"]) * math.ceil(n / cfg["BLOCK_N"]),), reference,
                tolerance=2e-2, flops=2.0 * m * n * k, min_bytes=size * (m * k + k * n + m * n + n))


ATTENTION_FWD_CONFIGS = _grid_configs({"BLOCK_M": [32, 64, 128], "BLOCK_N": [32, 64, 128], "num_warps": [4, 8],
                                       "num_stages": [1, 2, 3]}, limit=16, seed=92)


def attention_fwd_case(name, batch, heads, seq, d, dtype):
    shape = (batch, heads, seq, d)

    def inputs(rng):
        return {"q": _rand(rng, shape, dtype), "k": _rand(rng, shape, dtype), "v": _rand(rng, shape, dtype),
                "o": np.empty(shape, _np_dtype(dtype))}

    def reference(x):
        out = np.empty(shape)
        for b in range(batch):  # one (batch, head) at a time: the scores of all of them at once take gigabytes
            for h in range(heads):
                q, k, v = (_f32(x[t][b, h]).astype(np.float64) for t in ("q", "k", "v"))
                s = q @ k.T / math.sqrt(d)
                p = np.exp(s - s.max(axis=1, keepdims=True))
                out[b, h] = (p / p.sum(axis=1, keepdims=True)) @ v
        return {"o": out}

    size = _itemsize(dtype)
    return Case("holdout9_attention_fwd", name, "holdout9", attention_fwd_kernel,
                {"B": batch, "H": heads, "S": seq, "D": d}, dtype,
                [{"HEAD_DIM": d, **c} for c in ATTENTION_FWD_CONFIGS], inputs, ("o",),
                lambda x, cfg: (x["q"], x["k"], x["v"], x["o"], heads * seq * d, seq * d, d, heads, seq,
                                1.0 / math.sqrt(d)),
                lambda cfg: (math.ceil(seq / cfg["BLOCK_M"]), batch * heads), reference, tolerance=2e-2,
                flops=4.0 * batch * heads * seq * seq * d, min_bytes=4.0 * size * batch * heads * seq * d)


ONLINE_SOFTMAX_CONFIGS = _grid_configs({"BLOCK_N": [256, 512, 1024, 2048, 4096, 8192],
                                        "num_warps": [1, 2, 4, 8, 16]}, limit=16, seed=93,
                                       keep=lambda c: 32 * c["num_warps"] <= c["BLOCK_N"] <= 512 * c["num_warps"])


def online_softmax_case(name, rows, cols, dtype):
    def inputs(rng):
        return {"x": _rand(rng, (rows, cols), dtype, 2.0), "out": np.empty((rows, cols), _np_dtype(dtype))}

    def reference(x):
        v = _f32(x["x"]).astype(np.float64)
        v -= v.max(axis=1, keepdims=True)
        np.exp(v, out=v)
        v /= v.sum(axis=1, keepdims=True)
        return {"out": v}

    size = _itemsize(dtype)
    return Case("holdout9_online_softmax", name, "holdout9", online_softmax_kernel, {"rows": rows, "cols": cols},
                dtype, ONLINE_SOFTMAX_CONFIGS, inputs, ("out",), lambda x, cfg: (x["x"], x["out"], cols),
                lambda cfg: (rows,), reference, tolerance=1e-2, min_bytes=2.0 * size * rows * cols)


LN_EPS = 1e-5


def layernorm_rows_case(name, rows, cols, dtype):
    block = _next_pow2(cols)
    configs = _grid_configs({"BLOCK_M": [1, 2, 4, 8, 16, 32], "num_warps": [1, 2, 4, 8, 16]}, limit=16, seed=94,
                            keep=lambda c: 32 * c["num_warps"] <= c["BLOCK_M"] * block
                            <= min(32768, 256 * 32 * c["num_warps"]))

    def inputs(rng):
        x = rng.standard_normal((rows, cols), dtype=np.float32) * 2.0 + rng.uniform(-1.0, 1.0, (rows, 1))
        return {"x": x.astype(_np_dtype(dtype)), "w": _rand(rng, (cols,), dtype), "b": _rand(rng, (cols,), dtype),
                "y": np.empty((rows, cols), _np_dtype(dtype)), "mean": np.empty(rows, np.float32),
                "rstd": np.empty(rows, np.float32)}

    def reference(x):
        v = _f32(x["x"]).astype(np.float64)
        mean = v.mean(axis=1, keepdims=True)
        rstd = 1 / np.sqrt(((v - mean) ** 2).mean(axis=1, keepdims=True) + LN_EPS)
        return {"y": (v - mean) * rstd * _f32(x["w"]) + _f32(x["b"]), "mean": mean[:, 0], "rstd": rstd[:, 0]}

    size = _itemsize(dtype)
    return Case("holdout9_layernorm_rows", name, "holdout9", layernorm_rows_kernel, {"rows": rows, "cols": cols},
                dtype, [{"BLOCK_N": block, **c} for c in configs], inputs, ("y", "mean", "rstd"),
                lambda x, cfg: (x["x"], x["y"], x["w"], x["b"], x["mean"], x["rstd"], rows, cols, LN_EPS),
                lambda cfg: (math.ceil(rows / cfg["BLOCK_M"]),), reference, tolerance=1e-2,
                min_bytes=2.0 * size * rows * cols + 2.0 * size * cols + 8.0 * rows)


COPY2D_CONFIGS = _grid_configs({"BLOCK_M": [16, 32, 64, 128], "BLOCK_N": [16, 32, 64, 128],
                                "num_warps": [1, 2, 4, 8]}, limit=16, seed=95,
                               keep=lambda c: 32 * c["num_warps"] <= c["BLOCK_M"] * c["BLOCK_N"]
                               <= 128 * 32 * c["num_warps"])
COPY2D_ALPHA = 1.7


def copy2d_case(name, m, n, dtype):
    def inputs(rng):
        return {"x": _rand(rng, (m, n), dtype), "out": np.empty((n, m), _np_dtype(dtype))}

    def reference(x):
        return {"out": COPY2D_ALPHA * _f32(x["x"]).astype(np.float64).T}

    size = _itemsize(dtype)
    return Case("holdout9_copy2d", name, "holdout9", copy2d_kernel, {"M": m, "N": n}, dtype, COPY2D_CONFIGS, inputs,
                ("out",), lambda x, cfg: (x["x"], x["out"], m, n, n, 1, m, 1, COPY2D_ALPHA),
                lambda cfg: (math.ceil(m / cfg["BLOCK_M"]), math.ceil(n / cfg["BLOCK_N"])), reference,
                tolerance=1e-6 if dtype == "fp32" else 1e-2, min_bytes=2.0 * size * m * n)


def holdout9_cases() -> list[Case]:
    return [
        matmul_epilogue_case("holdout9_matmul_epilogue_fp16_2000x3000x1000", 2000, 3000, 1000, "fp16"),
        matmul_epilogue_case("holdout9_matmul_epilogue_bf16_4096x1024x2048", 4096, 1024, 2048, "bf16"),
        attention_fwd_case("holdout9_attention_fwd_bf16_b2_h16_s3000_d64", 2, 16, 3000, 64, "bf16"),
        attention_fwd_case("holdout9_attention_fwd_fp16_b1_h32_s2048_d128", 1, 32, 2048, 128, "fp16"),
        online_softmax_case("holdout9_online_softmax_fp32_4096x50000", 4096, 50000, "fp32"),
        online_softmax_case("holdout9_online_softmax_bf16_8192x7000", 8192, 7000, "bf16"),
        layernorm_rows_case("holdout9_layernorm_rows_fp16_16384x768", 16384, 768, "fp16"),
        layernorm_rows_case("holdout9_layernorm_rows_bf16_4000x3000", 4000, 3000, "bf16"),
        copy2d_case("holdout9_copy2d_fp32_6000x5000", 6000, 5000, "fp32"),
        copy2d_case("holdout9_copy2d_bf16_8192x3000", 8192, 3000, "bf16"),
    ]
