"""DeepSeek-style dynamic sparse attention (research/qwen35.md §3): the lightning indexer, an on-device top-k,
and attention over the selected tokens (or whole 64-token blocks) only.

Indexer score of query t for key s: `I[t,s] = Σ_j w[t,j] · ReLU(q_I[t,j] · k_I[s])` (the scales of §3.1.7 are
folded into w). A query at position p sees key s when `s <= p` or `s < prefix_len`: the multimodal prefix
attends bidirectionally and is visible to every later token; it is always selected (it takes the first
`min(prefix, k)` slots, so `prefix_len <= k`). Top-k orders by score, ties to the lower index, and marks unused
slots -1. The selection never leaves the device: indexer → top-k → attention are kernels reading each other's
output arrays, with no host code between them.

Block variant: the indexer reduces each row's scores to one per 64-token block (the max over the visible tokens
of the block), top-k picks blocks, and the attention gathers whole blocks (masking their invisible tokens).

Accuracy: indexer scores are fp32 (1e-5 relative to a float64 reference of the same inputs); attention
accumulates in fp32 with P rounded to the K/V dtype before P·V, as FlashAttention does (fp32 inputs: 1e-5).
"""

from __future__ import annotations

import math

import numpy as np

import dsl as tl
from jit import cdiv, jit, next_power_of_2
from kernels._common import BF16, dtype_name, float_array, launch, random_array
from kernels.registry import Case, register
from kernels.tuning import tuned

KV_BLOCK = 64  # tokens per block in the block variant (the indexer K cache's page size in vLLM / DeepGEMM)
MAX_TOPK = 2048
_LOG2E = 1.4426950408889634
_INVALID_KEY = tl.constexpr(-(2**63))  # sort key of a slot that holds nothing (masked or past the row)

# First entry is the default (the config table, kernels.config_table, may pick another); the others are the
# autotuner's search space.
# Indexer tiles are BLOCK_T·H_I rows of fp32 q: with 64 index heads of 128 dims one query's rows already take
# 32 KiB, so larger BLOCK_T only fits the 192 KiB of shared memory with fewer stages or narrower key tiles.
INDEXER_AUTOTUNE_CONFIGS = [
    {"BLOCK_T": 1, "BLOCK_S": 64, "num_warps": 4, "num_stages": 2},
    {"BLOCK_T": 2, "BLOCK_S": 32, "num_warps": 4, "num_stages": 2},
    {"BLOCK_T": 1, "BLOCK_S": 128, "num_warps": 8, "num_stages": 1},
]
DECODE_TOPK_STAGES = 2  # the fused decode indexer holds a [H_I, d_I] x [d_I, k] dot: two stages fit
ATTENTION_AUTOTUNE_CONFIGS = [
    {"BLOCK_N": 64, "num_warps": 4},
    {"BLOCK_N": 32, "num_warps": 4},
    {"BLOCK_N": 128, "num_warps": 8},
]
AUTOTUNE_CONFIGS = {"indexer": INDEXER_AUTOTUNE_CONFIGS, "attention": ATTENTION_AUTOTUNE_CONFIGS}


# ----------------------------------------------------------------------------------------------- kernels
@jit
def _sort_keys(score, col, valid, forced):
    """int64 keys whose descending order is (score desc, col asc); forced cols sort first, invalid ones last."""
    bits = score.to(tl.int32, bitcast=True)
    hi = tl.where(bits < 0, bits ^ 0x7FFFFFFF, bits)  # monotone in the float value
    hi = tl.where(forced, 0x7FFFFFFF, hi)
    key = (hi.to(tl.int64) << 32) | (0x7FFFFFFF - col).to(tl.int64)
    return tl.where(valid, key, _INVALID_KEY)


@jit
def _store_selection(buf, idx_ptr, cnt_ptr, k, KP: tl.constexpr):
    """Write the first k entries of a descending key buffer as column ids (-1 when empty) and their count."""
    slots = tl.arange(0, KP)
    ok = buf != _INVALID_KEY
    col = 0x7FFFFFFF - (buf & 0xFFFFFFFF).to(tl.int32)
    tl.store(idx_ptr + slots, tl.where(ok, col, -1), mask=slots < k)
    tl.store(cnt_ptr, tl.minimum(tl.sum(ok.to(tl.int32), axis=0), k))


@jit(do_not_specialize=("T", "S", "pos0", "prefix", "stride_qt", "stride_qh", "stride_wt", "stride_ks", "stride_ot"))
def _indexer_kernel(q_ptr, w_ptr, k_ptr, out_ptr, T, S, pos0, prefix,
                    stride_qt, stride_qh, stride_wt, stride_ks, stride_ot,
                    H: tl.constexpr, D: tl.constexpr, UNIT: tl.constexpr,
                    BLOCK_T: tl.constexpr, BLOCK_S: tl.constexpr):
    """Scores of BLOCK_T queries against BLOCK_S keys; with UNIT > 1, the max per UNIT-token block instead."""
    t0 = tl.program_id(0) * BLOCK_T
    s0 = tl.program_id(1) * BLOCK_S
    t = t0 + tl.arange(0, BLOCK_T)
    s = s0 + tl.arange(0, BLOCK_S)
    pos = pos0 + t
    visible = ((s[None, :] <= pos[:, None]) | (s[None, :] < prefix)) & (s[None, :] < S)
    if (s0 > pos0 + t0 + BLOCK_T - 1) & (s0 >= prefix):  # the whole tile is above the causal diagonal
        score = tl.full((BLOCK_T, BLOCK_S), float("-inf"), tl.float32)
    else:
        rows = tl.arange(0, BLOCK_T * H)
        tq = t0 + rows // H
        d = tl.arange(0, D)
        q = tl.load(q_ptr + tq[:, None] * stride_qt + (rows % H)[:, None] * stride_qh + d[None, :],
                    mask=(tq < T)[:, None], other=0.0)
        kt = tl.load(k_ptr + s[None, :] * stride_ks + d[:, None], mask=(s < S)[None, :], other=0.0)
        logits = tl.dot(q, kt, input_precision="ieee")
        w = tl.load(w_ptr + tq * stride_wt + rows % H, mask=tq < T, other=0.0).to(tl.float32)
        weighted = tl.maximum(logits, 0.0) * w[:, None]
        score = tl.sum(tl.reshape(weighted, (BLOCK_T, H, BLOCK_S)), axis=1)
        score = tl.where(visible, score, float("-inf"))
    if UNIT == 1:
        tl.store(out_ptr + t[:, None] * stride_ot + s[None, :], score, mask=(t < T)[:, None] & (s < S)[None, :])
    else:
        blocks = tl.max(tl.reshape(score, (BLOCK_T, BLOCK_S // UNIT, UNIT)), axis=2)
        b = s0 // UNIT + tl.arange(0, BLOCK_S // UNIT)
        tl.store(out_ptr + t[:, None] * stride_ot + b[None, :], blocks,
                 mask=(t < T)[:, None] & (b * UNIT < S)[None, :])


@jit(do_not_specialize=("n_cols", "pos0", "prefix", "k", "stride_st", "stride_it"))
def _topk_kernel(score_ptr, idx_ptr, cnt_ptr, n_cols, pos0, prefix, k, stride_st, stride_it,
                 UNIT: tl.constexpr, KP: tl.constexpr):
    """Streaming top-k of one row: keep the best KP keys, merge KP new columns per step (sort of 2·KP)."""
    t = tl.program_id(0)
    extent = tl.minimum(tl.cdiv(tl.maximum(pos0 + t + 1, prefix), UNIT), n_cols)  # columns that can be visible
    forced_cols = tl.cdiv(prefix, UNIT)
    buf = tl.full((KP,), _INVALID_KEY, tl.int64)
    for c0 in range(0, extent, KP):
        col = c0 + tl.arange(0, KP)
        score = tl.load(score_ptr + t * stride_st + col, mask=col < extent, other=float("-inf"))
        keys = _sort_keys(score, col, (col < extent) & (score > float("-inf")), col < forced_cols)
        buf = tl.topk(tl.cat(buf, keys), KP)
    _store_selection(buf, idx_ptr + t * stride_it, cnt_ptr + t, k, KP)


@jit(do_not_specialize=("prefix", "k", "stride_qb", "stride_qh", "stride_wb", "stride_kb", "stride_ks", "stride_ib"))
def _decode_topk_kernel(q_ptr, w_ptr, k_ptr, lens_ptr, idx_ptr, cnt_ptr, prefix, k,
                        stride_qb, stride_qh, stride_wb, stride_kb, stride_ks, stride_ib,
                        H: tl.constexpr, D: tl.constexpr, UNIT: tl.constexpr, KP: tl.constexpr):
    """Decode: indexer and top-k fused for one query per sequence; the scores never reach memory."""
    b = tl.program_id(0)
    length = tl.load(lens_ptr + b)
    h = tl.arange(0, H)
    d = tl.arange(0, D)
    q = tl.load(q_ptr + b * stride_qb + h[:, None] * stride_qh + d[None, :])
    w = tl.load(w_ptr + b * stride_wb + h).to(tl.float32)
    buf = tl.full((KP,), _INVALID_KEY, tl.int64)
    for s0 in range(0, length, KP * UNIT):
        s = s0 + tl.arange(0, KP * UNIT)
        kt = tl.load(k_ptr + b * stride_kb + s[None, :] * stride_ks + d[:, None], mask=(s < length)[None, :],
                     other=0.0)
        logits = tl.dot(q, kt, input_precision="ieee")
        score = tl.sum(tl.maximum(logits, 0.0) * w[:, None], axis=0)
        score = tl.where(s < length, score, float("-inf"))
        if UNIT > 1:
            score = tl.max(tl.reshape(score, (KP, UNIT)), axis=1)
        col = s0 // UNIT + tl.arange(0, KP)
        keys = _sort_keys(score, col, score > float("-inf"), col * UNIT < prefix)
        buf = tl.topk(tl.cat(buf, keys), KP)
    _store_selection(buf, idx_ptr + b * stride_ib, cnt_ptr + b, k, KP)


@jit
def _gather_kv(k_ptr, v_ptr, idx_row, n, n_sel, length, pos, prefix, kv_head,
               stride_ks, stride_kh, stride_vs, stride_vh,
               D: tl.constexpr, UNIT: tl.constexpr, BLOCK_N: tl.constexpr):
    """K (transposed, D x BLOCK_N) and V (BLOCK_N x D) of the n-th selection step, and which columns count."""
    if UNIT == 1:
        slot = n + tl.arange(0, BLOCK_N)
        cols = tl.load(idx_row + slot, mask=slot < n_sel, other=-1)
    else:
        block = tl.load(idx_row + n, mask=n < n_sel, other=-1)
        cols = tl.where(block >= 0, block * UNIT + tl.arange(0, BLOCK_N), -1)
    ok = (cols >= 0) & (cols < length) & ((cols <= pos) | (cols < prefix))
    cols = tl.where(ok, cols, 0)
    d = tl.arange(0, D)
    kt = tl.load(k_ptr + cols[None, :] * stride_ks + kv_head * stride_kh + d[:, None], mask=ok[None, :], other=0.0)
    v = tl.load(v_ptr + cols[:, None] * stride_vs + kv_head * stride_vh + d[None, :], mask=ok[:, None], other=0.0)
    return kt, v, ok


@jit(do_not_specialize=("S", "pos0", "prefix", "n_idx", "stride_qt", "stride_qh", "stride_kb", "stride_ks",
                        "stride_kh", "stride_vb", "stride_vs", "stride_vh", "stride_it", "stride_ot", "stride_oh"))
def _sparse_attention_kernel(q_ptr, k_ptr, v_ptr, idx_ptr, cnt_ptr, lens_ptr, out_ptr,
                             S, pos0, prefix, n_idx, qk_scale,
                             stride_qt, stride_qh, stride_kb, stride_ks, stride_kh,
                             stride_vb, stride_vs, stride_vh, stride_it, stride_ot, stride_oh,
                             G: tl.constexpr, GP: tl.constexpr, D: tl.constexpr, UNIT: tl.constexpr,
                             BLOCK_N: tl.constexpr, HAS_COUNTS: tl.constexpr, DECODE: tl.constexpr,
                             PRECISION: tl.constexpr):
    """One query row and one KV head (its G query heads together): online softmax over the selected K/V.

    The gather of the next selection step is issued before the current step's math (a two-stage software
    pipeline), so on a GPU the loads of step n+1 overlap the dots of step n.
    """
    t = tl.program_id(0)
    kv_head = tl.program_id(1)
    if DECODE:
        length = tl.load(lens_ptr + t)
        pos = length - 1
        k_base = k_ptr + t * stride_kb
        v_base = v_ptr + t * stride_vb
    else:
        length = S
        pos = pos0 + t
        k_base = k_ptr
        v_base = v_ptr
    if HAS_COUNTS:
        n_sel = tl.load(cnt_ptr + t)
    else:
        n_sel = n_idx
    step = BLOCK_N if UNIT == 1 else 1
    g = tl.arange(0, GP)
    d = tl.arange(0, D)
    heads = kv_head * G + g
    q = tl.load(q_ptr + t * stride_qt + heads[:, None] * stride_qh + d[None, :], mask=(g < G)[:, None], other=0.0)
    idx_row = idx_ptr + t * stride_it
    m_i = tl.full((GP,), float("-inf"), tl.float32)
    l_i = tl.zeros((GP,), tl.float32)
    acc = tl.zeros((GP, D), tl.float32)
    kt, v, ok = _gather_kv(k_base, v_base, idx_row, 0, n_sel, length, pos, prefix, kv_head,
                           stride_ks, stride_kh, stride_vs, stride_vh, D, UNIT, BLOCK_N)
    for n in range(0, n_sel, step):
        kt_next, v_next, ok_next = _gather_kv(k_base, v_base, idx_row, n + step, n_sel, length, pos, prefix,
                                              kv_head, stride_ks, stride_kh, stride_vs, stride_vh, D, UNIT, BLOCK_N)
        s = tl.dot(q, kt, input_precision=PRECISION) * qk_scale
        s = tl.where(ok[None, :], s, float("-inf"))
        m_new = tl.maximum(m_i, tl.max(s, axis=1))
        m_safe = tl.where(m_new == float("-inf"), 0.0, m_new)
        p = tl.exp2(s - m_safe[:, None])
        alpha = tl.exp2(m_i - m_safe)
        l_i = l_i * alpha + tl.sum(p, axis=1)
        acc = acc * alpha[:, None] + tl.dot(p.to(v.dtype), v, input_precision=PRECISION)
        m_i = m_new
        kt, v, ok = kt_next, v_next, ok_next
    out = acc / tl.where(l_i == 0.0, 1.0, l_i)[:, None]
    tl.store(out_ptr + t * stride_ot + heads[:, None] * stride_oh + d[None, :], out.to(out_ptr.dtype.element_ty),
             mask=(g < G)[:, None])


# The indexer and the token-sparse attention launch the config table's pick (kernels.config_table; the first
# config without one). A key tile must hold whole blocks of a block-wise index (UNIT tokens).
_indexer_tuned = tuned(_indexer_kernel, INDEXER_AUTOTUNE_CONFIGS, key=["T", "S", "H", "D", "UNIT"],
                       keep=lambda cfg, args: cfg["BLOCK_S"] >= args["UNIT"])
_sparse_attention_tuned = tuned(_sparse_attention_kernel, ATTENTION_AUTOTUNE_CONFIGS, key=["G", "D", "n_idx"])


# ----------------------------------------------------------------------------------------------- host side
def _check_unit(block_size: int) -> int:
    if block_size not in (1, KV_BLOCK):
        raise ValueError(f"block_size must be 1 (token selection) or {KV_BLOCK} (block selection), got {block_size}")
    return block_size


def _check_pow2(value: int, name: str) -> None:
    if value < 1 or value & (value - 1):
        raise ValueError(f"{name} must be a power of two, got {value}")


def _check_topk(k: int, prefix_len: int, block_size: int) -> None:
    if not 1 <= k <= MAX_TOPK:
        raise ValueError(f"topk must be in [1, {MAX_TOPK}], got {k}")
    if prefix_len < 0 or cdiv(prefix_len, block_size) > k:
        raise ValueError(f"the always-selected prefix ({prefix_len} tokens) must fit in topk={k} selections")


def _indexer_inputs(q_index, weights, k_index, batched: bool):
    lead = 1 if batched else 0
    q_index = float_array(q_index, "q_index", ndim=3)
    k_index = float_array(k_index, "k_index", ndim=2 + lead)
    if not isinstance(weights, np.ndarray) or weights.dtype != np.float32 or weights.shape != q_index.shape[:2]:
        raise ValueError(f"weights must be a float32 array of shape {q_index.shape[:2]}, got "
                         f"{getattr(weights, 'dtype', type(weights).__name__)} {getattr(weights, 'shape', '')}")
    if k_index.dtype != q_index.dtype or k_index.shape[-1] != q_index.shape[2]:
        raise ValueError(f"k_index {k_index.dtype}{k_index.shape} must match q_index {q_index.dtype}{q_index.shape} "
                         "in dtype and head dim")
    _check_pow2(q_index.shape[1], "indexer heads")
    _check_pow2(q_index.shape[2], "indexer head dim")
    if q_index.shape[2] < 16:
        raise ValueError(f"indexer head dim must be at least 16, got {q_index.shape[2]}")
    return q_index, np.ascontiguousarray(weights), k_index


def lightning_indexer(q_index: np.ndarray, weights: np.ndarray, k_index: np.ndarray, *, prefix_len: int = 0,
                      block_size: int = 1) -> np.ndarray:
    """Indexer scores [T, S] fp32 (or [T, ceil(S/64)] block maxima when block_size=64); -inf where invisible.

    q_index [T, H_I, d_I], weights [T, H_I] fp32, k_index [S, d_I]; the T queries are the last T of S positions.
    """
    q_index, weights, k_index = _indexer_inputs(q_index, weights, k_index, batched=False)
    unit = _check_unit(block_size)
    (T, H, D), S = q_index.shape, k_index.shape[0]
    if not 0 < T <= S:
        raise ValueError(f"need 0 < queries <= keys, got {T} queries and {S} keys")
    out = np.empty((T, cdiv(S, unit)), np.float32)
    args = (q_index, weights, k_index, out, T, S, S - T, prefix_len,
            q_index.strides[0] // q_index.itemsize, q_index.strides[1] // q_index.itemsize, H, D, out.shape[1])
    launch(_indexer_kernel, _indexer_tuned, INDEXER_AUTOTUNE_CONFIGS,
           lambda m: (cdiv(T, m["BLOCK_T"]), cdiv(S, m["BLOCK_S"])), args, None, H=H, D=D, UNIT=unit)
    return out


def dsa_topk(scores: np.ndarray, k: int, *, prefix_len: int = 0, block_size: int = 1,
             seq_len: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Top-k columns per row of indexer scores, on the device: (indices [T, k] int32, counts [T] int32).

    Indices are in descending score order, ties to the lower column; prefix columns come first; -1 fills the
    slots past `counts[t]`. seq_len (default: columns × block_size) places the T rows at the last T positions.
    """
    if not isinstance(scores, np.ndarray) or scores.dtype != np.float32 or scores.ndim != 2:
        raise ValueError(f"scores must be a 2-D float32 array, got {getattr(scores, 'dtype', type(scores))}")
    unit = _check_unit(block_size)
    _check_topk(k, prefix_len, unit)
    T, n_cols = scores.shape
    seq_len = n_cols * unit if seq_len is None else seq_len
    if cdiv(seq_len, unit) != n_cols or seq_len < T:
        raise ValueError(f"seq_len={seq_len} does not fit {T} rows of {n_cols} columns of {unit} tokens")
    scores = np.ascontiguousarray(scores)
    idx = np.empty((T, k), np.int32)
    counts = np.empty(T, np.int32)
    _topk_kernel[(T,)](scores, idx, counts, n_cols, seq_len - T, prefix_len, k, n_cols, k,
                       UNIT=unit, KP=next_power_of_2(k))
    return idx, counts


def _attention_inputs(q, k, v, batched: bool):
    q = float_array(q, "q", ndim=3)
    k = float_array(k, "k", ndim=3 + batched)
    v = float_array(v, "v", ndim=3 + batched)
    if k.shape != v.shape or k.dtype != q.dtype or v.dtype != q.dtype:
        raise ValueError(f"k {k.dtype}{k.shape} and v {v.dtype}{v.shape} must match each other and q's dtype {q.dtype}")
    H, D = q.shape[1:]
    Hkv = k.shape[-2]
    if k.shape[-1] != D or H % Hkv:
        raise ValueError(f"q heads {H} must be a multiple of kv heads {Hkv}, and head dims must match ({D} vs "
                         f"{k.shape[-1]})")
    _check_pow2(D, "head dim")
    if D < 16:
        raise ValueError(f"head dim must be at least 16, got {D}")
    return q, k, v


def _launch_attention(q, k, v, idx, counts, lens, out, S, pos0, prefix_len, unit, scale, decode):
    H, D = q.shape[1:]
    Hkv = k.shape[-2]
    G = H // Hkv
    scale = 1.0 / math.sqrt(D) if scale is None else float(scale)
    e = q.itemsize
    kb = k.strides[0] // e if decode else 0
    vb = v.strides[0] // e if decode else 0
    args = (q, k, v, idx, counts if counts is not None else idx, lens if lens is not None else idx, out,
            S, pos0, prefix_len, idx.shape[1], scale * _LOG2E,
            q.strides[0] // e, q.strides[1] // e, kb, k.strides[-3] // e, k.strides[-2] // e,
            vb, v.strides[-3] // e, v.strides[-2] // e, idx.shape[1], out.strides[0] // e, out.strides[1] // e)
    meta = dict(G=G, GP=max(next_power_of_2(G), 1), D=D, UNIT=unit, HAS_COUNTS=counts is not None, DECODE=decode,
                PRECISION="ieee" if q.dtype == np.float32 else "tf32")
    if unit > 1:  # block-sparse: a key tile is one selected block, so the first config's warps and no tuning
        _sparse_attention_kernel[(q.shape[0], Hkv)](*args, **meta, BLOCK_N=unit,
                                                    num_warps=ATTENTION_AUTOTUNE_CONFIGS[0]["num_warps"])
    else:
        launch(_sparse_attention_kernel, _sparse_attention_tuned, ATTENTION_AUTOTUNE_CONFIGS,
               lambda m: (q.shape[0], Hkv), args, None, **meta)
    return out


def _selection(indices, counts, rows: int, name: str = "indices"):
    if not isinstance(indices, np.ndarray) or indices.dtype != np.int32 or indices.ndim != 2 or \
            indices.shape[0] != rows:
        raise ValueError(f"{name} must be an int32 array of shape [{rows}, n], got "
                         f"{getattr(indices, 'dtype', type(indices))} {getattr(indices, 'shape', '')}")
    if counts is not None and (not isinstance(counts, np.ndarray) or counts.dtype != np.int32 or
                               counts.shape != (rows,)):
        raise ValueError(f"counts must be an int32 array of shape ({rows},)")
    return np.ascontiguousarray(indices), None if counts is None else np.ascontiguousarray(counts)


def sparse_attention(q: np.ndarray, k: np.ndarray, v: np.ndarray, indices: np.ndarray, *,
                     counts: np.ndarray | None = None, block_size: int = 1, prefix_len: int = 0,
                     scale: float | None = None) -> np.ndarray:
    """Prefill attention of q [T, H, D] over k, v [S, Hkv, D], restricted to the selected tokens or blocks.

    indices [T, n] int32 hold token ids (block_size=1) or 64-token block ids (block_size=64); -1 is empty.
    Only the first counts[t] entries are read when counts is given. Invisible tokens (s > position and
    s >= prefix_len) are masked even when selected. A query with nothing selected gets zeros.
    """
    q, k, v = _attention_inputs(q, k, v, batched=False)
    unit = _check_unit(block_size)
    T, S = q.shape[0], k.shape[0]
    if T > S:
        raise ValueError(f"more queries ({T}) than keys ({S})")
    indices, counts = _selection(indices, counts, T)
    out = np.empty_like(q)
    return _launch_attention(q, k, v, indices, counts, None, out, S, S - T, prefix_len, unit, scale, False)


def dsa_prefill(q: np.ndarray, k: np.ndarray, v: np.ndarray, q_index: np.ndarray, weights: np.ndarray,
                k_index: np.ndarray, topk: int, *, prefix_len: int = 0, block_size: int = 1,
                scale: float | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Indexer → top-k → sparse attention, three kernels and no host step between them: (out, indices)."""
    scores = lightning_indexer(q_index, weights, k_index, prefix_len=prefix_len, block_size=block_size)
    indices, counts = dsa_topk(scores, topk, prefix_len=prefix_len, block_size=block_size, seq_len=k.shape[0])
    out = sparse_attention(q, k, v, indices, counts=counts, block_size=block_size, prefix_len=prefix_len,
                           scale=scale)
    return out, indices


def dsa_decode_topk(q_index: np.ndarray, weights: np.ndarray, k_index_cache: np.ndarray, seq_lens: np.ndarray,
                    topk: int, *, prefix_len: int = 0, block_size: int = 1) -> tuple[np.ndarray, np.ndarray]:
    """Decode selection, indexer and top-k in one kernel: q_index [B, H_I, d_I], weights [B, H_I],
    k_index_cache [B, S_max, d_I], seq_lens [B] (the query sits at position seq_lens[b] - 1)."""
    q_index, weights, k_index_cache = _indexer_inputs(q_index, weights, k_index_cache, batched=True)
    unit = _check_unit(block_size)
    _check_topk(topk, prefix_len, unit)
    B, H, D = q_index.shape
    lens = _lengths(seq_lens, B, k_index_cache.shape[1])
    idx = np.empty((B, topk), np.int32)
    counts = np.empty(B, np.int32)
    e = q_index.itemsize
    _decode_topk_kernel[(B,)](q_index, weights, k_index_cache, lens, idx, counts, prefix_len, topk,
                              q_index.strides[0] // e, q_index.strides[1] // e, H,
                              k_index_cache.strides[0] // e, k_index_cache.strides[1] // e, topk,
                              H=H, D=D, UNIT=unit, KP=next_power_of_2(topk), num_stages=DECODE_TOPK_STAGES)
    return idx, counts


def _lengths(seq_lens, batch: int, capacity: int) -> np.ndarray:
    if not isinstance(seq_lens, np.ndarray) or seq_lens.dtype.kind not in "iu" or seq_lens.shape != (batch,):
        raise ValueError(f"seq_lens must be an integer array of shape ({batch},)")
    if seq_lens.min() < 1 or seq_lens.max() > capacity:
        raise ValueError(f"seq_lens must be in [1, {capacity}]")
    return np.ascontiguousarray(seq_lens, dtype=np.int32)


def dsa_decode(q: np.ndarray, k_cache: np.ndarray, v_cache: np.ndarray, seq_lens: np.ndarray, q_index: np.ndarray,
               weights: np.ndarray, k_index_cache: np.ndarray, topk: int, *, prefix_len: int = 0,
               block_size: int = 1, scale: float | None = None) -> tuple[np.ndarray, np.ndarray]:
    """One new token per sequence: q [B, H, D], caches [B, S_max, Hkv, D]; returns (out [B, H, D], indices)."""
    q, k_cache, v_cache = _attention_inputs(q, k_cache, v_cache, batched=True)
    if k_cache.shape[0] != q.shape[0]:
        raise ValueError(f"caches hold {k_cache.shape[0]} sequences, q has {q.shape[0]}")
    indices, counts = dsa_decode_topk(q_index, weights, k_index_cache, seq_lens, topk, prefix_len=prefix_len,
                                      block_size=block_size)
    lens = _lengths(seq_lens, q.shape[0], k_cache.shape[1])
    out = np.empty_like(q)
    _launch_attention(q, k_cache, v_cache, indices, counts, lens, out, k_cache.shape[1], 0, prefix_len,
                      block_size, scale, True)
    return out, indices


# ----------------------------------------------------------------------------------------------- references
def _visible(positions: np.ndarray, S: int, prefix_len: int) -> np.ndarray:
    s = np.arange(S)
    return (s[None, :] <= positions[:, None]) | (s[None, :] < prefix_len)


def lightning_indexer_reference(q_index, weights, k_index, *, prefix_len=0, block_size=1) -> np.ndarray:
    q, w, kk = (np.asarray(a, np.float64) for a in (q_index, weights, k_index))
    T, S = q.shape[0], kk.shape[0]
    scores = np.einsum("tj,tjs->ts", w, np.maximum(np.einsum("tjd,sd->tjs", q, kk), 0.0))
    scores = np.where(_visible(np.arange(S - T, S), S, prefix_len), scores, -np.inf)
    if block_size > 1:
        pad = cdiv(S, block_size) * block_size - S
        scores = np.pad(scores, ((0, 0), (0, pad)), constant_values=-np.inf)
        scores = scores.reshape(T, -1, block_size).max(axis=2)
    return scores


def dsa_topk_reference(scores, k, *, prefix_len=0, block_size=1, seq_len=None) -> np.ndarray:
    """Selected columns per row in the kernel's order; -1 where fewer than k are finite and visible."""
    T, n = scores.shape
    seq_len = n * block_size if seq_len is None else seq_len
    columns = np.arange(n)
    forced = columns < cdiv(prefix_len, block_size)
    visible = np.maximum(seq_len - T + np.arange(T) + 1, prefix_len)  # per row, in positions
    extent = np.minimum((visible + block_size - 1) // block_size, n)
    rows = np.where(forced, np.inf, np.asarray(scores, np.float64))  # prefix first, in index order
    rows = np.where(columns < extent[:, None], rows, -np.inf)
    order = np.lexsort((np.broadcast_to(columns, rows.shape), -rows), axis=-1)[:, :k]
    chosen = np.take_along_axis(rows, order, axis=-1) > -np.inf
    out = np.full((T, k), -1, np.int32)
    out[:, :order.shape[1]] = np.where(chosen, order, -1)
    return out


def _selected_mask(indices, S: int, block_size: int) -> np.ndarray:
    indices = np.asarray(indices)
    positions = indices[..., None] * block_size + np.arange(block_size)  # [T, k, block_size]
    rows = np.broadcast_to(np.arange(indices.shape[0])[:, None, None], positions.shape)
    keep = (indices[..., None] >= 0) & (positions < S)
    mask = np.zeros((indices.shape[0], S), bool)
    mask[rows[keep], positions[keep]] = True
    return mask


def masked_attention_reference(q, k, v, mask, scale=None) -> np.ndarray:
    """Dense float64 attention with a [T, S] (or [B, S]) boolean mask per query; rows with nothing get zeros."""
    q, k, v = (np.asarray(a, np.float64) for a in (q, k, v))
    H, D = q.shape[-2:]
    G = H // k.shape[-2]
    scale = 1.0 / math.sqrt(D) if scale is None else scale
    kh = np.repeat(k, G, axis=-2)
    vh = np.repeat(v, G, axis=-2)
    if k.ndim == 3:
        s = np.einsum("thd,shd->ths", q, kh) * scale
    else:
        s = np.einsum("bhd,bshd->bhs", q, kh) * scale
    s = np.where(mask[:, None, :], s, -np.inf)
    m = np.max(s, axis=-1, keepdims=True)
    p = np.exp(s - np.where(np.isfinite(m), m, 0.0))
    denom = p.sum(-1, keepdims=True)
    p = p / np.where(denom == 0, 1.0, denom)
    return np.einsum("ths,shd->thd", p, vh) if k.ndim == 3 else np.einsum("bhs,bshd->bhd", p, vh)


def sparse_attention_reference(q, k, v, indices, *, block_size=1, prefix_len=0, scale=None) -> np.ndarray:
    """Dense attention restricted to the selected (and visible) tokens."""
    T, S = q.shape[0], k.shape[0]
    mask = _selected_mask(indices, S, block_size) & _visible(np.arange(S - T, S), S, prefix_len)
    return masked_attention_reference(q, k, v, mask, scale)


def dsa_decode_reference(q, k_cache, v_cache, seq_lens, indices, *, block_size=1, prefix_len=0, scale=None):
    S = k_cache.shape[1]
    mask = _selected_mask(indices, S, block_size) & _visible(np.asarray(seq_lens) - 1, S, prefix_len)
    mask &= np.arange(S)[None, :] < np.asarray(seq_lens)[:, None]
    return masked_attention_reference(q, k_cache, v_cache, mask, scale)


# ----------------------------------------------------------------------------------------------- cases
def make_inputs(rng, T, S, H, Hkv, D, HI, DI, dtype, batch=None):
    """Fresh random DSA inputs; batch=None gives prefill shapes, else decode caches of S slots per sequence."""
    lead = () if batch is None else (batch,)
    rows = (T,) if batch is None else (batch,)
    return dict(q=random_array(rng, rows + (H, D), dtype), k=random_array(rng, lead + (S, Hkv, D), dtype),
                v=random_array(rng, lead + (S, Hkv, D), dtype),
                q_index=random_array(rng, rows + (HI, DI), np.float32),
                weights=(rng.standard_normal(rows + (HI,)) / math.sqrt(HI)).astype(np.float32),
                k_index=random_array(rng, lead + (S, DI), np.float32))


@register
def _cases():
    rng = np.random.default_rng(6)
    # Qwen3.5-like attention heads (16 query / 2 KV, head dim 256 reduced to 128 for the case budget),
    # DeepSeek-V3.2's indexer (64 heads of 128) at reduced tokens and k.
    for T, S, k, unit, prefix, dtype in ((96, 96, 32, 1, 8, np.float16), (150, 150, 2, 64, 64, BF16)):
        a = make_inputs(rng, T, S, 16, 2, 128, 64, 128, dtype)
        tol = 8e-3 if dtype == BF16 else 1e-3  # two half-ulps of the output (measured 1.9e-3, 3.5e-4)

        def run(a=a, k=k, unit=unit, prefix=prefix):
            return dsa_prefill(a["q"], a["k"], a["v"], a["q_index"], a["weights"], a["k_index"], k,
                               prefix_len=prefix, block_size=unit)[0]

        def ref(a=a, k=k, unit=unit, prefix=prefix):
            scores = lightning_indexer_reference(a["q_index"], a["weights"], a["k_index"], prefix_len=prefix,
                                                 block_size=unit)
            idx = dsa_topk_reference(scores, k, prefix_len=prefix, block_size=unit)
            return sparse_attention_reference(a["q"], a["k"], a["v"], idx, block_size=unit, prefix_len=prefix)

        name = "dsa.prefill" if unit == 1 else "dsa.prefill_blocks"
        dense = T * (T + 1) / 2
        chosen = sum(min(t + 1, k * unit) for t in range(T))
        yield Case(name, f"T={T} H=16/2 D=128 HI=64 k={k}x{unit} P={prefix}", dtype_name(dtype), run, ref,
                   rtol=tol, atol=tol, notes={"dense_flop_frac": f"{chosen / dense:.2f}"},
                   min_bytes=sum(x.nbytes for x in a.values()) + a["q"].nbytes)
    B, S, k = 3, 300, 64
    a = make_inputs(rng, None, S, 16, 2, 128, 64, 128, np.float16, batch=B)
    lens = np.array([300, 77, 150], np.int32)

    def run_decode():
        return dsa_decode(a["q"], a["k"], a["v"], lens, a["q_index"], a["weights"], a["k_index"], k)[0]

    def ref_decode():
        idx = np.concatenate([dsa_topk_reference(lightning_indexer_reference(
            a["q_index"][b:b + 1], a["weights"][b:b + 1], a["k_index"][b, :lens[b]]), k) for b in range(B)])
        return dsa_decode_reference(a["q"], a["k"], a["v"], lens, idx)

    selected = sum(min(int(n), k) for n in lens)
    # the indexer reads every cached index key; attention reads only the selected tokens' K and V rows
    read = (int(lens.sum()) * a["k_index"].shape[-1] * 4 + selected * 2 * a["k"][0, 0].nbytes +
            a["q"].nbytes + a["q_index"].nbytes + a["weights"].nbytes)
    yield Case("dsa.decode", f"B={B} S<={S} H=16/2 D=128 HI=64 k={k}", "fp16", run_decode, ref_decode,
               rtol=1e-3, atol=1e-3, min_bytes=read + a["q"].nbytes,
               notes={"kv_frac_read": f"{selected / lens.sum():.2f}"})
