"""Dense GEMM `c = a @ b` (fp16/bf16/fp32 in, fp32 accumulation): the FFN's down projection and the
fp16 baseline the W4A16 GEMM is measured against.

Host function:
    gemm(a [M, K], b [K, N], out_dtype=None) -> c [M, N]   (out_dtype defaults to a's dtype)
a and b share one dtype; any strides (pass `w.T` for an [N, K] weight, no copy).

Error bound: |c - c_ref| <= rtol * (|a| @ |b|) + atol with (rtol, atol) = (1e-5, 1e-6) for fp32 (exact fp32
operands, `input_precision="ieee"`), and for fp16 / bf16 outputs half an output ulp plus fp32 accumulation:
fp16 1e-3, bf16 8e-3 (products of fp16/bf16 operands are exact in fp32).
"""

from __future__ import annotations

import numpy as np

import dsl as tl
from jit import cdiv, jit
from kernels._common import BF16, FLOAT_DTYPES, dtype_name, launch, random_array
from kernels.registry import Case, register
from kernels.tuning import tuned

AUTOTUNE_CONFIGS = [
    {"BLOCK_M": 32, "BLOCK_N": 64, "BLOCK_K": 64, "GROUP_M": 8, "num_warps": 4},
    {"BLOCK_M": 64, "BLOCK_N": 64, "BLOCK_K": 32, "GROUP_M": 8, "num_warps": 4},
    {"BLOCK_M": 16, "BLOCK_N": 128, "BLOCK_K": 64, "GROUP_M": 8, "num_warps": 4},
    {"BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 32, "GROUP_M": 8, "num_warps": 8},
]
TOLERANCE = {np.dtype(np.float32): (1e-5, 1e-6), np.dtype(np.float16): (1e-3, 1e-3), BF16: (8e-3, 8e-3)}


@jit
def tile_ids(M, N, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, GROUP_M: tl.constexpr):
    """Grouped program order: GROUP_M rows of tiles run together so they share tiles of both operands in L2."""
    pid = tl.program_id(axis=0)
    num_pid_m = tl.cdiv(M, BLOCK_M)
    num_pid_n = tl.cdiv(N, BLOCK_N)
    num_pid_in_group = GROUP_M * num_pid_n
    first_pid_m = (pid // num_pid_in_group) * GROUP_M
    group_size_m = min(num_pid_m - first_pid_m, GROUP_M)
    pid_m = first_pid_m + ((pid % num_pid_in_group) % group_size_m)
    pid_n = (pid % num_pid_in_group) // group_size_m
    return pid_m, pid_n


@jit
def gemm_kernel(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
                BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr,
                PRECISION: tl.constexpr):
    pid_m, pid_n = tile_ids(M, N, BLOCK_M, BLOCK_N, GROUP_M)
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_k = tl.arange(0, BLOCK_K)
    a_ptrs = a_ptr + offs_m[:, None] * stride_am + offs_k[None, :] * stride_ak
    b_ptrs = b_ptr + offs_k[:, None] * stride_bk + offs_n[None, :] * stride_bn
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k0 in range(0, K, BLOCK_K):
        k_ok = offs_k < K - k0
        a = tl.load(a_ptrs, mask=(offs_m[:, None] < M) & k_ok[None, :], other=0.0)
        b = tl.load(b_ptrs, mask=k_ok[:, None] & (offs_n[None, :] < N), other=0.0)
        acc = tl.dot(a, b, acc, input_precision=PRECISION)
        a_ptrs += BLOCK_K * stride_ak
        b_ptrs += BLOCK_K * stride_bk
    c_ptrs = c_ptr + offs_m[:, None] * stride_cm + offs_n[None, :] * stride_cn
    tl.store(c_ptrs, acc.to(c_ptr.dtype.element_ty), mask=(offs_m[:, None] < M) & (offs_n[None, :] < N))


gemm_kernel_tuned = tuned(gemm_kernel, AUTOTUNE_CONFIGS, key=["M", "N", "K"])


def check_matrix(x, name: str, dtype=None) -> np.ndarray:
    """x must be a 2-D fp32/fp16/bf16 numpy array (of `dtype` when given); strides are kept."""
    if not isinstance(x, np.ndarray):
        raise ValueError(f"{name} must be a numpy array, got {type(x).__name__}")
    if x.dtype not in FLOAT_DTYPES:
        raise ValueError(f"{name} must be float32, float16 or bfloat16, got {x.dtype}")
    if dtype is not None and x.dtype != dtype:
        raise ValueError(f"{name} must have dtype {np.dtype(dtype)} like the activations, got {x.dtype}")
    if x.ndim != 2:
        raise ValueError(f"{name} must be 2-D, got shape {x.shape}")
    if any(s % x.itemsize for s in x.strides):
        raise ValueError(f"{name} strides must be multiples of its item size")
    return x


def strides(x: np.ndarray) -> tuple[int, ...]:
    return tuple(s // x.itemsize for s in x.strides)


def precision(dtype) -> str:
    return "ieee" if np.dtype(dtype) == np.float32 else "tf32"


def gemm(a: np.ndarray, b: np.ndarray, out_dtype=None, config: dict | None = None, tune: bool = False) -> np.ndarray:
    """c = a @ b with fp32 accumulation, stored in out_dtype (default a.dtype); `config` picks one of
    AUTOTUNE_CONFIGS (default: the machine's config table, kernels.config_table), `tune=True` lets the autotuner
    choose."""
    check_matrix(a, "a")
    check_matrix(b, "b", a.dtype)
    (M, K), (Kb, N) = a.shape, b.shape
    if Kb != K:
        raise ValueError(f"inner dimensions differ: a is {a.shape}, b is {b.shape}")
    out_dtype = np.dtype(a.dtype if out_dtype is None else out_dtype)
    if out_dtype not in FLOAT_DTYPES:
        raise ValueError(f"out_dtype must be float32, float16 or bfloat16, got {out_dtype}")
    c = np.empty((M, N), dtype=out_dtype)
    args = (a, b, c, M, N, K, *strides(a), *strides(b), *strides(c))
    grid = lambda m: (cdiv(M, m["BLOCK_M"]) * cdiv(N, m["BLOCK_N"]),)  # noqa: E731
    launch(gemm_kernel, gemm_kernel_tuned, AUTOTUNE_CONFIGS, grid, args, config, tune, PRECISION=precision(a.dtype))
    return c


def gemm_reference(a: np.ndarray, b: np.ndarray, out_dtype=None) -> np.ndarray:
    out = a.astype(np.float64) @ b.astype(np.float64)
    return out.astype(a.dtype if out_dtype is None else out_dtype)


@register
def _cases():
    rng = np.random.default_rng(5)
    M, K, N = 16, 2048, 512
    a = random_array(rng, (M, K), np.float16)
    w = random_array(rng, (K, N), np.float16, scale=0.02, offset=0.0)
    yield Case("gemm.fp16", f"M={M} K={K} N={N}", dtype_name(np.float16), run=lambda: gemm(a, w),
               reference=lambda: gemm_reference(a, w), rtol=1e-3, atol=1e-3,
               min_bytes=a.nbytes + w.nbytes + M * N * 2, notes={"weight_bytes": w.nbytes})
