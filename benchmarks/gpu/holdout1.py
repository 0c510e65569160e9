"""The first held-out set (split "holdout"): kernels measured once, scored only by `validate --split holdout`, never
looked at while the model was changed or fitted.

A tanh GELU, a looped logsumexp over rows 32k-152k wide (a cross-entropy's normaliser), NeoX RoPE with cos / sin
tables, a row cumsum, and two matmuls of the sweep's own kernel (an odd shape, and a skinny one with B stored
K-major). Kernels and cases live together here, one module for the set.
"""

from __future__ import annotations

import math

import numpy as np
from sweep_cases import (
    ELEMENTWISE_CONFIGS,
    MATMUL_CONFIGS,
    SKINNY_CONFIGS,
    Case,
    _f32,
    _grid_configs,
    _itemsize,
    _np_dtype,
    _rand,
    matmul_case,
)
from sweep_kernels import jit, tl


@jit
def gelu_tanh_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    u = 0.7978845608 * (x + 0.044715 * x * x * x)
    y = 0.5 * x * (2.0 - 2.0 / (1.0 + tl.exp(2.0 * u)))
    tl.store(out_ptr + offs, y.to(out_ptr.dtype.element_ty), mask=mask)


@jit
def logsumexp_kernel(x_ptr, out_ptr, n_cols, BLOCK: tl.constexpr):
    """One row per program, an online max and sum over BLOCK-wide chunks (a cross-entropy's normaliser)."""
    row = tl.program_id(0)
    m = tl.full([BLOCK], -float("inf"), tl.float32)
    s = tl.zeros([BLOCK], dtype=tl.float32)
    for start in range(0, n_cols, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        x = tl.load(x_ptr + row * n_cols + cols, mask=cols < n_cols, other=-float("inf")).to(tl.float32)
        m_new = tl.maximum(m, x)
        s = s * tl.exp(m - m_new) + tl.where(x > -float("inf"), tl.exp(x - m_new), 0.0)
        m = m_new
    top = tl.max(m, axis=0)
    total = tl.sum(s * tl.exp(m - top), axis=0)
    tl.store(out_ptr + row, top + tl.log(total))


@jit
def rope_kernel(x_ptr, cos_ptr, sin_ptr, out_ptr, n_tokens, n_heads, HALF: tl.constexpr, BLOCK_T: tl.constexpr):
    """NeoX rotary embedding of x [tokens, heads, 2 * HALF] with cos / sin tables [tokens, HALF]."""
    tokens = tl.program_id(0) * BLOCK_T + tl.arange(0, BLOCK_T)
    head = tl.program_id(1)
    d = tl.arange(0, HALF)
    mask = tokens[:, None] < n_tokens
    base = (tokens[:, None] * n_heads + head) * (2 * HALF) + d[None, :]
    x1 = tl.load(x_ptr + base, mask=mask, other=0.0).to(tl.float32)
    x2 = tl.load(x_ptr + base + HALF, mask=mask, other=0.0).to(tl.float32)
    c = tl.load(cos_ptr + tokens[:, None] * HALF + d[None, :], mask=mask, other=0.0)
    s = tl.load(sin_ptr + tokens[:, None] * HALF + d[None, :], mask=mask, other=0.0)
    tl.store(out_ptr + base, (x1 * c - x2 * s).to(out_ptr.dtype.element_ty), mask=mask)
    tl.store(out_ptr + base + HALF, (x2 * c + x1 * s).to(out_ptr.dtype.element_ty), mask=mask)


@jit
def cumsum_kernel(x_ptr, out_ptr, n_rows, n_cols, ROWS: tl.constexpr, BLOCK: tl.constexpr):
    rows = tl.program_id(0) * ROWS + tl.arange(0, ROWS)
    cols = tl.arange(0, BLOCK)
    mask = (rows[:, None] < n_rows) & (cols[None, :] < n_cols)
    x = tl.load(x_ptr + rows[:, None] * n_cols + cols[None, :], mask=mask, other=0.0).to(tl.float32)
    tl.store(out_ptr + rows[:, None] * n_cols + cols[None, :], tl.cumsum(x, axis=1), mask=mask)


# --- cases

def gelu_case(name, n, dtype, split="holdout", family="holdout_gelu", configs=ELEMENTWISE_CONFIGS):
    def inputs(rng):
        return {"x": _rand(rng, (n,), dtype), "out": np.empty(n, _np_dtype(dtype))}

    def reference(x):
        v = _f32(x["x"])
        return {"out": 0.5 * v * (1 + np.tanh(0.7978845608 * (v + 0.044715 * v ** 3)))}

    size = _itemsize(dtype)
    return Case(family, name, split, gelu_tanh_kernel, {"n": n}, dtype, configs, inputs,
                ("out",), lambda x, cfg: (x["x"], x["out"], n), lambda cfg: (math.ceil(n / cfg["BLOCK"]),),
                reference, tolerance=1e-2, min_bytes=2.0 * size * n)


LSE_CONFIGS = _grid_configs({"BLOCK": [256, 1024, 4096, 16384], "num_warps": [1, 2, 4, 8, 16]},
                            keep=lambda c: c["BLOCK"] >= 32 * c["num_warps"])


def logsumexp_case(name, rows, cols, dtype):
    def inputs(rng):
        return {"x": _rand(rng, (rows, cols), dtype, 4.0), "out": np.empty(rows, np.float32)}

    def reference(x):
        v = _f32(x["x"]).astype(np.float64)
        top = v.max(axis=1)
        return {"out": top + np.log(np.exp(v - top[:, None]).sum(axis=1))}

    size = _itemsize(dtype)
    return Case("holdout_logsumexp", name, "holdout", logsumexp_kernel, {"rows": rows, "cols": cols}, dtype,
                LSE_CONFIGS, inputs, ("out",), lambda x, cfg: (x["x"], x["out"], cols), lambda cfg: (rows,),
                reference, tolerance=1e-4, min_bytes=size * rows * cols)


ROPE_CONFIGS = _grid_configs({"BLOCK_T": [1, 4, 16, 64], "num_warps": [1, 2, 4, 8]})


def rope_case(name, tokens, heads, d, dtype):
    half = d // 2

    def inputs(rng):
        angles = rng.uniform(0, 2 * np.pi, (tokens, half)).astype(np.float32)
        return {"x": _rand(rng, (tokens, heads, d), dtype), "cos": np.cos(angles), "sin": np.sin(angles),
                "out": np.empty((tokens, heads, d), _np_dtype(dtype))}

    def reference(x):
        v = _f32(x["x"])
        c, s = x["cos"][:, None, :], x["sin"][:, None, :]
        x1, x2 = v[..., :half], v[..., half:]
        return {"out": np.concatenate([x1 * c - x2 * s, x2 * c + x1 * s], axis=-1)}

    size = _itemsize(dtype)
    return Case("holdout_rope", name, "holdout", rope_kernel, {"T": tokens, "H": heads, "D": d}, dtype,
                [{"HALF": half, **c} for c in ROPE_CONFIGS], inputs, ("out",),
                lambda x, cfg: (x["x"], x["cos"], x["sin"], x["out"], tokens, heads),
                lambda cfg: (math.ceil(tokens / cfg["BLOCK_T"]), heads), reference, tolerance=1e-2,
                min_bytes=2.0 * size * tokens * heads * d + 8.0 * tokens * half)


CUMSUM_CONFIGS = _grid_configs({"ROWS": [1, 2, 4, 8], "num_warps": [1, 2, 4, 8]})


def cumsum_case(name, rows, cols, dtype):
    block = 1 << (cols - 1).bit_length()

    def inputs(rng):
        return {"x": _rand(rng, (rows, cols), dtype), "out": np.empty((rows, cols), np.float32)}

    size = _itemsize(dtype)
    return Case("holdout_cumsum", name, "holdout", cumsum_kernel, {"rows": rows, "cols": cols}, dtype,
                [{"BLOCK": block, **c} for c in CUMSUM_CONFIGS], inputs, ("out",),
                lambda x, cfg: (x["x"], x["out"], rows, cols), lambda cfg: (math.ceil(rows / cfg["ROWS"]),),
                lambda x: {"out": np.cumsum(_f32(x["x"]).astype(np.float64), axis=1)}, tolerance=1e-4,
                min_bytes=(size + 4.0) * rows * cols)


def holdout_cases() -> list[Case]:
    return [
        gelu_case("holdout_gelu_fp16_12M", 12_000_000, "fp16"),
        gelu_case("holdout_gelu_bf16_30M", 30_000_000, "bf16"),
        logsumexp_case("holdout_lse_fp32_4096x32000", 4096, 32000, "fp32"),
        logsumexp_case("holdout_lse_bf16_1024x151936", 1024, 151936, "bf16"),
        rope_case("holdout_rope_fp16_t8192_h32_d128", 8192, 32, 128, "fp16"),
        rope_case("holdout_rope_bf16_t4096_h16_d64", 4096, 16, 64, "bf16"),
        cumsum_case("holdout_cumsum_fp32_16384x1024", 16384, 1024, "fp32"),
        cumsum_case("holdout_cumsum_fp16_65536x200", 65536, 200, "fp16"),
        matmul_case("holdout_matmul_fp16_1000x3000x1500", "holdout", 1000, 3000, 1500, "fp16", MATMUL_CONFIGS),
        matmul_case("holdout_matmul_bf16_wt_512x11008x4096", "holdout", 512, 11008, 4096, "bf16", SKINNY_CONFIGS,
                    b_kmajor=True),
    ]
