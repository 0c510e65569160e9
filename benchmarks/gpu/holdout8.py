"""The eighth held-out set (split "holdout8"): kernels written for a fresh measurement after the model laid loads out
by the pointer alone and streamed single-reduction tiles, scored once with that model frozen.

Steps of LLM serving the other sets lack: GPT-J's interleaved rotary, a row-scaled SwiGLU, a masked row mean, an int8
KV-cache dequantize, and per-expert GEMVs. Kernels and cases live together here, one module for the set.
"""

from __future__ import annotations

import math

import numpy as np
from holdout4 import _next_pow2
from sweep_cases import Case, _f32, _grid_configs, _itemsize, _np_dtype, _rand
from sweep_kernels import jit, tl


@jit
def rotary_interleaved_kernel(x_ptr, cos_ptr, sin_ptr, out_ptr, n_tokens, n_heads, HALF: tl.constexpr,
                              BLOCK_T: tl.constexpr):
    """GPT-J rotary embedding of x [tokens, heads, 2 * HALF] with cos / sin tables [tokens, HALF]: the pairs
    (2i, 2i + 1) rotate, so the even and odd halves are two stride-2 loads; one program per (BLOCK_T tokens,
    head)."""
    tokens = tl.program_id(0) * BLOCK_T + tl.arange(0, BLOCK_T)
    head = tl.program_id(1)
    i = tl.arange(0, HALF)
    mask = tokens[:, None] < n_tokens
    even = (tokens[:, None] * n_heads + head) * (2 * HALF) + 2 * i[None, :]
    x_even = tl.load(x_ptr + even, mask=mask, other=0.0).to(tl.float32)
    x_odd = tl.load(x_ptr + even + 1, mask=mask, other=0.0).to(tl.float32)
    c = tl.load(cos_ptr + tokens[:, None] * HALF + i[None, :], mask=mask, other=0.0)
    s = tl.load(sin_ptr + tokens[:, None] * HALF + i[None, :], mask=mask, other=0.0)
    tl.store(out_ptr + even, (x_even * c - x_odd * s).to(out_ptr.dtype.element_ty), mask=mask)
    tl.store(out_ptr + even + 1, (x_odd * c + x_even * s).to(out_ptr.dtype.element_ty), mask=mask)


@jit
def silu_mul_rowscale_kernel(a_ptr, b_ptr, scale_ptr, out_ptr, n_rows, n_cols, BLOCK_R: tl.constexpr,
                             BLOCK_N: tl.constexpr):
    """out[r, :] = silu(a[r, :]) * b[r, :] * scale[r]: a SwiGLU gate over separate gate and up tensors [rows, N]
    with a per-row fp32 scale; one program per (BLOCK_R rows, BLOCK_N columns)."""
    rows = tl.program_id(0) * BLOCK_R + tl.arange(0, BLOCK_R)
    cols = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    mask = (rows[:, None] < n_rows) & (cols[None, :] < n_cols)
    offs = rows[:, None].to(tl.int64) * n_cols + cols[None, :]
    a = tl.load(a_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    b = tl.load(b_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    scale = tl.load(scale_ptr + rows, mask=rows < n_rows, other=0.0)
    y = a / (1.0 + tl.exp(-a)) * b * scale[:, None]
    tl.store(out_ptr + offs, y.to(out_ptr.dtype.element_ty), mask=mask)


@jit
def masked_mean_kernel(x_ptr, m_ptr, out_ptr, n_rows, n_cols, BLOCK_R: tl.constexpr, BLOCK_N: tl.constexpr):
    """out[r] = sum(x[r] * m[r]) / max(sum(m[r]), 1) for x [rows, N] and a 0 / 1 int8 mask of the same shape: one
    program per BLOCK_R rows walks the columns BLOCK_N at a time, each chunk summed as it arrives."""
    rows = tl.program_id(0) * BLOCK_R + tl.arange(0, BLOCK_R)
    row_mask = rows < n_rows
    base = rows[:, None].to(tl.int64) * n_cols
    total = tl.zeros([BLOCK_R], dtype=tl.float32)
    count = tl.zeros([BLOCK_R], dtype=tl.float32)
    for start in range(0, n_cols, BLOCK_N):
        cols = start + tl.arange(0, BLOCK_N)
        mask = row_mask[:, None] & (cols[None, :] < n_cols)
        x = tl.load(x_ptr + base + cols[None, :], mask=mask, other=0.0).to(tl.float32)
        m = tl.load(m_ptr + base + cols[None, :], mask=mask, other=0).to(tl.float32)
        total += tl.sum(x * m, axis=1)
        count += tl.sum(m, axis=1)
    tl.store(out_ptr + rows, total / tl.maximum(count, 1.0), mask=row_mask)


@jit
def kv_dequant_kernel(q_ptr, scale_ptr, out_ptr, n_tokens, n_heads, HEAD_DIM: tl.constexpr, BLOCK_D: tl.constexpr,
                      BLOCK_T: tl.constexpr):
    """An int8 KV cache [tokens, heads, HEAD_DIM] widened to the attention's type: out = q * scale[t, h] with an
    fp32 scale per token and head; BLOCK_D is HEAD_DIM rounded up to a power of two; one program per (BLOCK_T
    tokens, head)."""
    tokens = tl.program_id(0) * BLOCK_T + tl.arange(0, BLOCK_T)
    head = tl.program_id(1)
    d = tl.arange(0, BLOCK_D)
    valid = tokens < n_tokens
    mask = valid[:, None] & (d[None, :] < HEAD_DIM)
    row = tokens.to(tl.int64) * n_heads + head
    offs = row[:, None] * HEAD_DIM + d[None, :]
    q = tl.load(q_ptr + offs, mask=mask, other=0).to(tl.float32)
    scale = tl.load(scale_ptr + row, mask=valid, other=0.0)
    tl.store(out_ptr + offs, (q * scale[:, None]).to(out_ptr.dtype.element_ty), mask=mask)


@jit
def batched_gemv_kernel(w_ptr, x_ptr, y_ptr, N, K, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    """y[b] = W[b] x[b] for per-batch row-major weights W [B, N, K] and vectors x [B, K] (small per-expert
    projections at decode), fp32 sums of each BLOCK_N x BLOCK_K chunk as it arrives; programs along N first,
    so neighbours share x[b]."""
    rows = tl.program_id(0) * BLOCK_N + tl.arange(0, BLOCK_N)
    batch = tl.program_id(1).to(tl.int64)
    w_rows = w_ptr + batch * N * K + rows[:, None] * K
    acc = tl.zeros([BLOCK_N], dtype=tl.float32)
    for k in range(0, K, BLOCK_K):
        cols = k + tl.arange(0, BLOCK_K)
        w = tl.load(w_rows + cols[None, :], mask=(rows[:, None] < N) & (cols[None, :] < K), other=0.0)
        x = tl.load(x_ptr + batch * K + cols, mask=cols < K, other=0.0)
        acc += tl.sum(w.to(tl.float32) * x.to(tl.float32)[None, :], axis=1)
    tl.store(y_ptr + batch * N + rows, acc.to(y_ptr.dtype.element_ty), mask=rows < N)


# --- cases

def rotary_interleaved_case(name, tokens, heads, d, dtype):
    half = d // 2
    configs = _grid_configs({"BLOCK_T": [1, 2, 4, 8, 16, 32], "num_warps": [1, 2, 4, 8]}, limit=16, seed=81,
                            keep=lambda c: c["BLOCK_T"] * half >= 32 * c["num_warps"])

    def inputs(rng):
        angles = rng.uniform(0, 2 * np.pi, (tokens, half)).astype(np.float32)
        return {"x": _rand(rng, (tokens, heads, d), dtype), "cos": np.cos(angles), "sin": np.sin(angles),
                "out": np.empty((tokens, heads, d), _np_dtype(dtype))}

    def reference(x):
        v = _f32(x["x"]).astype(np.float64)
        c, s = x["cos"][:, None, :].astype(np.float64), x["sin"][:, None, :].astype(np.float64)
        even, odd = v[..., 0::2], v[..., 1::2]
        return {"out": np.stack([even * c - odd * s, odd * c + even * s], axis=-1).reshape(v.shape)}

    size = _itemsize(dtype)
    return Case("holdout8_rotary_interleaved", name, "holdout8", rotary_interleaved_kernel,
                {"T": tokens, "H": heads, "D": d}, dtype, [{"HALF": half, **c} for c in configs], inputs, ("out",),
                lambda x, cfg: (x["x"], x["cos"], x["sin"], x["out"], tokens, heads),
                lambda cfg: (math.ceil(tokens / cfg["BLOCK_T"]), heads), reference, tolerance=1e-2,
                min_bytes=2.0 * size * tokens * heads * d + 8.0 * tokens * half)


SILU_MUL_CONFIGS = _grid_configs({"BLOCK_R": [1, 2, 4, 8], "BLOCK_N": [256, 512, 1024, 2048],
                                  "num_warps": [1, 2, 4, 8]}, limit=16, seed=82,
                                 keep=lambda c: c["BLOCK_R"] * c["BLOCK_N"] >= 32 * c["num_warps"])


def silu_mul_rowscale_case(name, rows, cols, dtype):
    def inputs(rng):
        return {"a": _rand(rng, (rows, cols), dtype, 2.0), "b": _rand(rng, (rows, cols), dtype),
                "scale": rng.uniform(0.5, 2.0, rows).astype(np.float32),
                "out": np.empty((rows, cols), _np_dtype(dtype))}

    def reference(x):
        a = _f32(x["a"]).astype(np.float64)
        return {"out": a / (1 + np.exp(-a)) * _f32(x["b"]) * x["scale"][:, None].astype(np.float64)}

    size = _itemsize(dtype)
    return Case("holdout8_silu_mul_rowscale", name, "holdout8", silu_mul_rowscale_kernel,
                {"rows": rows, "N": cols}, dtype, SILU_MUL_CONFIGS, inputs, ("out",),
                lambda x, cfg: (x["a"], x["b"], x["scale"], x["out"], rows, cols),
                lambda cfg: (math.ceil(rows / cfg["BLOCK_R"]), math.ceil(cols / cfg["BLOCK_N"])), reference,
                tolerance=1e-2, min_bytes=3.0 * size * rows * cols + 4.0 * rows)


MASKED_MEAN_CONFIGS = _grid_configs({"BLOCK_R": [1, 2, 4, 8, 16], "BLOCK_N": [128, 256, 512, 1024],
                                     "num_warps": [1, 2, 4, 8]}, limit=16, seed=83,
                                    keep=lambda c: c["BLOCK_R"] * c["BLOCK_N"] >= 32 * c["num_warps"])


def masked_mean_case(name, rows, cols, dtype):
    def inputs(rng):
        return {"x": _rand(rng, (rows, cols), dtype), "m": rng.integers(0, 2, (rows, cols), dtype=np.int8),
                "out": np.empty(rows, np.float32)}

    def reference(x):
        m = x["m"].astype(np.float64)
        return {"out": (_f32(x["x"]) * m).sum(axis=1) / np.maximum(m.sum(axis=1), 1)}

    return Case("holdout8_masked_mean", name, "holdout8", masked_mean_kernel, {"rows": rows, "N": cols}, dtype,
                MASKED_MEAN_CONFIGS, inputs, ("out",), lambda x, cfg: (x["x"], x["m"], x["out"], rows, cols),
                lambda cfg: (math.ceil(rows / cfg["BLOCK_R"]),), reference, tolerance=1e-4,
                min_bytes=(_itemsize(dtype) + 1.0) * rows * cols + 4.0 * rows)


def kv_dequant_case(name, tokens, heads, d, dtype):
    """`dtype` is the output's: the cache is int8 with an fp32 scale per (token, head)."""
    block = _next_pow2(d)
    configs = _grid_configs({"BLOCK_T": [1, 2, 4, 8, 16, 32, 64], "num_warps": [1, 2, 4, 8]}, limit=16, seed=84,
                            keep=lambda c: c["BLOCK_T"] * block >= 32 * c["num_warps"])

    def inputs(rng):
        return {"q": rng.integers(-127, 128, (tokens, heads, d), dtype=np.int8),
                "scale": rng.uniform(1e-3, 2e-2, (tokens, heads)).astype(np.float32),
                "out": np.empty((tokens, heads, d), _np_dtype(dtype))}

    def reference(x):
        return {"out": x["q"].astype(np.float64) * x["scale"][:, :, None].astype(np.float64)}

    return Case("holdout8_kv_dequant", name, "holdout8", kv_dequant_kernel, {"T": tokens, "H": heads, "D": d}, dtype,
                [{"HEAD_DIM": d, "BLOCK_D": block, **c} for c in configs], inputs, ("out",),
                lambda x, cfg: (x["q"], x["scale"], x["out"], tokens, heads),
                lambda cfg: (math.ceil(tokens / cfg["BLOCK_T"]), heads), reference, tolerance=1e-2,
                min_bytes=(1.0 + _itemsize(dtype)) * tokens * heads * d + 4.0 * tokens * heads)


BATCHED_GEMV_CONFIGS = _grid_configs({"BLOCK_N": [1, 4, 16, 32, 64], "BLOCK_K": [64, 128, 256, 512],
                                      "num_warps": [1, 2, 4, 8]}, limit=20, seed=85,
                                     keep=lambda c: 32 * c["num_warps"] <= c["BLOCK_N"] * c["BLOCK_K"] <= 32768)


def batched_gemv_case(name, batch, n, k, dtype):
    def inputs(rng):
        return {"w": _rand(rng, (batch, n, k), dtype, 0.05), "x": _rand(rng, (batch, k), dtype),
                "y": np.empty((batch, n), _np_dtype(dtype))}

    def reference(x):
        return {"y": np.einsum("bnk,bk->bn", _f32(x["w"]).astype(np.float64), _f32(x["x"]).astype(np.float64))}

    size = _itemsize(dtype)
    return Case("holdout8_batched_gemv", name, "holdout8", batched_gemv_kernel, {"B": batch, "N": n, "K": k}, dtype,
                BATCHED_GEMV_CONFIGS, inputs, ("y",), lambda x, cfg: (x["w"], x["x"], x["y"], n, k),
                lambda cfg: (math.ceil(n / cfg["BLOCK_N"]), batch), reference, tolerance=1e-2,
                flops=2.0 * batch * n * k, min_bytes=size * batch * (n * k + k + n))


def holdout8_cases() -> list[Case]:
    return [
        rotary_interleaved_case("holdout8_rotary_interleaved_bf16_t8192_h32_d128", 8192, 32, 128, "bf16"),
        rotary_interleaved_case("holdout8_rotary_interleaved_fp16_t3000_h8_d64", 3000, 8, 64, "fp16"),
        silu_mul_rowscale_case("holdout8_silu_mul_rowscale_bf16_4096x11008", 4096, 11008, "bf16"),
        silu_mul_rowscale_case("holdout8_silu_mul_rowscale_fp16_1000x2731", 1000, 2731, "fp16"),
        masked_mean_case("holdout8_masked_mean_fp32_8192x4096", 8192, 4096, "fp32"),
        masked_mean_case("holdout8_masked_mean_bf16_2048x30000", 2048, 30000, "bf16"),
        kv_dequant_case("holdout8_kv_dequant_bf16_t16384_h8_d128", 16384, 8, 128, "bf16"),
        kv_dequant_case("holdout8_kv_dequant_fp16_t5000_h4_d96", 5000, 4, 96, "fp16"),
        batched_gemv_case("holdout8_batched_gemv_bf16_b8_4096x4096", 8, 4096, 4096, "bf16"),
        batched_gemv_case("holdout8_batched_gemv_fp16_b64_1536x640", 64, 1536, 640, "fp16"),
    ]
