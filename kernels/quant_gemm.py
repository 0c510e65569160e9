"""W4A16 GEMM: fp16/bf16 activations times an INT4 weight (AWQ or GPTQ packing) with fp32 accumulation.

The packed int32 words are loaded once per K tile and unpacked in registers (shift, mask, subtract the zero
point): the dequantised weight never exists in memory, so the kernel reads ~0.26x the bytes of an fp16
weight at group size 128 (0.5 byte per code + fp16 scale + 4-bit zero per group and column).
Each K tile lies inside one quantisation group (BLOCK_K divides group_size), so `(q - z)` — an integer in
[-15, 15], exact in fp16 and bf16 — feeds the dot directly and the group's scale multiplies the tile's fp32
partial product: no rounding of dequantised weights at all.

Host function (for the dense layers and, per expert, the MoE):
    w4a16_gemm(x [M, K] fp16|bf16, w: kernels.quant.Int4Weight (logical [K, N]), out_dtype=None,
               config=None, tune=False) -> [M, N]
    (config: one dict of AUTOTUNE_CONFIGS, default the first; tune=True: the autotuner picks, kernels.tuning)
Build the weight with `Int4Weight.from_float(w, group_size, order="awq"|"gptq")` or wrap checkpoint arrays in
`Int4Weight(qweight, qzeros, scales, group_size, order, zero_offset)` (zero_offset=1 for GPTQ v1 checkpoints).
Requirements: N % 8 == 0, K % group_size == 0, group_size in {32, 64, 128}; GPTQ act-order (a permuted g_idx) is
not supported: groups are k // group_size.

Error bound: against `w4a16_reference` (float64 product with the exactly dequantised weight), for an fp32
output |c - ref| <= 1e-5 * (|x| @ |W|) + 1e-6 (fp32 accumulation only); an fp16 / bf16 output adds half an ulp of
its format: (1e-3, 1e-3) and (8e-3, 8e-3). The error against the unquantised fp32 product is the quantisation
error itself; the benchmark reports it (notes: rel_err_vs_fp32).
"""

from __future__ import annotations

import numpy as np

import dsl as tl
from jit import Config, cdiv, jit
from kernels._common import BF16, FLOAT_DTYPES, dtype_name, random_array, resolve
from kernels.config_table import with_default
from kernels.gemm import TOLERANCE, check_matrix, strides, tile_ids
from kernels.quant import Int4Weight, pack_int4, pack_zeros, quantize_int4
from kernels.registry import Case, register
from kernels.tuning import as_configs, tuned

AUTOTUNE_CONFIGS = [
    {"BLOCK_M": 16, "BLOCK_N": 64, "BLOCK_K": 64, "GROUP_M": 8, "num_warps": 4},
    {"BLOCK_M": 32, "BLOCK_N": 64, "BLOCK_K": 32, "GROUP_M": 8, "num_warps": 4},
    {"BLOCK_M": 64, "BLOCK_N": 128, "BLOCK_K": 32, "GROUP_M": 8, "num_warps": 4},
    {"BLOCK_M": 16, "BLOCK_N": 128, "BLOCK_K": 128, "GROUP_M": 8, "num_warps": 8},
]


@jit
def awq_shifts(BLOCK_N: tl.constexpr):
    """Bit offset of column 8c + j inside its int32 in the AWQ order: 4 * [0, 4, 1, 5, 2, 6, 3, 7][j]."""
    j = tl.arange(0, BLOCK_N) % 8
    return ((j & 1) * 4 + (j >> 1)) * 4


@jit
def spread8(packed, ROWS: tl.constexpr, COLS: tl.constexpr):
    """[ROWS, COLS // 8] words -> [ROWS, COLS], each word repeated for the 8 columns it packs."""
    return tl.reshape(tl.broadcast_to(packed[:, :, None], (ROWS, COLS // 8, 8)), (ROWS, COLS))


@jit
def w4a16_kernel(x_ptr, qw_ptr, qz_ptr, s_ptr, c_ptr, M, N, K, stride_xm, stride_xk, stride_cm, stride_cn,
                 group_size, ORDER: tl.constexpr, ZERO_OFFSET: tl.constexpr, BLOCK_M: tl.constexpr,
                 BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr):
    pid_m, pid_n = tile_ids(M, N, BLOCK_M, BLOCK_N, GROUP_M)
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_k = tl.arange(0, BLOCK_K)
    n_words = N // 8
    offs_w = pid_n * (BLOCK_N // 8) + tl.arange(0, BLOCK_N // 8)  # int32 words along N (AWQ weight, zeros)
    w_ok = offs_w < n_words
    n_ok = offs_n < N
    if ORDER == "awq":
        z_shift = awq_shifts(BLOCK_N)
    else:
        z_shift = (tl.arange(0, BLOCK_N) % 8) * 4
    x_ptrs = x_ptr + offs_m[:, None] * stride_xm + offs_k[None, :] * stride_xk
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k0 in range(0, K, BLOCK_K):
        x = tl.load(x_ptrs, mask=offs_m[:, None] < M, other=0.0)
        if ORDER == "awq":
            words = tl.load(qw_ptr + (k0 + offs_k)[:, None] * n_words + offs_w[None, :], mask=w_ok[None, :], other=0)
            q = (spread8(words, BLOCK_K, BLOCK_N) >> awq_shifts(BLOCK_N)[None, :]) & 0xF
        else:
            offs_r = k0 // 8 + tl.arange(0, BLOCK_K // 8)
            words = tl.load(qw_ptr + offs_r[:, None] * N + offs_n[None, :], mask=n_ok[None, :], other=0)
            words = tl.reshape(tl.broadcast_to(words[:, None, :], (BLOCK_K // 8, 8, BLOCK_N)), (BLOCK_K, BLOCK_N))
            q = (words >> ((offs_k % 8) * 4)[:, None]) & 0xF
        g = k0 // group_size  # BLOCK_K divides group_size: one group per tile
        zw = tl.load(qz_ptr + g * n_words + offs_w, mask=w_ok, other=0)
        zw = tl.reshape(tl.broadcast_to(zw[:, None], (BLOCK_N // 8, 8)), (BLOCK_N,))
        z = ((zw >> z_shift) + ZERO_OFFSET) & 0xF
        s = tl.load(s_ptr + g * N + offs_n, mask=n_ok, other=0.0).to(tl.float32)
        w = (q - z[None, :]).to(x_ptr.dtype.element_ty)  # integers in [-15, 15]: exact in fp16 / bf16
        acc += tl.dot(x, w) * s[None, :]
        x_ptrs += BLOCK_K * stride_xk
    c_ptrs = c_ptr + offs_m[:, None] * stride_cm + offs_n[None, :] * stride_cn
    tl.store(c_ptrs, acc.to(c_ptr.dtype.element_ty), mask=(offs_m[:, None] < M) & n_ok[None, :])


w4a16_kernel_tuned = with_default(
    tuned(w4a16_kernel, AUTOTUNE_CONFIGS, key=["M", "N", "K", "group_size"],
          keep=lambda cfg, args: cfg["BLOCK_K"] <= args["group_size"]),
    lambda named: _fit_group(as_configs(AUTOTUNE_CONFIGS[:1])[0], int(named["group_size"])))  # the first, fitted


def w4a16_gemm(x: np.ndarray, w: Int4Weight, out_dtype=None, config: dict | None = None,
               tune: bool = False) -> np.ndarray:
    """c = x @ dequant(w), dequantising INT4 codes in registers inside the K loop; out_dtype defaults to x's.
    `config`: one of AUTOTUNE_CONFIGS (default: the machine's config table, kernels.config_table, else the first);
    `tune=True` lets the autotuner choose."""
    check_matrix(x, "x")
    if x.dtype not in (np.float16, BF16):
        raise ValueError(f"x must be float16 or bfloat16 (W4A16), got {x.dtype}")
    if not isinstance(w, Int4Weight):
        raise ValueError(f"w must be a kernels.quant.Int4Weight, got {type(w).__name__}")
    w.validate()
    K, N = w.shape
    M = x.shape[0]
    if x.shape[1] != K:
        raise ValueError(f"x is {x.shape} but the weight is [K={K}, N={N}]")
    out_dtype = np.dtype(x.dtype if out_dtype is None else out_dtype)
    if out_dtype not in FLOAT_DTYPES:
        raise ValueError(f"out_dtype must be float32, float16 or bfloat16, got {out_dtype}")
    c = np.empty((M, N), dtype=out_dtype)
    args = (x, np.ascontiguousarray(w.qweight), np.ascontiguousarray(w.qzeros), np.ascontiguousarray(w.scales), c, M,
            N, K, *strides(x), *strides(c), w.group_size)
    meta = {"ORDER": w.order, "ZERO_OFFSET": w.zero_offset}
    chosen = resolve(w4a16_kernel_tuned, AUTOTUNE_CONFIGS, args, meta, config, tune)
    if chosen is None:
        grid = lambda m: (cdiv(M, m["BLOCK_M"]) * cdiv(N, m["BLOCK_N"]),)  # noqa: E731
        w4a16_kernel_tuned[grid](*args, **meta)
    else:
        cfg = _fit_group(chosen, w.group_size).all_kwargs()
        grid = (cdiv(M, cfg["BLOCK_M"]) * cdiv(N, cfg["BLOCK_N"]),)
        w4a16_kernel[grid](*args, **meta, **cfg)
    return c


def _fit_group(config: Config, group_size: int) -> Config:
    """`config` with a K tile that never straddles two quantisation groups."""
    kwargs = {**config.kwargs, "BLOCK_K": min(config.kwargs["BLOCK_K"], group_size)}
    return Config(kwargs, num_warps=config.num_warps, num_stages=config.num_stages)


def w4a16_reference(x: np.ndarray, w: Int4Weight, out_dtype=None) -> np.ndarray:
    """float64 product with the exactly dequantised weight, rounded to out_dtype (default x's)."""
    return (x.astype(np.float64) @ w.dequantize().astype(np.float64)).astype(x.dtype if out_dtype is None
                                                                              else out_dtype)


def w4a16_bound(x: np.ndarray, w: Int4Weight, out_dtype) -> np.ndarray:
    """Per-element bound of |w4a16_gemm - w4a16_reference| (module docstring)."""
    rtol, atol = TOLERANCE[np.dtype(out_dtype)]
    return rtol * (np.abs(x.astype(np.float64)) @ np.abs(w.dequantize().astype(np.float64))) + atol


def weight_bytes(w: Int4Weight) -> int:
    return w.qweight.nbytes + w.qzeros.nbytes + w.scales.nbytes


@register
def _cases():
    rng = np.random.default_rng(6)
    M, K, N = 16, 2048, 512  # the same shape as the gemm.fp16 case, so the benchmark compares weight bytes
    x = random_array(rng, (M, K), np.float16)
    w32 = random_array(rng, (K, N), np.float32, scale=0.02, offset=0.0)
    q, z, s = quantize_int4(w32, 128)
    cache: dict = {}

    def reference(w: Int4Weight, notes: dict) -> np.ndarray:  # also fills in the error against fp32 weights
        ref = w4a16_reference(x, w, np.float32)
        if "rel" not in cache:
            exact = x.astype(np.float64) @ w32.astype(np.float64)
            cache["rel"] = f"{np.abs(ref - exact).max() / np.abs(exact).max():.2e}"
        notes["rel_err_vs_fp32"] = cache["rel"]
        return ref

    for order in ("awq", "gptq"):
        w = Int4Weight(pack_int4(q, order), pack_zeros(z, order), s, 128, order)
        notes = {"weight_bytes": weight_bytes(w), "vs_fp16_weight": f"{weight_bytes(w) / (K * N * 2):.3f}"}
        yield Case(f"quant.w4a16_{order}", f"M={M} K={K} N={N} G=128", dtype_name(np.float16),
                   run=lambda w=w: w4a16_gemm(x, w, np.float32), reference=lambda w=w, n=notes: reference(w, n),
                   rtol=1e-5, atol=1e-4, min_bytes=x.nbytes + weight_bytes(w) + M * N * 4, notes=notes)
