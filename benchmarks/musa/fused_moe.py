"""vLLM's fused-MoE grouped GEMM written in the DSL, to compare the S5000 model's config picks with the vendor's.

Same semantics as vLLM's `fused_moe_kernel` (bf16/fp16, no quantisation): the (token, slot) pairs arrive sorted
by expert (`sorted_ids` holds pair ids f = token·top_k + slot, `numel` on padding rows; `expert_ids` one expert
per BLOCK_SIZE_M rows; `total` = num_tokens_post_padded), as `kernels.moe.moe_align` produces them. One program
per (BLOCK_SIZE_M rows of the sorted list, BLOCK_SIZE_N output columns), in grouped order (GROUP_SIZE_M row
blocks share a column sweep, for L2 reuse); acc in fp32, optionally times the pair's routing weight, stored in
the output dtype at row f. A block past `total` or of expert -1 writes nothing (vLLM writes zeros for expert -1,
which is an expert-parallel remote expert; moe_align uses -1 only for unused blocks past `total`).

GROUP_SIZE_M is a runtime argument here (vLLM's is a constexpr): the program order it sets is the same, and the
sweep compiles one kernel per tile shape instead of four.

`python benchmarks/musa/fused_moe.py --check` compares both GEMMs of an MoE layer with numpy on small shapes.
"""

from __future__ import annotations

import pathlib
import sys

import numpy as np

ROOT = pathlib.Path(__file__).parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import dsl as tl  # noqa: E402
from jit import cdiv, jit  # noqa: E402
from kernels.moe import moe_align  # noqa: E402


@jit(do_not_specialize=("N", "K", "EM", "numel", "top_k", "group_size_m"))
def fused_moe_kernel(a_ptr, b_ptr, c_ptr, topk_weights_ptr, sorted_ids_ptr, expert_ids_ptr, total_ptr,
                     N, K, EM, numel, top_k, group_size_m,
                     stride_am, stride_be, stride_bn, stride_cm,
                     MUL_ROUTED_WEIGHT: tl.constexpr, BLOCK_SIZE_M: tl.constexpr, BLOCK_SIZE_N: tl.constexpr,
                     BLOCK_SIZE_K: tl.constexpr):
    """c[f, n] = (Σ_k a[f // top_k, k] · b[e(f), n, k]) (· w[f]) for the pairs f of one block of sorted rows."""
    pid = tl.program_id(0)
    num_pid_m = tl.cdiv(EM, BLOCK_SIZE_M)
    num_pid_n = tl.cdiv(N, BLOCK_SIZE_N)
    num_pid_in_group = group_size_m * num_pid_n
    first_pid_m = (pid // num_pid_in_group) * group_size_m
    rows_in_group = tl.minimum(num_pid_m - first_pid_m, group_size_m)
    pid_m = first_pid_m + (pid % num_pid_in_group) % rows_in_group
    pid_n = (pid % num_pid_in_group) // rows_in_group
    if pid_m * BLOCK_SIZE_M < tl.load(total_ptr):
        expert = tl.load(expert_ids_ptr + pid_m)
        if expert >= 0:
            offs_m = pid_m * BLOCK_SIZE_M + tl.arange(0, BLOCK_SIZE_M)
            pair = tl.load(sorted_ids_ptr + offs_m)
            real = pair < numel
            token = pair // top_k
            # columns wrap instead of being masked, so every weight load is in bounds and unmasked in N
            offs_bn = (pid_n * BLOCK_SIZE_N + tl.arange(0, BLOCK_SIZE_N)) % N
            offs_k = tl.arange(0, BLOCK_SIZE_K)
            a_ptrs = a_ptr + token[:, None].to(tl.int64) * stride_am + offs_k[None, :]
            b_ptrs = b_ptr + expert.to(tl.int64) * stride_be + offs_bn[None, :] * stride_bn + offs_k[:, None]
            acc = tl.zeros((BLOCK_SIZE_M, BLOCK_SIZE_N), tl.float32)
            for k0 in range(0, K, BLOCK_SIZE_K):
                k_ok = offs_k < K - k0
                a = tl.load(a_ptrs, mask=real[:, None] & k_ok[None, :], other=0.0)
                b = tl.load(b_ptrs, mask=k_ok[:, None], other=0.0)
                acc = tl.dot(a, b, acc)
                a_ptrs += BLOCK_SIZE_K
                b_ptrs += BLOCK_SIZE_K
            if MUL_ROUTED_WEIGHT:
                w = tl.load(topk_weights_ptr + pair, mask=real, other=0.0)
                acc = acc * w[:, None]
            offs_cn = pid_n * BLOCK_SIZE_N + tl.arange(0, BLOCK_SIZE_N)
            c_ptrs = c_ptr + pair[:, None].to(tl.int64) * stride_cm + offs_cn[None, :]
            tl.store(c_ptrs, acc.to(c_ptr.dtype.element_ty), mask=real[:, None] & (offs_cn < N)[None, :])


def launch_args(a: np.ndarray, b: np.ndarray, c: np.ndarray, topk_weights: np.ndarray, align: dict,
                top_k: int, group_size_m: int, mul_routed_weight: bool, block_m: int, block_n: int, block_k: int,
                used_rows_only: bool = False) -> tuple[tuple, tuple, dict]:
    """(grid, positional args, constexprs) of one fused_moe_kernel launch; `align` is moe_align's result.

    vLLM's grid covers every row of sorted_ids (the worst-case padding, as the host cannot read the device's
    num_tokens_post_padded); the programs past `total` exit at once. used_rows_only=True launches only the
    row blocks in use (EM = total rounded up to the block): the same tiles, the same outputs and program
    order except inside the last group, for modeling a launch whose idle programs would skew a program sample.
    """
    E, N, K = b.shape
    if a.shape[1] != K or c.shape[1] != N or a.dtype != b.dtype:
        raise ValueError(f"fused_moe_kernel: a {a.shape} {a.dtype}, b {b.shape} {b.dtype}, c {c.shape} disagree")
    sorted_ids = align["sorted_ids"]
    EM, numel = sorted_ids.shape[0], topk_weights.size
    if EM % block_m or align["expert_ids"].shape[0] != EM // block_m:
        raise ValueError(f"fused_moe_kernel: align was made for another BLOCK_SIZE_M than {block_m}")
    if used_rows_only:
        EM = cdiv(int(align["total"][0]), block_m) * block_m
    grid = (cdiv(EM, block_m) * cdiv(N, block_n),)
    args = (a, b, c, topk_weights.reshape(-1), sorted_ids, align["expert_ids"], align["total"],
            N, K, EM, numel, top_k, group_size_m, a.strides[0] // a.itemsize, N * K, K, c.strides[0] // c.itemsize)
    constexprs = dict(MUL_ROUTED_WEIGHT=mul_routed_weight, BLOCK_SIZE_M=block_m, BLOCK_SIZE_N=block_n,
                      BLOCK_SIZE_K=block_k)
    return grid, args, constexprs


def route(rng: np.random.Generator, M: int, E: int, top_k: int) -> tuple[np.ndarray, np.ndarray]:
    """Top-k routing of random logits, softmax weights renormalised over the chosen experts (vLLM's default)."""
    logits = rng.standard_normal((M, E)).astype(np.float32)
    ids = np.argsort(-logits, axis=1, kind="stable")[:, :top_k].astype(np.int32)
    chosen = np.take_along_axis(logits, ids, axis=1)
    w = np.exp(chosen - chosen.max(axis=1, keepdims=True))
    return ids, (w / w.sum(axis=1, keepdims=True)).astype(np.float32)


def _reference(a, b, ids, weights, top_k, mul):
    """Float64 per pair: row f = token f // top_k through expert ids[f], rows in pair order."""
    tokens = np.repeat(np.arange(a.shape[0]), top_k)
    out = np.einsum("fk,fnk->fn", a.astype(np.float64)[tokens], b.astype(np.float64)[ids.reshape(-1)])
    return out * weights.reshape(-1, 1) if mul else out


def check() -> None:
    """Both GEMMs of a gated MoE layer (w1 with top_k rows per token, w2 with the routing weight) against numpy."""
    from kernels._common import BF16

    rng = np.random.default_rng(12)
    cases = [(np.float16, 37, 8, 2, 96, 80, 16, 32, 32, 1), (BF16, 19, 6, 3, 72, 136, 32, 64, 64, 4),
             (np.float16, 5, 16, 4, 40, 64, 64, 32, 16, 16)]
    for (dtype, M, E, top_k, K, N, bm, bn, bk, group), used in zip(cases, (False, True, False)):
        ids, weights = route(rng, M, E, top_k)
        x = (rng.standard_normal((M, K)) * 0.5).astype(dtype)
        w1 = (rng.standard_normal((E, N, K)) * 0.2).astype(dtype)
        w2 = (rng.standard_normal((E, K, N)) * 0.2).astype(dtype)
        align = moe_align(ids, weights, x, E, bm)
        h = np.zeros((M * top_k, N), dtype)
        grid, args, meta = launch_args(x, w1, h, weights, align, top_k, group, False, bm, bn, bk, used)
        fused_moe_kernel[grid](*args, **meta, num_warps=4)
        ref_h = _reference(x, w1, ids, weights, top_k, False)
        y = np.zeros((M * top_k, K), dtype)
        grid, args, meta = launch_args(h, w2, y, weights, align, 1, group, True, bm, bn, bk, used)
        fused_moe_kernel[grid](*args, **meta, num_warps=4)
        ref_y = _reference(h, w2, ids, weights, 1, True)
        for name, got, ref in (("w1", h, ref_h), ("w2", y, ref_y)):
            err = np.abs(got.astype(np.float64) - ref) / (np.abs(ref) + 1e-2)
            print(f"{np.dtype(dtype).name:8s} M={M:3d} E={E:2d} top_k={top_k} K={K:3d} N={N:3d} "
                  f"BM={bm:2d} BN={bn:2d} BK={bk:2d} G={group:2d} used_rows_only={used:d} {name}: "
                  f"max rel err {err.max():.2e}")
            if not err.max() < (1.6e-2 if dtype == BF16 else 2e-3):
                raise SystemExit(f"fused_moe_kernel {name} output differs from numpy")
    print("fused_moe_kernel matches numpy")


if __name__ == "__main__":
    if "--check" in sys.argv[1:]:
        check()
    else:
        print(__doc__)
