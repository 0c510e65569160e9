"""Row norms of Qwen3.5 (research/qwen35.md §1.3): RMSNorm (plain `w` and zero-centred `1 + w`, optionally fused
with the residual add), the gated RMSNorm of the Gated DeltaNet output, and LayerNorm.

All norms work over the last dimension of any-rank input. Statistics and the scaling are computed in fp32 and
the result is rounded to the input dtype once. Error bounds against the float64 references below (same inputs):
|got - ref| <= rtol*|ref| + atol with fp32 (1e-5, 1e-6), fp16 (1e-3, 1e-3), bf16 (8e-3, 8e-3) (see `_common`).
Every host function also takes keyword `config` (one of its AUTOTUNE_CONFIGS; default: the machine's config
table's pick, else the first; kernels.config_table) or `tune=True`.
"""

from __future__ import annotations

import numpy as np

import dsl as tl
from jit import cdiv, jit, next_power_of_2
from kernels._common import dtype_name, float_array, launch, random_array, tolerance
from kernels.registry import Case, register
from kernels.tuning import tuned

MAX_COLS = 32768  # a row is held in one tile; longer rows are not a Qwen3.5 shape

# Rows per program and warps. Host functions use the first unless given `config`; `tune=True` lets `jit.autotune`
# choose per row width (modeled time; ties go to the first).
AUTOTUNE_CONFIGS = [
    {"ROWS": 1, "num_warps": 4},
    {"ROWS": 2, "num_warps": 4},
    {"ROWS": 4, "num_warps": 8},
    {"ROWS": 8, "num_warps": 8},
]
# Gated RMSNorm runs over 128-wide heads, so several rows per program keeps a program busy.
GATED_AUTOTUNE_CONFIGS = [
    {"ROWS": 4, "num_warps": 4},
    {"ROWS": 1, "num_warps": 4},
    {"ROWS": 8, "num_warps": 4},
    {"ROWS": 16, "num_warps": 8},
]
LAYERNORM_AUTOTUNE_CONFIGS = AUTOTUNE_CONFIGS


@jit
def _row_block(n_rows, n_cols, ROWS: tl.constexpr, BLOCK_N: tl.constexpr):
    """This program's ROWS x BLOCK_N tile of a row-major [n_rows, n_cols] array: columns, masks, offsets."""
    rows = tl.program_id(0) * ROWS + tl.arange(0, ROWS)
    cols = tl.arange(0, BLOCK_N)
    col_mask = cols < n_cols
    mask = (rows < n_rows)[:, None] & col_mask[None, :]
    return cols, col_mask, mask, rows[:, None] * n_cols + cols[None, :]


@jit
def _rmsnorm_kernel(x_ptr, res_ptr, w_ptr, out_ptr, res_out_ptr, n_rows, n_cols, eps,
                    HAS_RESIDUAL: tl.constexpr, ZERO_CENTERED: tl.constexpr,
                    ROWS: tl.constexpr, BLOCK_N: tl.constexpr):
    cols, col_mask, mask, offs = _row_block(n_rows, n_cols, ROWS, BLOCK_N)
    x = tl.load(x_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    if HAS_RESIDUAL:
        # The new residual is rounded to the storage dtype and the norm reads the rounded value, as a model
        # that adds in its activation dtype would.
        h = (x + tl.load(res_ptr + offs, mask=mask, other=0.0).to(tl.float32)).to(res_out_ptr.dtype.element_ty)
        tl.store(res_out_ptr + offs, h, mask=mask)
        x = h.to(tl.float32)
    inv_rms = tl.rsqrt(tl.sum(x * x, axis=1) / n_cols + eps)
    w = tl.load(w_ptr + cols, mask=col_mask, other=0.0).to(tl.float32)
    if ZERO_CENTERED:
        w = w + 1.0
    y = x * inv_rms[:, None] * w[None, :]
    tl.store(out_ptr + offs, y.to(out_ptr.dtype.element_ty), mask=mask)


@jit
def _gated_rmsnorm_kernel(x_ptr, z_ptr, w_ptr, out_ptr, n_rows, n_cols, eps,
                          ROWS: tl.constexpr, BLOCK_N: tl.constexpr):
    cols, col_mask, mask, offs = _row_block(n_rows, n_cols, ROWS, BLOCK_N)
    x = tl.load(x_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    z = tl.load(z_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    inv_rms = tl.rsqrt(tl.sum(x * x, axis=1) / n_cols + eps)
    w = tl.load(w_ptr + cols, mask=col_mask, other=0.0).to(tl.float32)
    y = x * inv_rms[:, None] * w[None, :] * (z * tl.sigmoid(z))
    tl.store(out_ptr + offs, y.to(out_ptr.dtype.element_ty), mask=mask)


@jit
def _layernorm_kernel(x_ptr, w_ptr, b_ptr, out_ptr, n_rows, n_cols, eps,
                      HAS_BIAS: tl.constexpr, ROWS: tl.constexpr, BLOCK_N: tl.constexpr):
    cols, col_mask, mask, offs = _row_block(n_rows, n_cols, ROWS, BLOCK_N)
    x = tl.load(x_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    mean = tl.sum(x, axis=1) / n_cols
    xc = tl.where(mask, x - mean[:, None], 0.0)  # two-pass variance: no cancellation for rows with a large mean
    inv_std = tl.rsqrt(tl.sum(xc * xc, axis=1) / n_cols + eps)
    y = xc * inv_std[:, None] * tl.load(w_ptr + cols, mask=col_mask, other=0.0).to(tl.float32)[None, :]
    if HAS_BIAS:
        y = y + tl.load(b_ptr + cols, mask=col_mask, other=0.0).to(tl.float32)[None, :]
    tl.store(out_ptr + offs, y.to(out_ptr.dtype.element_ty), mask=mask)


rmsnorm_kernel_tuned = tuned(_rmsnorm_kernel, AUTOTUNE_CONFIGS, key=["n_cols", "HAS_RESIDUAL", "ZERO_CENTERED"])
gated_rmsnorm_kernel_tuned = tuned(_gated_rmsnorm_kernel, GATED_AUTOTUNE_CONFIGS, key=["n_cols"])
layernorm_kernel_tuned = tuned(_layernorm_kernel, LAYERNORM_AUTOTUNE_CONFIGS, key=["n_cols", "HAS_BIAS"])


# --------------------------------------------------------------------------------------------------------------
# host functions


_RMS = (_rmsnorm_kernel, rmsnorm_kernel_tuned)
_GATED = (_gated_rmsnorm_kernel, gated_rmsnorm_kernel_tuned)
_LN = (_layernorm_kernel, layernorm_kernel_tuned)


def _rows(x: np.ndarray) -> tuple[int, int]:
    n_cols = x.shape[-1]
    if n_cols == 0 or n_cols > MAX_COLS:
        raise ValueError(f"the normalised dimension must be 1..{MAX_COLS}, got {n_cols}")
    return x.size // n_cols, n_cols


def _weight(w, name: str, n_cols: int) -> np.ndarray:
    w = float_array(w, name, ndim=1)
    if w.shape[0] != n_cols:
        raise ValueError(f"{name} must have shape ({n_cols},), got {w.shape}")
    return w


def _same(a, name: str, like: np.ndarray) -> np.ndarray:
    a = float_array(a, name)
    if a.shape != like.shape or a.dtype != like.dtype:
        raise ValueError(f"{name} must match x ({like.shape}, {like.dtype}), got ({a.shape}, {a.dtype})")
    return a


def _launch(kernels, configs, n_rows: int, n_cols: int, eps: float, args, config, tune, **meta) -> None:
    grid = lambda cfg: (max(1, cdiv(n_rows, cfg["ROWS"])),)
    launch(*kernels, configs, grid, (*args, n_rows, n_cols, float(eps)), config, tune, **meta,
           BLOCK_N=next_power_of_2(n_cols))


def rmsnorm(x: np.ndarray, weight: np.ndarray, eps: float = 1e-6, residual: np.ndarray | None = None,
            zero_centered: bool = False, *, config: dict | None = None,
            tune: bool = False) -> np.ndarray | tuple[np.ndarray, np.ndarray]:
    """RMSNorm over the last dim: `x * rsqrt(mean(x^2) + eps) * w`, or `* (1 + w)` when `zero_centered`
    (Qwen3.5's input/post-attention/final/q/k norms, whose w starts at 0).

    With `residual`, first forms `h = x + residual` rounded to x's dtype and returns `(rmsnorm(h), h)`:
    the normed output and the new residual stream. Output dtype = x's dtype; weight may be any float dtype.
    Bound: fp32 1e-5 relative (+1e-6), fp16 1e-3, bf16 8e-3 (relative + absolute) against `rmsnorm_reference`.
    """
    x = float_array(x, "x", min_ndim=1)
    n_rows, n_cols = _rows(x)
    w = _weight(weight, "weight", n_cols)
    out = np.empty_like(x)
    if residual is None:
        if x.size:
            _launch(_RMS, AUTOTUNE_CONFIGS, n_rows, n_cols, eps, (x, x, w, out, out), config, tune,
                    HAS_RESIDUAL=False, ZERO_CENTERED=bool(zero_centered))
        return out
    residual = _same(residual, "residual", x)
    new_residual = np.empty_like(x)
    if x.size:
        _launch(_RMS, AUTOTUNE_CONFIGS, n_rows, n_cols, eps, (x, residual, w, out, new_residual), config, tune,
                HAS_RESIDUAL=True, ZERO_CENTERED=bool(zero_centered))
    return out, new_residual


def gated_rmsnorm(x: np.ndarray, z: np.ndarray, weight: np.ndarray, eps: float = 1e-6, *, config: dict | None = None,
                  tune: bool = False) -> np.ndarray:
    """Gated RMSNorm over the last dim (the Gated DeltaNet output norm): `w * x * rsqrt(mean(x^2) + eps) * silu(z)`.

    `x` and `z` have the same shape and dtype (e.g. [T, HV, 128] per value head); `weight` is [last dim] and is the
    plain weight (initialised to 1, not 1 + w). Norm before gate; all in fp32, one rounding to x's dtype.
    Bound: fp32 1e-5 relative (+1e-6), fp16 1e-3, bf16 8e-3 against `gated_rmsnorm_reference`.
    """
    x = float_array(x, "x", min_ndim=1)
    z = _same(z, "z", x)
    n_rows, n_cols = _rows(x)
    w = _weight(weight, "weight", n_cols)
    out = np.empty_like(x)
    if x.size:
        _launch(_GATED, GATED_AUTOTUNE_CONFIGS, n_rows, n_cols, eps, (x, z, w, out), config, tune)
    return out


def layernorm(x: np.ndarray, weight: np.ndarray, bias: np.ndarray | None = None, eps: float = 1e-5, *,
              config: dict | None = None, tune: bool = False) -> np.ndarray:
    """LayerNorm over the last dim: `(x - mean) * rsqrt(var + eps) * w (+ b)`, biased variance, two-pass in fp32.

    Bound: fp32 1e-5 relative (+1e-6), fp16 1e-3, bf16 8e-3 against `layernorm_reference`; the absolute term
    grows by the factor (1 + |mean| / std) of the row, since the fp32 mean carries an error of ~2^-23 |mean|.
    """
    x = float_array(x, "x", min_ndim=1)
    n_rows, n_cols = _rows(x)
    w = _weight(weight, "weight", n_cols)
    b = w if bias is None else _weight(bias, "bias", n_cols)
    out = np.empty_like(x)
    if x.size:
        _launch(_LN, LAYERNORM_AUTOTUNE_CONFIGS, n_rows, n_cols, eps, (x, w, b, out), config, tune,
                HAS_BIAS=bias is not None)
    return out


# --------------------------------------------------------------------------------------------------------------
# numpy references (float64 from the inputs as given; outputs rounded to the input dtype)


def rmsnorm_reference(x, weight, eps=1e-6, residual=None, zero_centered=False):
    """float64 RMSNorm; with `residual` the new residual is the float32 sum rounded to x's dtype, like the kernel."""
    new_residual = None
    if residual is not None:
        new_residual = (x.astype(np.float32) + residual.astype(np.float32)).astype(x.dtype)
        x = new_residual
    x64 = x.astype(np.float64)
    w = weight.astype(np.float64) + (1.0 if zero_centered else 0.0)
    y = (x64 / np.sqrt(np.mean(x64 * x64, axis=-1, keepdims=True) + eps) * w).astype(x.dtype)
    return y if new_residual is None else (y, new_residual)


def gated_rmsnorm_reference(x, z, weight, eps=1e-6):
    x64, z64 = x.astype(np.float64), z.astype(np.float64)
    n = x64 / np.sqrt(np.mean(x64 * x64, axis=-1, keepdims=True) + eps)
    return (weight.astype(np.float64) * n * z64 / (1.0 + np.exp(-z64))).astype(x.dtype)


def layernorm_reference(x, weight, bias=None, eps=1e-5):
    x64 = x.astype(np.float64)
    xc = x64 - x64.mean(axis=-1, keepdims=True)
    y = xc / np.sqrt(np.mean(xc * xc, axis=-1, keepdims=True) + eps) * weight.astype(np.float64)
    if bias is not None:
        y = y + bias.astype(np.float64)
    return y.astype(x.dtype)


# --------------------------------------------------------------------------------------------------------------
# cases for `python -m kernels.check` and the benchmark


@register
def _cases():
    from kernels._common import BF16

    rng = np.random.default_rng(0)
    for dtype, tokens in ((np.float32, 64), (BF16, 64)):
        x = random_array(rng, (tokens, 2048), dtype)
        r = random_array(rng, (tokens, 2048), dtype)
        w = random_array(rng, (2048,), np.float32, scale=0.1, offset=0.0)
        rtol, atol = tolerance(dtype)
        nbytes = x.nbytes * 4 + w.nbytes
        yield Case("norm.rmsnorm_residual", f"T={tokens} N=2048 1+w", dtype_name(dtype),
                   lambda x=x, w=w, r=r: rmsnorm(x, w, residual=r, zero_centered=True),
                   lambda x=x, w=w, r=r: rmsnorm_reference(x, w, residual=r, zero_centered=True), rtol, atol, nbytes)
    x = random_array(rng, (64, 2048), np.float32)
    w = random_array(rng, (2048,), np.float32)
    yield Case("norm.rmsnorm", "T=64 N=2048", "fp32", lambda: rmsnorm(x, w), lambda: rmsnorm_reference(x, w),
               *tolerance(np.float32), x.nbytes * 2 + w.nbytes)
    xg = random_array(rng, (16, 32, 128), BF16)
    zg = random_array(rng, (16, 32, 128), BF16)
    wg = random_array(rng, (128,), np.float32, scale=0.1, offset=1.0)
    yield Case("norm.gated_rmsnorm", "T=16 HV=32 dv=128", "bf16", lambda: gated_rmsnorm(xg, zg, wg),
               lambda: gated_rmsnorm_reference(xg, zg, wg), *tolerance(BF16), xg.nbytes * 3 + wg.nbytes)
    xl = random_array(rng, (64, 1152), np.float32, scale=2.0, offset=3.0)
    wl, bl = random_array(rng, (1152,), np.float32), random_array(rng, (1152,), np.float32)
    yield Case("norm.layernorm", "T=64 N=1152", "fp32", lambda: layernorm(xl, wl, bl),
               lambda: layernorm_reference(xl, wl, bl), *tolerance(np.float32), xl.nbytes * 2 + wl.nbytes * 2)
