"""The fifteenth held-out set (split "holdout15"): ordinary Triton kernels written after holdout14 was scored,
measured once on the H200 and scored once with the model frozen, never fitted on.

The backward of softmax cross-entropy over a vocabulary (dlogits = softmax(logits) - onehot(label), scaled by the
loss's gradient; a row in one tile), a five-point Laplacian stencil over a 2-D grid (four shifted, masked neighbour
loads a program tile) and a one-pass LayerNorm over rows wider than a block (Welford's running mean and M2 per
column slot in the loop, merged across slots at the end, then a second loop normalises). Kernels and cases live
together here, one module for the set.
"""

from __future__ import annotations

import math

import numpy as np
from holdout4 import _next_pow2
from sweep_cases import Case, _f32, _grid_configs, _itemsize, _np_dtype, _rand
from sweep_kernels import jit, tl


@jit
def cross_entropy_bwd_kernel(logits_ptr, labels_ptr, dloss_ptr, dlogits_ptr, n_rows, vocab, ROWS: tl.constexpr,
                             BLOCK: tl.constexpr):
    """dlogits = (softmax(logits) - onehot(label)) * dloss for logits [R, V]: ROWS rows a program, each row one
    BLOCK-wide tile; rows whose label is -100 (ignored) get zero gradient."""
    rows = tl.program_id(0) * ROWS + tl.arange(0, ROWS)
    cols = tl.arange(0, BLOCK)
    row_ok = rows < n_rows
    mask = row_ok[:, None] & (cols < vocab)[None, :]
    offs = rows[:, None].to(tl.int64) * vocab + cols[None, :]
    x = tl.load(logits_ptr + offs, mask=mask, other=-float("inf")).to(tl.float32)
    label = tl.load(labels_ptr + rows, mask=row_ok, other=-100)
    scale = tl.load(dloss_ptr + rows, mask=row_ok, other=0.0)
    e = tl.exp(x - tl.max(x, axis=1)[:, None])
    p = e / tl.sum(e, axis=1)[:, None]
    p = tl.where(cols[None, :] == label[:, None], p - 1.0, p)
    scale = tl.where(label == -100, 0.0, scale)
    tl.store(dlogits_ptr + offs, (p * scale[:, None]).to(dlogits_ptr.dtype.element_ty), mask=mask)


@jit
def laplacian_kernel(u_ptr, out_ptr, height, width, BLOCK_H: tl.constexpr, BLOCK_W: tl.constexpr):
    """out = u[i-1, j] + u[i+1, j] + u[i, j-1] + u[i, j+1] - 4 u[i, j] over a [H, W] grid, zero outside it: one
    program per BLOCK_H x BLOCK_W tile, five shifted masked loads, fp32 arithmetic."""
    i = tl.program_id(0) * BLOCK_H + tl.arange(0, BLOCK_H)
    j = tl.program_id(1) * BLOCK_W + tl.arange(0, BLOCK_W)
    inside = (i < height)[:, None] & (j < width)[None, :]
    at = u_ptr + i[:, None].to(tl.int64) * width + j[None, :]
    centre = tl.load(at, mask=inside, other=0.0).to(tl.float32)
    up = tl.load(at - width, mask=inside & (i > 0)[:, None], other=0.0).to(tl.float32)
    down = tl.load(at + width, mask=inside & (i < height - 1)[:, None], other=0.0).to(tl.float32)
    left = tl.load(at - 1, mask=inside & (j > 0)[None, :], other=0.0).to(tl.float32)
    right = tl.load(at + 1, mask=inside & (j < width - 1)[None, :], other=0.0).to(tl.float32)
    out = up + down + left + right - 4.0 * centre
    tl.store(out_ptr + i[:, None].to(tl.int64) * width + j[None, :], out.to(out_ptr.dtype.element_ty), mask=inside)


@jit
def welford_layernorm_kernel(x_ptr, w_ptr, b_ptr, y_ptr, n_cols, eps, BLOCK: tl.constexpr):
    """y = (x - mean) / sqrt(var + eps) * w + b, one program per row wider than BLOCK: a first loop keeps Welford's
    count, mean and M2 per column slot, merged across the slots after it; a second loop normalises."""
    row = tl.program_id(0).to(tl.int64)
    x_ptr += row * n_cols
    y_ptr += row * n_cols
    cols = tl.arange(0, BLOCK)
    count = tl.zeros([BLOCK], dtype=tl.float32)
    mean = tl.zeros([BLOCK], dtype=tl.float32)
    m2 = tl.zeros([BLOCK], dtype=tl.float32)
    for start in range(0, n_cols, BLOCK):
        ok = start + cols < n_cols
        x = tl.load(x_ptr + start + cols, mask=ok, other=0.0).to(tl.float32)
        count += tl.where(ok, 1.0, 0.0)
        delta = tl.where(ok, x - mean, 0.0)
        mean += delta / tl.maximum(count, 1.0)
        m2 += delta * tl.where(ok, x - mean, 0.0)
    total = tl.sum(count, axis=0)
    row_mean = tl.sum(mean * count, axis=0) / total
    shift = mean - row_mean
    var = (tl.sum(m2, axis=0) + tl.sum(count * shift * shift, axis=0)) / total
    rstd = 1.0 / tl.sqrt(var + eps)
    for start in range(0, n_cols, BLOCK):
        ok = start + cols < n_cols
        x = tl.load(x_ptr + start + cols, mask=ok, other=0.0).to(tl.float32)
        w = tl.load(w_ptr + start + cols, mask=ok, other=0.0).to(tl.float32)
        b = tl.load(b_ptr + start + cols, mask=ok, other=0.0).to(tl.float32)
        tl.store(y_ptr + start + cols, ((x - row_mean) * rstd * w + b).to(y_ptr.dtype.element_ty), mask=ok)


# --- cases

def cross_entropy_bwd_case(name, rows, vocab, dtype):
    block = _next_pow2(vocab)
    configs = _grid_configs({"ROWS": [1, 2, 4], "num_warps": [1, 2, 4, 8, 16, 32]}, limit=16, seed=151,
                            keep=lambda c: c["ROWS"] * block <= 256 * 32 * c["num_warps"]
                            and 32 * c["num_warps"] <= c["ROWS"] * block)

    def inputs(rng):
        labels = rng.integers(0, vocab, rows).astype(np.int32)
        labels[rng.random(rows) < 0.1] = -100
        return {"logits": _rand(rng, (rows, vocab), dtype, 3.0), "labels": labels,
                "dloss": (rng.random(rows, dtype=np.float32) + 0.5) / rows,
                "dlogits": np.empty((rows, vocab), _np_dtype(dtype))}

    def reference(x):
        logits = _f32(x["logits"]).astype(np.float64)
        e = np.exp(logits - logits.max(axis=1, keepdims=True))
        p = e / e.sum(axis=1, keepdims=True)
        kept = x["labels"] != -100
        p[np.flatnonzero(kept), x["labels"][kept]] -= 1.0
        return {"dlogits": p * np.where(kept, x["dloss"], 0.0)[:, None]}

    size = _itemsize(dtype)
    return Case("holdout15_cross_entropy_bwd", name, "holdout15", cross_entropy_bwd_kernel, {"R": rows, "V": vocab},
                dtype, [{"BLOCK": block, **c} for c in configs], inputs, ("dlogits",),
                lambda x, cfg: (x["logits"], x["labels"], x["dloss"], x["dlogits"], rows, vocab),
                lambda cfg: (math.ceil(rows / cfg["ROWS"]),), reference, tolerance=1e-2 if dtype != "fp32" else 1e-5,
                min_bytes=2.0 * size * rows * vocab + 8.0 * rows)


def laplacian_case(name, height, width, dtype):
    configs = _grid_configs({"BLOCK_H": [1, 4, 16, 32, 64], "BLOCK_W": [32, 64, 128, 256], "num_warps": [1, 2, 4, 8]},
                            limit=16, seed=152, keep=lambda c: 32 * c["num_warps"] <= c["BLOCK_H"] * c["BLOCK_W"]
                            <= 64 * 32 * c["num_warps"])

    def inputs(rng):
        return {"u": _rand(rng, (height, width), dtype), "out": np.empty((height, width), _np_dtype(dtype))}

    def reference(x):
        u = np.pad(_f32(x["u"]).astype(np.float64), 1)
        return {"out": u[:-2, 1:-1] + u[2:, 1:-1] + u[1:-1, :-2] + u[1:-1, 2:] - 4.0 * u[1:-1, 1:-1]}

    size = _itemsize(dtype)
    return Case("holdout15_laplacian", name, "holdout15", laplacian_kernel, {"H": height, "W": width}, dtype, configs,
                inputs, ("out",), lambda x, cfg: (x["u"], x["out"], height, width),
                lambda cfg: (math.ceil(height / cfg["BLOCK_H"]), math.ceil(width / cfg["BLOCK_W"])), reference,
                tolerance=2e-2 if dtype != "fp32" else 1e-5, flops=5.0 * height * width,
                min_bytes=2.0 * size * height * width)


def welford_layernorm_case(name, rows, cols, dtype):
    configs = _grid_configs({"BLOCK": [256, 512, 1024, 2048, 4096], "num_warps": [1, 2, 4, 8, 16]}, limit=16,
                            seed=153, keep=lambda c: 32 * c["num_warps"] <= c["BLOCK"] <= 32 * 32 * c["num_warps"])
    eps = 1e-5

    def inputs(rng):
        return {"x": _rand(rng, (rows, cols), dtype, 2.0) + np.asarray(1.5, _np_dtype(dtype)),
                "w": _rand(rng, (cols,), dtype), "b": _rand(rng, (cols,), dtype),
                "y": np.empty((rows, cols), _np_dtype(dtype))}

    def reference(x):
        v = _f32(x["x"]).astype(np.float64)
        mean = v.mean(axis=1, keepdims=True)
        var = v.var(axis=1, keepdims=True)
        return {"y": (v - mean) / np.sqrt(var + eps) * _f32(x["w"]) + _f32(x["b"])}

    size = _itemsize(dtype)
    return Case("holdout15_welford_layernorm", name, "holdout15", welford_layernorm_kernel, {"R": rows, "C": cols},
                dtype, configs, inputs, ("y",), lambda x, cfg: (x["x"], x["w"], x["b"], x["y"], cols, eps),
                lambda cfg: (rows,), reference, tolerance=2e-2 if dtype != "fp32" else 1e-4,
                min_bytes=size * (3.0 * rows * cols + 2 * cols))


def holdout15_cases() -> list[Case]:
    return [
        cross_entropy_bwd_case("holdout15_cross_entropy_bwd_bf16_4096x32000", 4096, 32000, "bf16"),
        cross_entropy_bwd_case("holdout15_cross_entropy_bwd_fp32_2048x10000", 2048, 10000, "fp32"),
        laplacian_case("holdout15_laplacian_fp32_8000x6000", 8000, 6000, "fp32"),
        laplacian_case("holdout15_laplacian_bf16_4096x10000", 4096, 10000, "bf16"),
        welford_layernorm_case("holdout15_welford_layernorm_fp16_8192x7000", 8192, 7000, "fp16"),
        welford_layernorm_case("holdout15_welford_layernorm_fp32_2048x20000", 2048, 20000, "fp32"),
    ]
