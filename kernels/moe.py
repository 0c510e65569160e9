"""Mixture-of-experts dispatch of Qwen3.5 (research/qwen35.md §1.7, §4): router, moe_align, weight-aware scatter,
grouped expert GEMMs with fused SwiGLU, and the combine with the shared expert.

The pipeline, all kernels, no host step between them:
1. `moe_router`: logits = x·Wrᵀ (fp32), softmax over the experts, top-k by repeated argmax (ties to the lower
   expert), renormalised weights; plus the shared expert's gate sigmoid(x·w_sg).
2. `moe_align`: per-expert counts with atomics (the value an atomic returns is the pair's rank inside its
   expert), exclusive prefix sum of the counts padded to the GEMM block, per-block expert ids; then the
   scatter writes each (token, slot) pair's id, routing weight and activation row in expert order. The
   order inside one expert's segment depends on the atomics' order and is free.
3. `moe_grouped_swiglu` / `moe_grouped_down`: one program per (block of BLOCK_M rows, column tile); the block's
   expert comes from `expert_ids`; gate and up accumulate side by side and leave as silu(g)·u in the
   activation dtype; the down projection multiplies each row by its routing weight and stays fp32.
4. `moe_combine`: out[m] = Σ_j y[pos[m,j]] + sigmoid-gated shared expert, one rounding to the output dtype.

The shared expert reuses the grouped kernels with DIRECT rows (row r is token r, expert 0, weight = its gate).
Accuracy: fp32 accumulation everywhere; the SwiGLU intermediate is rounded to the activation dtype, as vLLM's
intermediate cache is, so fp16/bf16 outputs match the float64 per-token reference to about 1e-2 relative.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np

import dsl as tl
from jit import Config, cdiv, jit, next_power_of_2
from jit.autotune import capturing
from jit.tune import TuneProblem
from kernels import config_table
from kernels._common import BF16, dtype_name, float_array, launch, random_array, resolve
from kernels.registry import Case, register
from kernels.tuning import tuned, with_builder

MAX_EXPERTS = 1024
_TOPK_SLOTS = 16  # the router holds up to this many choices per token; one compiled kernel serves every k

# First entry is the default; BLOCK_M is also moe_align's padding unit.
AUTOTUNE_CONFIGS = [
    {"BLOCK_M": 16, "BLOCK_N": 64, "BLOCK_K": 64, "num_warps": 4},
    {"BLOCK_M": 32, "BLOCK_N": 64, "BLOCK_K": 32, "num_warps": 4},
    {"BLOCK_M": 64, "BLOCK_N": 128, "BLOCK_K": 32, "num_warps": 8},
]
ROUTER_AUTOTUNE_CONFIGS = [
    {"BLOCK_M": 8, "BLOCK_K": 64, "num_warps": 4},
    {"BLOCK_M": 16, "BLOCK_K": 32, "num_warps": 8},
]
_BLOCK_F = 128  # flat (token, slot) pairs per program in the align kernels
_BLOCK_H = 256  # hidden columns per step when rows are copied
_NONE = np.zeros(1, np.int32)  # stands for an index array a DIRECT launch never reads
_NONE_F32 = np.zeros(1, np.float32)  # likewise for an absent float operand


# ----------------------------------------------------------------------------------------------- kernels
@jit(do_not_specialize=("M", "E", "K", "topk"))
def _router_kernel(x_ptr, wr_ptr, wsg_ptr, topw_ptr, topi_ptr, gate_ptr, M, E, K, topk,
                   TOPK_P: tl.constexpr, HAS_SHARED: tl.constexpr, PRECISION: tl.constexpr,
                   BLOCK_M: tl.constexpr, BLOCK_E: tl.constexpr, BLOCK_K: tl.constexpr):
    rows = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    experts = tl.arange(0, BLOCK_E)
    row_ok = rows < M
    logits = tl.zeros((BLOCK_M, BLOCK_E), tl.float32)
    gate = tl.zeros((BLOCK_M,), tl.float32)
    for k0 in range(0, K, BLOCK_K):
        kk = k0 + tl.arange(0, BLOCK_K)
        x = tl.load(x_ptr + rows[:, None] * K + kk[None, :], mask=row_ok[:, None] & (kk < K)[None, :], other=0.0)
        w = tl.load(wr_ptr + experts[None, :] * K + kk[:, None], mask=(kk < K)[:, None] & (experts < E)[None, :],
                    other=0.0)
        logits = tl.dot(x, w, logits, input_precision=PRECISION)
        if HAS_SHARED:
            wsg = tl.load(wsg_ptr + kk, mask=kk < K, other=0.0).to(tl.float32)
            gate += tl.sum(x.to(tl.float32) * wsg[None, :], axis=1)
    logits = tl.where((experts < E)[None, :], logits, float("-inf"))
    p = tl.exp(logits - tl.max(logits, axis=1)[:, None])
    p = p / tl.sum(p, axis=1)[:, None]
    slots = tl.arange(0, TOPK_P)
    weights = tl.zeros((BLOCK_M, TOPK_P), tl.float32)
    ids = tl.zeros((BLOCK_M, TOPK_P), tl.int32)
    for j in range(0, topk):  # repeated argmax: descending, ties to the lower expert
        best, arg = tl.max(p, axis=1, return_indices=True, return_indices_tie_break_left=True)
        weights = tl.where(slots[None, :] == j, best[:, None], weights)
        ids = tl.where(slots[None, :] == j, arg[:, None], ids)
        p = tl.where(experts[None, :] == arg[:, None], -1.0, p)
    weights = weights / tl.sum(weights, axis=1)[:, None]
    out = rows[:, None] * topk + slots[None, :]
    mask = row_ok[:, None] & (slots < topk)[None, :]
    tl.store(topw_ptr + out, weights, mask=mask)
    tl.store(topi_ptr + out, ids, mask=mask)
    if HAS_SHARED:
        tl.store(gate_ptr + rows, tl.sigmoid(gate), mask=row_ok)


@jit(do_not_specialize=("numel",))
def _count_kernel(ids_ptr, counts_ptr, rank_ptr, numel, BLOCK: tl.constexpr):
    f = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    ok = f < numel
    e = tl.load(ids_ptr + f, mask=ok, other=0)
    tl.store(rank_ptr + f, tl.atomic_add(counts_ptr + e, 1, mask=ok), mask=ok)


@jit(do_not_specialize=("E", "n_blocks"))
def _offsets_kernel(counts_ptr, offsets_ptr, expert_ids_ptr, total_ptr, E, n_blocks,
                    BLOCK_M: tl.constexpr, BLOCK_E: tl.constexpr, BLOCK_B: tl.constexpr):
    """One program: padded exclusive prefix sum of the counts, and the expert of every BLOCK_M-row block."""
    e = tl.arange(0, BLOCK_E)
    counts = tl.load(counts_ptr + e, mask=e < E, other=0)
    padded = tl.cdiv(counts, BLOCK_M) * BLOCK_M
    ends = tl.cumsum(padded, axis=0)
    tl.store(offsets_ptr + e, ends - padded, mask=e < E)
    total = tl.sum(padded, axis=0)
    tl.store(offsets_ptr + E, total)
    tl.store(total_ptr, total)
    ends = tl.where(e < E, ends, 2147483647)
    for b0 in range(0, n_blocks, BLOCK_B):
        b = b0 + tl.arange(0, BLOCK_B)
        expert = tl.sum((ends[None, :] <= (b * BLOCK_M)[:, None]).to(tl.int32), axis=1)
        tl.store(expert_ids_ptr + b, tl.where(b * BLOCK_M < total, expert, -1), mask=b < n_blocks)


@jit(do_not_specialize=("numel", "hidden", "topk"))
def _scatter_kernel(ids_ptr, rank_ptr, offsets_ptr, topw_ptr, x_ptr, sorted_ids_ptr, sorted_w_ptr, pos_ptr,
                    x_perm_ptr, numel, hidden, topk, BLOCK: tl.constexpr, BLOCK_H: tl.constexpr):
    """Pair f goes to row offsets[e_f] + rank_f: its id, its routing weight and its token's activation row."""
    f = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    ok = f < numel
    e = tl.load(ids_ptr + f, mask=ok, other=0)
    r = tl.load(offsets_ptr + e, mask=ok, other=0) + tl.load(rank_ptr + f, mask=ok, other=0)
    tl.store(sorted_ids_ptr + r, f, mask=ok)
    tl.store(sorted_w_ptr + r, tl.load(topw_ptr + f, mask=ok, other=0.0), mask=ok)
    tl.store(pos_ptr + f, r, mask=ok)
    token = f // topk
    for h0 in range(0, hidden, BLOCK_H):
        h = h0 + tl.arange(0, BLOCK_H)
        m = ok[:, None] & (h < hidden)[None, :]
        row = tl.load(x_ptr + token[:, None] * hidden + h[None, :], mask=m)
        tl.store(x_perm_ptr + r[:, None] * hidden + h[None, :], row, mask=m)


@jit
def _block_rows(sorted_ids_ptr, expert_ids_ptr, numel, direct, BLOCK_M: tl.constexpr):
    """Rows of this program's block, which of them hold a real pair, and the block's expert (-1: unused).

    `direct` is a runtime flag (one compiled kernel serves the routed and the shared expert): row r is token r.
    """
    b = tl.program_id(0)
    rows = b * BLOCK_M + tl.arange(0, BLOCK_M)
    if direct != 0:
        ok = rows < numel
        expert = b * 0
    else:
        ok = tl.load(sorted_ids_ptr + rows) < numel
        expert = tl.load(expert_ids_ptr + b)
    return rows, ok, expert


@jit(do_not_specialize=("numel", "N", "K", "direct"))
def _grouped_swiglu_kernel(a_ptr, w1_ptr, sorted_ids_ptr, expert_ids_ptr, h_ptr, numel, N, K,
                           direct, PRECISION: tl.constexpr,
                           BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    """h[r, n] = silu(a[r]·Wg[e, n]) · (a[r]·Wu[e, n]) with w1[e] = [Wg; Wu] of shape [2N, K]."""
    rows, ok, expert = _block_rows(sorted_ids_ptr, expert_ids_ptr, numel, direct, BLOCK_M)
    if expert >= 0:
        n = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
        w_base = w1_ptr + expert.to(tl.int64) * (2 * N * K)
        acc_g = tl.zeros((BLOCK_M, BLOCK_N), tl.float32)
        acc_u = tl.zeros((BLOCK_M, BLOCK_N), tl.float32)
        for k0 in range(0, K, BLOCK_K):
            kk = k0 + tl.arange(0, BLOCK_K)
            a = tl.load(a_ptr + rows[:, None] * K + kk[None, :], mask=ok[:, None] & (kk < K)[None, :], other=0.0)
            wmask = (kk < K)[:, None] & (n < N)[None, :]
            wg = tl.load(w_base + n[None, :] * K + kk[:, None], mask=wmask, other=0.0)
            wu = tl.load(w_base + (n + N)[None, :] * K + kk[:, None], mask=wmask, other=0.0)
            acc_g = tl.dot(a, wg, acc_g, input_precision=PRECISION)
            acc_u = tl.dot(a, wu, acc_u, input_precision=PRECISION)
        h = acc_g * tl.sigmoid(acc_g) * acc_u
        tl.store(h_ptr + rows[:, None] * N + n[None, :], h.to(h_ptr.dtype.element_ty),
                 mask=ok[:, None] & (n < N)[None, :])


@jit(do_not_specialize=("numel", "N", "K", "direct"))
def _grouped_down_kernel(h_ptr, w2_ptr, sorted_ids_ptr, expert_ids_ptr, row_w_ptr, y_ptr, numel, N, K,
                         direct, PRECISION: tl.constexpr,
                         BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    """y[r, n] = row_w[r] · (h[r]·W2[e, n]) in fp32, w2[e] of shape [N, K]."""
    rows, ok, expert = _block_rows(sorted_ids_ptr, expert_ids_ptr, numel, direct, BLOCK_M)
    if expert >= 0:
        n = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
        w_base = w2_ptr + expert.to(tl.int64) * (N * K)
        acc = tl.zeros((BLOCK_M, BLOCK_N), tl.float32)
        for k0 in range(0, K, BLOCK_K):
            kk = k0 + tl.arange(0, BLOCK_K)
            h = tl.load(h_ptr + rows[:, None] * K + kk[None, :], mask=ok[:, None] & (kk < K)[None, :], other=0.0)
            w = tl.load(w_base + n[None, :] * K + kk[:, None], mask=(kk < K)[:, None] & (n < N)[None, :], other=0.0)
            acc = tl.dot(h, w, acc, input_precision=PRECISION)
        row_w = tl.load(row_w_ptr + rows, mask=ok, other=0.0)
        tl.store(y_ptr + rows[:, None] * N + n[None, :], acc * row_w[:, None], mask=ok[:, None] & (n < N)[None, :])


@jit(do_not_specialize=("M", "hidden", "topk", "has_shared", "weighted"))
def _combine_kernel(y_ptr, pos_ptr, shared_ptr, row_w_ptr, out_ptr, M, hidden, topk, has_shared, weighted,
                    BLOCK_M: tl.constexpr, BLOCK_H: tl.constexpr):
    """Unpermute and sum: out[m] = Σ_j y[pos[m, j]] (+ the gated shared expert's row), in a fixed order."""
    m = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    h = tl.program_id(1) * BLOCK_H + tl.arange(0, BLOCK_H)
    mask = (m < M)[:, None] & (h < hidden)[None, :]
    acc = tl.zeros((BLOCK_M, BLOCK_H), tl.float32)
    if has_shared != 0:
        acc += tl.load(shared_ptr + m[:, None] * hidden + h[None, :], mask=mask, other=0.0)
    for j in range(0, topk):
        r = tl.load(pos_ptr + m * topk + j, mask=m < M, other=0)
        y = tl.load(y_ptr + r[:, None] * hidden + h[None, :], mask=mask, other=0.0).to(tl.float32)
        if weighted != 0:  # rows not yet scaled by their routing weight
            y = y * tl.load(row_w_ptr + r, mask=m < M, other=0.0)[:, None]
        acc += y
    tl.store(out_ptr + m[:, None] * hidden + h[None, :], acc.to(out_ptr.dtype.element_ty), mask=mask)


# Tuned per batch and router shape (kernels.tune sweeps it at the model's shapes; the table steers moe_router).
_router_kernel_tuned = tuned(_router_kernel, ROUTER_AUTOTUNE_CONFIGS, key=["M", "E", "K"])
# The expert GEMMs are tuned for DIRECT launches (the shared expert) and routed ones apart (`direct` is in the key).
# A routed launch's BLOCK_M is the height moe_align padded its plan to, so its tune problem is re-derived per config
# (routed_tune_problem: the captured routing re-aligned to that config's BLOCK_M), and moe_forward aligns to the
# height the two kernels' table entries favour together (_plan_block_m).
_ROUTED_BUILDER = "kernels.moe:routed_tune_problem"
_grouped_swiglu_tuned = with_builder(tuned(_grouped_swiglu_kernel, AUTOTUNE_CONFIGS, key=["numel", "N", "K", "direct"]),
                                     _ROUTED_BUILDER)
_grouped_down_tuned = with_builder(tuned(_grouped_down_kernel, AUTOTUNE_CONFIGS, key=["numel", "N", "K", "direct"]),
                                   _ROUTED_BUILDER)


# ----------------------------------------------------------------------------------------------- host side
def _precision(dtype) -> str:
    return "ieee" if np.dtype(dtype) == np.float32 else "tf32"


def _check_topk(k: int, E: int) -> None:
    if not isinstance(k, (int, np.integer)) or not 1 <= k <= min(_TOPK_SLOTS, E):
        raise ValueError(f"top-k must be an integer in 1..{min(_TOPK_SLOTS, E)} (at most {_TOPK_SLOTS} and the {E} "
                         f"experts), got {k}")


def moe_router(x: np.ndarray, w_router: np.ndarray, k: int, w_shared_gate: np.ndarray | None = None, *,
               config: dict | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """(topk_weights [M, k] fp32 renormalised, topk_ids [M, k] int32 descending, shared gate [M] fp32 or None).

    x [M, hidden], w_router [E, hidden] (nn.Linear layout), w_shared_gate [hidden]; logits accumulate in fp32.
    `config`: one of ROUTER_AUTOTUNE_CONFIGS (default: the machine's config table, kernels.config_table, else the
    first) or "auto" to tune on first use.
    """
    x = float_array(x, "x", ndim=2)
    w_router = float_array(w_router, "w_router", ndim=2)
    M, K = x.shape
    E = w_router.shape[0]
    if w_router.shape[1] != K or w_router.dtype != x.dtype or not 1 <= E <= MAX_EXPERTS:
        raise ValueError(f"w_router {w_router.dtype}{w_router.shape} must be [E <= {MAX_EXPERTS}, {K}] in {x.dtype}")
    _check_topk(k, E)
    has_shared = w_shared_gate is not None
    if has_shared:
        w_shared_gate = float_array(w_shared_gate, "w_shared_gate", ndim=1)
        if w_shared_gate.shape != (K,) or w_shared_gate.dtype != x.dtype:
            raise ValueError(f"w_shared_gate must be [{K}] in {x.dtype}, got "
                             f"{w_shared_gate.dtype}{w_shared_gate.shape}")
    weights = np.empty((M, k), np.float32)
    ids = np.empty((M, k), np.int32)
    gate = np.empty(M, np.float32) if has_shared else None
    args = (x, w_router, w_shared_gate if has_shared else x, weights, ids, gate if has_shared else weights, M, E, K, k)
    launch(_router_kernel, _router_kernel_tuned, ROUTER_AUTOTUNE_CONFIGS, lambda meta: (cdiv(M, meta["BLOCK_M"]),),
           args, config, TOPK_P=_TOPK_SLOTS, HAS_SHARED=has_shared, PRECISION=_precision(x.dtype),
           BLOCK_E=next_power_of_2(E))
    return weights, ids, gate


def _max_padded(numel: int, E: int, block_m: int) -> int:
    return cdiv(numel + E * (block_m - 1), block_m) * block_m


def moe_align(topk_ids: np.ndarray, topk_weights: np.ndarray, x: np.ndarray, num_experts: int, block_m: int
              ) -> dict[str, np.ndarray]:
    """Group the (token, slot) pairs by expert, padded to block_m rows per expert, and scatter them.

    Returns sorted_ids (pair id f = m·k + j per row, `numel` on padding rows), sorted_weights, expert_ids (per
    block, -1 past the used blocks), total ([1] rows in use), offsets ([E+1] segment starts), positions ([M, k]
    row of each pair) and x_perm (each row's activation; padding rows are never read).
    """
    if not isinstance(topk_ids, np.ndarray) or topk_ids.dtype != np.int32 or topk_ids.ndim != 2:
        raise ValueError("topk_ids must be a 2-D int32 array")
    if not isinstance(topk_weights, np.ndarray) or topk_weights.dtype != np.float32 or \
            topk_weights.shape != topk_ids.shape:
        raise ValueError(f"topk_weights must be float32 of shape {topk_ids.shape}")
    x = float_array(x, "x", ndim=2)
    M, k = topk_ids.shape
    if x.shape[0] != M:
        raise ValueError(f"x has {x.shape[0]} tokens, topk_ids {M}")
    if not 1 <= num_experts <= MAX_EXPERTS or block_m < 1 or block_m & (block_m - 1):
        raise ValueError(f"need 1 <= num_experts <= {MAX_EXPERTS} and a power-of-two block, got {num_experts}, "
                         f"{block_m}")
    if topk_ids.size and (topk_ids.min() < 0 or topk_ids.max() >= num_experts):
        raise ValueError(f"expert ids must be in [0, {num_experts})")
    ids = np.ascontiguousarray(topk_ids)
    numel, hidden = M * k, x.shape[1]
    rows = _max_padded(numel, num_experts, block_m)
    counts = np.zeros(num_experts, np.int32)
    rank = np.empty(numel, np.int32)
    out = dict(sorted_ids=np.full(rows, numel, np.int32), sorted_weights=np.zeros(rows, np.float32),
               expert_ids=np.empty(rows // block_m, np.int32), total=np.empty(1, np.int32),
               offsets=np.empty(num_experts + 1, np.int32), positions=np.empty((M, k), np.int32),
               x_perm=np.empty((rows, hidden), x.dtype))
    grid = (cdiv(numel, _BLOCK_F),)
    _count_kernel[grid](ids, counts, rank, numel, BLOCK=_BLOCK_F)
    _offsets_kernel[(1,)](counts, out["offsets"], out["expert_ids"], out["total"], num_experts, rows // block_m,
                          BLOCK_M=block_m, BLOCK_E=next_power_of_2(num_experts), BLOCK_B=64)
    _scatter_kernel[grid](ids, rank, out["offsets"], np.ascontiguousarray(topk_weights), x, out["sorted_ids"],
                          out["sorted_weights"], out["positions"], out["x_perm"], numel, hidden, k,
                          BLOCK=_BLOCK_F, BLOCK_H=min(_BLOCK_H, next_power_of_2(hidden)))
    return out


def _check_experts(w1, w2, hidden: int, dtype, shared: bool = False):
    lead = 0 if shared else 1
    name = "shared_" if shared else ""
    w1 = float_array(w1, f"{name}w1", ndim=2 + lead)
    w2 = float_array(w2, f"{name}w2", ndim=2 + lead)
    inter = w1.shape[-2] // 2
    ok = (w1.shape[-2] == 2 * inter and w1.shape[-1] == hidden and w2.shape[-2:] == (hidden, inter) and
          w1.shape[:lead] == w2.shape[:lead] and w1.dtype == dtype and w2.dtype == dtype)
    if not ok:
        raise ValueError(f"{name}w1 {w1.dtype}{w1.shape} must be [(E,) 2I, {hidden}] and {name}w2 {w2.dtype}"
                         f"{w2.shape} [(E,) {hidden}, I], both {np.dtype(dtype)}")
    return w1, w2


def _check_rows(R: int, sorted_ids, expert_ids, block_m: int, num_experts: int | None) -> None:
    """The row map of a grouped launch: None for DIRECT rows, else moe_align's sorted_ids and expert_ids."""
    if num_experts is None:
        if sorted_ids is not None or expert_ids is not None:
            raise ValueError("a DIRECT launch (2-D weight) takes no sorted_ids / expert_ids")
        return
    if not isinstance(sorted_ids, np.ndarray) or sorted_ids.dtype != np.int32 or sorted_ids.shape != (R,):
        raise ValueError(f"sorted_ids must be int32 of shape ({R},)")
    if R % block_m or not isinstance(expert_ids, np.ndarray) or expert_ids.dtype != np.int32 or \
            expert_ids.shape != (R // block_m,):
        raise ValueError(f"expert_ids must be int32 of shape ({R} // {block_m},), and the rows a multiple of it")
    if expert_ids.size and expert_ids.max() >= num_experts:
        raise ValueError(f"expert_ids must be below the {num_experts} experts")


def moe_grouped_swiglu(a: np.ndarray, w1: np.ndarray, sorted_ids: np.ndarray | None, expert_ids: np.ndarray | None,
                       numel: int, config: dict | None = None) -> np.ndarray:
    """silu(a·Wgᵀ)·(a·Wuᵀ) per row with its block's expert; sorted_ids None = rows are tokens of expert 0.
    `config` None: the config table's pick (for routed rows, among the configs of the plan's block height)."""
    direct = sorted_ids is None
    a = float_array(a, "a", ndim=2)
    R, K = a.shape
    cfg = config or _plan_config(R, expert_ids, direct)
    if not isinstance(w1, np.ndarray) or w1.dtype != a.dtype or w1.ndim != 3 - direct or w1.shape[-1] != K or \
            w1.shape[-2] % 2:
        raise ValueError(f"w1 must be [{'' if direct else 'E, '}2I, {K}] in {a.dtype}, got "
                         f"{getattr(w1, 'dtype', None)} {getattr(w1, 'shape', None)}")
    _check_rows(R, sorted_ids, expert_ids, cfg["BLOCK_M"], None if direct else w1.shape[0])
    w1 = np.ascontiguousarray(w1)
    N = w1.shape[-2] // 2
    h = np.empty((R, N), a.dtype)
    args = (a, w1, _NONE if direct else sorted_ids, _NONE if direct else expert_ids, h, numel, N, K, int(direct))
    _launch_rows(_grouped_swiglu_kernel, _grouped_swiglu_tuned, direct, config, cfg, R, N, args,
                 PRECISION=_precision(a.dtype))
    return h


def moe_grouped_down(h: np.ndarray, w2: np.ndarray, sorted_ids: np.ndarray | None, expert_ids: np.ndarray | None,
                     row_weights: np.ndarray, numel: int, config: dict | None = None) -> np.ndarray:
    """row_weights[r] · (h[r]·W2ᵀ) in fp32 per row with its block's expert (`config` as moe_grouped_swiglu's)."""
    direct = sorted_ids is None
    h = float_array(h, "h", ndim=2)
    R, K = h.shape
    cfg = config or _plan_config(R, expert_ids, direct)
    if not isinstance(w2, np.ndarray) or w2.dtype != h.dtype or w2.ndim != 3 - direct or w2.shape[-1] != K:
        raise ValueError(f"w2 must be [{'' if direct else 'E, '}hidden, {K}] in {h.dtype}, got "
                         f"{getattr(w2, 'dtype', None)} {getattr(w2, 'shape', None)}")
    if not isinstance(row_weights, np.ndarray) or row_weights.dtype != np.float32 or row_weights.shape != (R,):
        raise ValueError(f"row_weights must be float32 of shape ({R},)")
    _check_rows(R, sorted_ids, expert_ids, cfg["BLOCK_M"], None if direct else w2.shape[0])
    w2 = np.ascontiguousarray(w2)
    N = w2.shape[-2]
    y = np.empty((R, N), np.float32)
    args = (h, w2, _NONE if direct else sorted_ids, _NONE if direct else expert_ids, row_weights, y, numel, N, K,
            int(direct))
    _launch_rows(_grouped_down_kernel, _grouped_down_tuned, direct, config, cfg, R, N, args,
                 PRECISION=_precision(h.dtype))
    return y


def _plan_config(R: int, expert_ids, direct: bool) -> dict:
    """For a launch without `config`: the first config of the block height moe_align padded the `R` rows to (the
    rows per expert_ids entry; DIRECT rows: the first config). Only its BLOCK_M is binding (_launch_rows)."""
    if direct:
        return AUTOTUNE_CONFIGS[0]
    if not isinstance(expert_ids, np.ndarray) or expert_ids.size == 0 or R % expert_ids.size:
        raise ValueError(f"expert_ids must be moe_align's per-block expert ids of the {R} rows")
    block_m = R // expert_ids.size
    for cfg in AUTOTUNE_CONFIGS:
        if cfg["BLOCK_M"] == block_m:
            return cfg
    raise ValueError(f"the plan's block height {block_m} (rows {R} / expert_ids {expert_ids.size}) is not the "
                     f"BLOCK_M of any of moe's AUTOTUNE_CONFIGS ({[c['BLOCK_M'] for c in AUTOTUNE_CONFIGS]})")


def _launch_rows(kernel, tuned_kernel, direct: bool, config: dict | None, cfg: dict, R: int, N: int, args: tuple,
                 **meta) -> None:
    """A DIRECT launch (rows are tokens) takes its config like every autotuned kernel (kernels._common.launch: the
    config table's pick when `config` is None). A routed one runs `config` when given; else the table's pick among
    the configs of the plan's height (cfg's BLOCK_M, the only one valid for the rows), or, under capture, the
    @autotune wrapper when the plan has the default config's height (what kernels.tune sweeps)."""
    def grid(m):
        return cdiv(R, m["BLOCK_M"]), cdiv(N, m["BLOCK_N"])

    if direct:
        launch(kernel, tuned_kernel, AUTOTUNE_CONFIGS, grid, args, config, **meta)
        return
    if config is not None:
        chosen = config_table.as_config(config)
    else:
        same_height = [c for c in AUTOTUNE_CONFIGS if c["BLOCK_M"] == cfg["BLOCK_M"]]
        chosen = resolve(tuned_kernel, same_height, args, meta)
        if chosen is None:  # capturing: the wrapper runs the first config, so only a plan of its height is captured
            if cfg["BLOCK_M"] == AUTOTUNE_CONFIGS[0]["BLOCK_M"]:
                tuned_kernel[grid](*args, **meta)
                return
            chosen = config_table.as_config(cfg)
    if chosen.kwargs["BLOCK_M"] != cfg["BLOCK_M"]:
        raise ValueError(f"{kernel.__name__}: config {chosen.to_dict()} has BLOCK_M {chosen.kwargs['BLOCK_M']}, but "
                         f"moe_align padded the rows to {cfg['BLOCK_M']}")
    kernel[grid(chosen.kwargs)](*args, **meta, **chosen.all_kwargs())


def _plan_block_m(x: np.ndarray, w1: np.ndarray, w2: np.ndarray, numel: int) -> int:
    """The block height moe_forward aligns the routed rows to. Both grouped GEMMs run at it, so it is the height
    whose best configs give the least summed modeled time in the two kernels' table entries (their `config_us`);
    with no such entries, the gate/up GEMM's pick (the first config's under capture). A config being checked
    (config_table.forcing) of either kernel decides instead, so that its own height is what it runs."""
    for tuned_kernel in (_grouped_down_tuned, _grouped_swiglu_tuned):
        forced = config_table.forced(tuned_kernel)
        if forced is not None:
            return int(forced.kwargs["BLOCK_M"])
    inter, hidden = w1.shape[1] // 2, w1.shape[2]
    meta = {"PRECISION": _precision(x.dtype)}
    gate_up = (x, w1, _NONE, _NONE, x, numel, inter, hidden, 0)  # the keys' values and dtypes of the launches
    down = (x, w2, _NONE, _NONE, _NONE_F32, _NONE_F32, numel, hidden, inter, 0)
    if not capturing():
        costs = _height_costs([config_table.entry(_grouped_swiglu_tuned, gate_up, meta),
                               config_table.entry(_grouped_down_tuned, down, meta)])
        if costs:
            return min(costs, key=lambda height: (costs[height], height))
    chosen = resolve(_grouped_swiglu_tuned, AUTOTUNE_CONFIGS, gate_up, meta)
    return int((chosen or config_table.as_config(AUTOTUNE_CONFIGS[0])).kwargs["BLOCK_M"])


def _height_costs(entries: list) -> dict[int, float]:
    """BLOCK_M -> the summed best modeled time of the kernels at that height, from their entries' `config_us`
    (aligned with AUTOTUNE_CONFIGS); {} unless every kernel has such an entry."""
    costs: dict[int, float] = {}
    for entry in entries:
        times = (entry or {}).get("config_us")
        if not times or len(times) != len(AUTOTUNE_CONFIGS):
            return {}
        best: dict[int, float] = {}
        for cfg, us in zip(AUTOTUNE_CONFIGS, times):
            if us is not None:
                best[cfg["BLOCK_M"]] = min(best.get(cfg["BLOCK_M"], math.inf), us)
        costs = best if not costs and entry is entries[0] else {h: costs[h] + best[h] for h in costs if h in best}
    return costs


def routed_tune_problem(problem: TuneProblem, config: dict) -> TuneProblem:
    """A captured grouped-GEMM launch re-derived for one config (jit.tune.TuneProblem.builder): the routing is
    read back from the captured plan (each pair's expert and input row) and re-aligned by moe_align to the
    config's BLOCK_M, so each config runs on rows padded to its own height. DIRECT launches serve as captured."""
    args = problem.args
    if args[-1]:
        return dataclasses.replace(problem, builder=None)
    down = problem.kernel is _grouped_down_tuned
    rows_in, w, sorted_ids, expert_ids = args[0], args[1], args[2], args[3]
    numel, N = int(args[-4]), int(args[-3])
    used = np.nonzero(sorted_ids < numel)[0]
    pairs = sorted_ids[used]
    ids = np.zeros((numel, 1), np.int32)  # one pair per row: moe_align's x_perm then holds the captured rows
    ids[pairs, 0] = expert_ids[used // (sorted_ids.size // expert_ids.size)]
    x = np.zeros((numel, rows_in.shape[1]), rows_in.dtype)
    x[pairs] = rows_in[used]
    weights = np.zeros((numel, 1), np.float32)
    if down:
        weights[pairs, 0] = args[4][used]
    plan = moe_align(ids, weights, x, w.shape[0], int(Config.from_dict(config).kwargs["BLOCK_M"]))
    R = plan["x_perm"].shape[0]
    out = np.empty((R, N), np.float32 if down else rows_in.dtype)
    head = (plan["x_perm"], w, plan["sorted_ids"], plan["expert_ids"])
    new = (*head, plan["sorted_weights"], out, *args[6:]) if down else (*head, out, *args[5:])
    return dataclasses.replace(problem, args=new, grid=lambda m: (cdiv(R, m["BLOCK_M"]), cdiv(N, m["BLOCK_N"])),
                               builder=None)


def moe_combine(y: np.ndarray, positions: np.ndarray, shared: np.ndarray | None, out_dtype,
                row_weights: np.ndarray | None = None) -> np.ndarray:
    """out[m] = Σ_j (row_weights[r] ·) y[r = positions[m, j]] (+ shared[m]), rounded once to out_dtype."""
    if not isinstance(y, np.ndarray) or y.dtype != np.float32 or y.ndim != 2:
        raise ValueError("y must be a 2-D float32 array (the expert rows)")
    if not isinstance(positions, np.ndarray) or positions.dtype != np.int32 or positions.ndim != 2:
        raise ValueError("positions must be a 2-D int32 array [M, k]")
    if positions.size and (positions.min() < 0 or positions.max() >= y.shape[0]):
        raise ValueError(f"positions must index the {y.shape[0]} rows of y")
    M, k = positions.shape
    hidden = y.shape[1]
    for name, arr, shape in (("shared", shared, (M, hidden)), ("row_weights", row_weights, (y.shape[0],))):
        if arr is not None and (not isinstance(arr, np.ndarray) or arr.dtype != np.float32 or arr.shape != shape):
            raise ValueError(f"{name} must be float32 of shape {shape}")
    out = np.empty((M, hidden), out_dtype)
    block_h = min(256, next_power_of_2(hidden))
    row_w = _NONE_F32 if row_weights is None else row_weights
    _combine_kernel[(cdiv(M, 4), cdiv(hidden, block_h))](y, positions, _NONE_F32 if shared is None else shared, row_w,
                                                          out, M, hidden, k, int(shared is not None),
                                                          int(row_weights is not None),
                                                          BLOCK_M=4, BLOCK_H=block_h)
    return out


def moe_forward(x: np.ndarray, w_router: np.ndarray, w1: np.ndarray, w2: np.ndarray, k: int, *,
                shared_w1: np.ndarray | None = None, shared_w2: np.ndarray | None = None,
                w_shared_gate: np.ndarray | None = None, config: dict | None = None,
                router_input: np.ndarray | None = None) -> np.ndarray:
    """The Qwen3.5 sparse MoE block: x [M, hidden]; w1 [E, 2I, hidden] (gate rows then up rows), w2 [E, hidden, I];
    optional shared expert shared_w1 [2Is, hidden], shared_w2 [hidden, Is] gated by sigmoid(x·w_shared_gate).
    `router_input` (x's shape) is routed instead of x: a stand-in when x's values are not computed (modeling).
    `config` (one of AUTOTUNE_CONFIGS) runs every expert GEMM; None: the config table's picks (kernels.config_table),
    the routed rows aligned to the height the two grouped GEMMs' entries favour together (_plan_block_m), else
    the first config's."""
    x = float_array(x, "x", ndim=2)
    M, hidden = x.shape
    w1, w2 = _check_experts(w1, w2, hidden, x.dtype)
    E = w1.shape[0]
    if w_router.shape[0] != E:
        raise ValueError(f"w_router has {w_router.shape[0]} experts, w1 {E}")
    has_shared = shared_w1 is not None or shared_w2 is not None or w_shared_gate is not None
    if has_shared and (shared_w1 is None or shared_w2 is None or w_shared_gate is None):
        raise ValueError("the shared expert needs shared_w1, shared_w2 and w_shared_gate together")
    if has_shared:
        shared_w1, shared_w2 = _check_experts(shared_w1, shared_w2, hidden, x.dtype, shared=True)
    weights, ids, gate = moe_router(x if router_input is None else router_input, w_router, k, w_shared_gate)
    numel = M * k
    block_m = config["BLOCK_M"] if config else _plan_block_m(x, w1, w2, numel)
    plan = moe_align(ids, weights, x, E, block_m)
    h = moe_grouped_swiglu(plan["x_perm"], w1, plan["sorted_ids"], plan["expert_ids"], numel, config)
    y = moe_grouped_down(h, w2, plan["sorted_ids"], plan["expert_ids"], plan["sorted_weights"], numel, config)
    shared = None
    if has_shared:  # the shared expert's DIRECT launches take `config` as given (None: the config table's pick)
        hs = moe_grouped_swiglu(x, shared_w1, None, None, M, config)
        shared = moe_grouped_down(hs, shared_w2, None, None, gate, M, config)
    return moe_combine(y, plan["positions"], shared, x.dtype)


# ----------------------------------------------------------------------------------------------- references
def moe_router_reference(x, w_router, k, w_shared_gate=None):
    """float64 softmax → top-k (ties to the lower expert) → renormalise; and the shared gate."""
    logits = np.asarray(x, np.float64) @ np.asarray(w_router, np.float64).T
    p = np.exp(logits - logits.max(axis=1, keepdims=True))
    p /= p.sum(axis=1, keepdims=True)
    ids = np.stack([np.lexsort((np.arange(p.shape[1]), -row))[:k] for row in p]).astype(np.int32)
    w = np.take_along_axis(p, ids, axis=1)
    w /= w.sum(axis=1, keepdims=True)
    gate = None
    if w_shared_gate is not None:
        gate = 1.0 / (1.0 + np.exp(-(np.asarray(x, np.float64) @ np.asarray(w_shared_gate, np.float64))))
    return w, ids, gate


def _swiglu_mlp(x, w1, w2, round_to=None, act_quant=None):
    inter = w1.shape[0] // 2
    a = x if act_quant is None else act_quant(x)
    g = a @ w1[:inter].T
    u = a @ w1[inter:].T
    h = g / (1.0 + np.exp(-g)) * u
    if round_to is not None:  # the kernel keeps the intermediate in the activation dtype
        h = h.astype(round_to).astype(np.float64)
    return (h if act_quant is None else act_quant(h)) @ w2.T


def moe_reference(x, w1, w2, topk_weights, topk_ids, *, shared_w1=None, shared_w2=None, shared_gate=None,
                  act_quant=None):
    """Every token through its experts in float64 (the routing given, so ties cannot differ), vectorised
    per expert: the rows routed to one expert go through its MLP together.

    act_quant, if given, maps a routed expert GEMM's input rows to what the kernel multiplies (e.g. FP8 codes)."""
    xd = np.asarray(x, np.float64)
    w1d, w2d = np.asarray(w1, np.float64), np.asarray(w2, np.float64)
    round_to = None if x.dtype == np.float32 else x.dtype
    ids, weights = np.asarray(topk_ids), np.asarray(topk_weights, np.float64)
    out = np.zeros(xd.shape, np.float64)
    for e in np.unique(ids):
        rows, slots = np.nonzero(ids == e)
        y = _swiglu_mlp(xd[rows], w1d[e], w2d[e], round_to, act_quant)
        np.add.at(out, rows, weights[rows, slots, None] * y)
    if shared_w1 is not None:
        sw1, sw2 = np.asarray(shared_w1, np.float64), np.asarray(shared_w2, np.float64)
        out += np.asarray(shared_gate, np.float64).reshape(-1, 1) * _swiglu_mlp(xd, sw1, sw2, round_to)
    return out


def make_moe_inputs(rng, M, hidden, E, inter, shared_inter, dtype):
    """Fresh random MoE weights at 1/sqrt(fan-in) scale so activations stay O(1)."""
    return dict(x=random_array(rng, (M, hidden), dtype),
                w_router=random_array(rng, (E, hidden), dtype, scale=hidden ** -0.5, offset=0.0),
                w1=random_array(rng, (E, 2 * inter, hidden), dtype, scale=hidden ** -0.5, offset=0.0),
                w2=random_array(rng, (E, hidden, inter), dtype, scale=inter ** -0.5, offset=0.0),
                shared_w1=random_array(rng, (2 * shared_inter, hidden), dtype, scale=hidden ** -0.5, offset=0.0),
                shared_w2=random_array(rng, (hidden, shared_inter), dtype, scale=shared_inter ** -0.5, offset=0.0),
                w_shared_gate=random_array(rng, (hidden,), dtype, scale=hidden ** -0.5, offset=0.0))


# ----------------------------------------------------------------------------------------------- cases
@register
def _cases():
    rng = np.random.default_rng(4)
    # The router at Qwen3.5-35B-A3B's shape (hidden 2048, 256 experts, top-8, shared gate), 64 tokens.
    r = make_moe_inputs(rng, 64, 2048, 256, 1, 1, BF16)
    yield Case("moe.router", "M=64 hidden=2048 E=256 k=8", "bf16",
               lambda: moe_router(r["x"], r["w_router"], 8, r["w_shared_gate"]),
               lambda: moe_router_reference(r["x"], r["w_router"], 8, r["w_shared_gate"]),
               rtol=1e-4, atol=1e-5)
    # moe_align at Qwen3-Next's routing (512 experts, top-10): the per-expert segments as sorted sets.
    ids = np.stack([rng.permutation(512)[:10] for _ in range(200)]).astype(np.int32)
    weights = rng.random(ids.shape).astype(np.float32)
    xa = random_array(rng, (200, 64), BF16)

    def align_segments():
        plan = moe_align(ids, weights, xa, 512, 16)
        return segments(plan["sorted_ids"], plan["offsets"], ids.size)

    yield Case("moe.align", "M=200 E=512 k=10 Bm=16", "int32", align_segments,
               lambda: moe_align_reference(ids, 512, 16), rtol=0, atol=0)
    # The whole block with Qwen3.5's structure at reduced width (hidden 512, 64 experts of 128, top-8, shared).
    for M, hidden, E, k, inter, dtype in ((24, 512, 64, 8, 128, BF16), (13, 256, 128, 10, 64, np.float16)):
        a = make_moe_inputs(rng, M, hidden, E, inter, inter, dtype)
        shared = {n: a[n] for n in ("shared_w1", "shared_w2", "w_shared_gate")}

        def run(a=a, k=k, shared=shared):
            return moe_forward(a["x"], a["w_router"], a["w1"], a["w2"], k, **shared)

        def ref(a=a, k=k):
            w, i, g = moe_router_reference(a["x"], a["w_router"], k, a["w_shared_gate"])
            return moe_reference(a["x"], a["w1"], a["w2"], w, i, shared_w1=a["shared_w1"],
                                 shared_w2=a["shared_w2"], shared_gate=g)

        tol = 8e-3 if dtype == BF16 else 1e-3  # two half-ulps of the output (measured 1.9e-3, 2.3e-4)
        pairs = M * k
        yield Case("moe.forward", f"M={M} hidden={hidden} E={E} k={k} I={inter} +shared", dtype_name(dtype), run,
                   ref, rtol=tol, atol=tol,
                   min_bytes=int(a["x"].nbytes * 2 + min(E, pairs) * (a["w1"][0].nbytes + a["w2"][0].nbytes)))


def segments(sorted_ids: np.ndarray, offsets: np.ndarray, numel: int) -> np.ndarray:
    """Each expert's segment as a sorted set with the padding sentinels last: order inside a segment is free."""
    parts = [np.sort(sorted_ids[offsets[e]:offsets[e + 1]]) for e in range(offsets.size - 1)]
    return np.concatenate(parts + [offsets[-1:]]) if parts else offsets[-1:]


def moe_align_reference(topk_ids, num_experts: int, block_m: int) -> np.ndarray:
    """The segments `segments` expects: per expert its flat pair ids ascending, padded with numel to block_m."""
    flat = topk_ids.reshape(-1)
    parts, total = [], 0
    for e in range(num_experts):
        members = np.nonzero(flat == e)[0]
        padded = cdiv(members.size, block_m) * block_m
        parts.append(np.concatenate([members, np.full(padded - members.size, flat.size)]))
        total += padded
    return np.concatenate(parts + [np.array([total])]).astype(np.int32)
