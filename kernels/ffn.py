"""SwiGLU FFN: `down( silu(x @ Wg) * (x @ Wu) )`, the dense MLP of Qwen3.5 (and of each MoE expert).

The gate and up projections are one GEMM kernel with two fp32 accumulators sharing every load of x; the
activation `silu(g) * u` runs in the epilogue on the accumulators, so neither g nor u ever reaches memory.
The down projection is `kernels.gemm`.

Host functions (weights in [in, out] layout, y = x @ W; pass `proj.weight.T` views for [out, in] weights):
    swiglu(x [M, H], w_gate [H, I], w_up [H, I]) -> h [M, I]          (h in x's dtype)
    swiglu_ffn(x [M, H], w_gate [H, I], w_up [H, I], w_down [I, H]) -> y [M, H]
x and the weights share one dtype: fp32, fp16 or bf16; accumulation is fp32.

Error bounds (reference: float64 from the same inputs, h rounded to x's dtype as the kernel stores it), with
(rtol, atol) = fp32 (1e-5, 1e-6), fp16 (1e-3, 1e-3), bf16 (8e-3, 8e-3), g = x Wg, u = x Wu:
  swiglu:     |h - ref| <= rtol * (|silu(g)| * (|x| @ |Wu|) + 1.1 * |u| * (|x| @ |Wg|)) + atol
              (accumulation error of g and u carried through silu(g) * u, |silu'| <= 1.1; covers h's rounding)
  swiglu_ffn: |y - ref| <= (rtol * |h| + bound_h) @ |Wd| + atol
"""

from __future__ import annotations

import numpy as np

import dsl as tl
from jit import cdiv, jit
from kernels._common import BF16, dtype_name, launch, random_array
from kernels.gemm import TOLERANCE, check_matrix, gemm, precision, strides, tile_ids
from kernels.registry import Case, register
from kernels.tuning import tuned

AUTOTUNE_CONFIGS = [
    {"BLOCK_M": 16, "BLOCK_N": 64, "BLOCK_K": 64, "GROUP_M": 8, "num_warps": 4},
    {"BLOCK_M": 32, "BLOCK_N": 64, "BLOCK_K": 32, "GROUP_M": 8, "num_warps": 4},
    {"BLOCK_M": 64, "BLOCK_N": 64, "BLOCK_K": 32, "GROUP_M": 8, "num_warps": 4},
    {"BLOCK_M": 64, "BLOCK_N": 128, "BLOCK_K": 32, "GROUP_M": 8, "num_warps": 8},
]


@jit
def swiglu_kernel(x_ptr, wg_ptr, wu_ptr, h_ptr, M, N, K, stride_xm, stride_xk, stride_gk, stride_gn, stride_uk,
                  stride_un, stride_hm, stride_hn, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                  BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr, PRECISION: tl.constexpr):
    pid_m, pid_n = tile_ids(M, N, BLOCK_M, BLOCK_N, GROUP_M)
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_k = tl.arange(0, BLOCK_K)
    x_ptrs = x_ptr + offs_m[:, None] * stride_xm + offs_k[None, :] * stride_xk
    g_ptrs = wg_ptr + offs_k[:, None] * stride_gk + offs_n[None, :] * stride_gn
    u_ptrs = wu_ptr + offs_k[:, None] * stride_uk + offs_n[None, :] * stride_un
    acc_g = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    acc_u = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k0 in range(0, K, BLOCK_K):
        k_ok = offs_k < K - k0
        w_mask = k_ok[:, None] & (offs_n[None, :] < N)
        x = tl.load(x_ptrs, mask=(offs_m[:, None] < M) & k_ok[None, :], other=0.0)
        acc_g = tl.dot(x, tl.load(g_ptrs, mask=w_mask, other=0.0), acc_g, input_precision=PRECISION)
        acc_u = tl.dot(x, tl.load(u_ptrs, mask=w_mask, other=0.0), acc_u, input_precision=PRECISION)
        x_ptrs += BLOCK_K * stride_xk
        g_ptrs += BLOCK_K * stride_gk
        u_ptrs += BLOCK_K * stride_uk
    h = acc_g * tl.sigmoid(acc_g) * acc_u  # silu(g) * u on the fp32 accumulators
    h_ptrs = h_ptr + offs_m[:, None] * stride_hm + offs_n[None, :] * stride_hn
    tl.store(h_ptrs, h.to(h_ptr.dtype.element_ty), mask=(offs_m[:, None] < M) & (offs_n[None, :] < N))


swiglu_kernel_tuned = tuned(swiglu_kernel, AUTOTUNE_CONFIGS, key=["M", "N", "K"])


def _check_weights(x, w_gate, w_up) -> tuple[int, int, int]:
    check_matrix(x, "x")
    check_matrix(w_gate, "w_gate", x.dtype)
    check_matrix(w_up, "w_up", x.dtype)
    M, H = x.shape
    if w_gate.shape[0] != H or w_gate.shape != w_up.shape:
        raise ValueError(f"w_gate and w_up must both be [H={H}, I], got {w_gate.shape} and {w_up.shape}")
    return M, H, w_gate.shape[1]


def swiglu(x: np.ndarray, w_gate: np.ndarray, w_up: np.ndarray, config: dict | None = None,
           tune: bool = False) -> np.ndarray:
    """h = silu(x @ w_gate) * (x @ w_up) in one fused kernel; h has x's dtype. `config`: one of AUTOTUNE_CONFIGS
    (default: the machine's config table, kernels.config_table); `tune=True` lets the autotuner choose."""
    M, H, inter = _check_weights(x, w_gate, w_up)
    h = np.empty((M, inter), dtype=x.dtype)
    args = (x, w_gate, w_up, h, M, inter, H, *strides(x), *strides(w_gate), *strides(w_up), *strides(h))
    grid = lambda m: (cdiv(M, m["BLOCK_M"]) * cdiv(inter, m["BLOCK_N"]),)  # noqa: E731
    launch(swiglu_kernel, swiglu_kernel_tuned, AUTOTUNE_CONFIGS, grid, args, config, tune, PRECISION=precision(x.dtype))
    return h


def swiglu_ffn(x: np.ndarray, w_gate: np.ndarray, w_up: np.ndarray, w_down: np.ndarray,
               config: dict | None = None, tune: bool = False) -> np.ndarray:
    """y = (silu(x @ w_gate) * (x @ w_up)) @ w_down: the fused gate/up kernel, then the down GEMM."""
    M, H, inter = _check_weights(x, w_gate, w_up)
    check_matrix(w_down, "w_down", x.dtype)
    if w_down.shape[0] != inter:
        raise ValueError(f"w_down must be [I={inter}, H_out], got {w_down.shape}")
    return gemm(swiglu(x, w_gate, w_up, config, tune), w_down, tune=tune)


def swiglu_reference(x: np.ndarray, w_gate: np.ndarray, w_up: np.ndarray) -> np.ndarray:
    x64 = x.astype(np.float64)
    g, u = x64 @ w_gate.astype(np.float64), x64 @ w_up.astype(np.float64)
    return (g / (1.0 + np.exp(-np.clip(g, -700, 700))) * u).astype(x.dtype)


def swiglu_ffn_reference(x: np.ndarray, w_gate: np.ndarray, w_up: np.ndarray, w_down: np.ndarray) -> np.ndarray:
    h = swiglu_reference(x, w_gate, w_up)
    return (h.astype(np.float64) @ w_down.astype(np.float64)).astype(x.dtype)


def swiglu_bound(x, w_gate, w_up) -> np.ndarray:
    """Per-element error bound of swiglu (module docstring)."""
    rtol, atol = TOLERANCE[np.dtype(x.dtype)]
    x64 = x.astype(np.float64)
    g, u = x64 @ w_gate.astype(np.float64), x64 @ w_up.astype(np.float64)
    ax = np.abs(x64)
    silu = np.abs(g / (1.0 + np.exp(-np.clip(g, -700, 700))))
    return rtol * (silu * (ax @ np.abs(w_up.astype(np.float64))) + 1.1 * np.abs(u) * (ax @ np.abs(w_gate.astype(
        np.float64)))) + atol


def ffn_bound(x, w_gate, w_up, w_down) -> np.ndarray:
    """Per-element error bound of swiglu_ffn (module docstring)."""
    rtol, atol = TOLERANCE[np.dtype(x.dtype)]
    h = np.abs(swiglu_reference(x, w_gate, w_up).astype(np.float64))
    return (rtol * h + swiglu_bound(x, w_gate, w_up)) @ np.abs(w_down.astype(np.float64)) + atol


@register
def _cases():
    rng = np.random.default_rng(4)
    for dtype in (np.float16, BF16):
        M, H, inter = 13, 2048, 384  # 13 tokens: a masked M tail (and the tests' kernel specialisation)
        x = random_array(rng, (M, H), dtype, scale=1.0)
        wg, wu = (random_array(rng, (H, inter), dtype, scale=0.03, offset=0.0) for _ in range(2))
        wd = random_array(rng, (inter, H), dtype, scale=0.05, offset=0.0)
        rtol, atol = TOLERANCE[np.dtype(dtype)]
        nbytes = x.nbytes + wg.nbytes + wu.nbytes + wd.nbytes + 2 * M * inter * x.itemsize + x.nbytes
        yield Case("ffn.swiglu_ffn", f"M={M} H={H} I={inter}", dtype_name(dtype),
                   run=lambda x=x, wg=wg, wu=wu, wd=wd: swiglu_ffn(x, wg, wu, wd),
                   reference=lambda x=x, wg=wg, wu=wu, wd=wd: swiglu_ffn_reference(x, wg, wu, wd),
                   rtol=rtol, atol=4 * atol, min_bytes=nbytes)
