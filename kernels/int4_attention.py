"""Attention with an INT4 Q·Kᵀ (SageAttention2-style, research/qwen35.md §6.2-6.3): Q and K quantised per block
of tokens to symmetric INT4, the scores an integer dot dequantised by the two block scales, then part 1's
scale-aware softmax (kernels.int4_softmax) and P·V in fp16 (bf16 inputs: bf16) with fp32 accumulation.

Quantisation (both paths; one scale per head and block of q_block / k_block tokens, δ = max|x|/7, codes
round-half-away(x/δ) in [-7, 7], two a byte, low nibble = even channel):
* Q is pre-multiplied by sm_scale, so the scores are logits in natural-log units: int4_softmax uses exp;
* K is smoothed first: `K - mean_tokens(K)` per KV head. That adds `q·mean` to every score of a query row, which
  softmax ignores, and it removes the channel outliers that would otherwise spend the 4 bits.

Default path, per chunk of query rows (all heads at once):
1. `_qk_kernel`: int32 scores = Q codes · K codesᵀ (tl.dot, out_dtype=int32), and per (row, key block) the fp32
   scale dq(row's block) · dk(key block). The product, not the two factors, is what the softmax gets: its input
   format already has one scale per row and group, the product costs 1/k_block of the scores, and it is the very
   fp32 factor the fused kernel multiplies by, so both paths form bit-identical fp32 logits.
2. `int4_softmax` on the int32 scores (groups = key blocks, no zero points; causal = per-row lengths, query t
   sees keys 0 .. S-T+t): row max from the integer max of each group times its scale, before any exponential;
   probabilities in V's dtype (fp16; bf16 for bf16 inputs, as the fused path and an MMA with bf16 V need).
3. `_pv_kernel`: P·V, fp16/bf16 tiles with fp32 accumulation, key blocks past the diagonal skipped.
Memory: a chunk of c query tokens holds H·c·S int32 scores and fp16/bf16 probabilities (6 bytes each) plus
H·c·ceil(S/k_block) fp32 scales (2/(3·k_block) of that). By default c is the largest multiple of BLOCK_M (or,
below BLOCK_M, any count >= 1) with H·c·S <= SCORE_BUDGET = 2^22, so scores and probabilities take at most 24 MiB,
unless one query token over all heads needs more (then 6·H·S bytes); `chunk_rows` sets c.

Fused path (`fused=True`): one flash kernel per block of queries that never materialises scores: the same
integer dot and fp32 logits, its own fp32 online softmax (exp), P in V's dtype for P·V.

Accuracy: against a float64 reference that dequantises the same codes (`int4_scores_attention_reference`), both
paths are within TOLERANCE: 2e-3 for fp16, 1e-2 for bf16, relative plus absolute (P and the output are rounded to
that dtype; measured 6e-4 and 4.1e-3). The quantisation error itself, against fp32 attention on the unquantised
inputs, is what the registered cases report in their `err_vs_fp32` notes (random inputs, and inputs with K channel
outliers and Q token outliers); it is the same for both paths.
"""

from __future__ import annotations

import math

import numpy as np

import dsl as tl
from jit import cdiv, jit
from kernels._common import BF16, dtype_name, float_array, random_array
from kernels.int4_softmax import int4_softmax
from kernels.registry import Case, register

# max |out - int4_scores_attention_reference| per input dtype: P and the output are rounded to it once each
# (fp16 2^-11, bf16 2^-9 relative), times sum(p·|v|) of a few units for normal V.
TOLERANCE = {np.dtype(np.float16): 2e-3, BF16: 1e-2}
SCORE_BUDGET = 1 << 22  # scores per chunk of query rows in the default path (module docstring)

# First entry is the default. BLOCK_M / BLOCK_N: the tiles of every kernel here, and the default Q / K
# quantisation blocks (one scale per block).
AUTOTUNE_CONFIGS = [
    {"BLOCK_M": 64, "BLOCK_N": 64, "num_warps": 4},
    {"BLOCK_M": 128, "BLOCK_N": 64, "num_warps": 8},
    {"BLOCK_M": 32, "BLOCK_N": 32, "num_warps": 4},
]


# ----------------------------------------------------------------------------------------------- kernels
@jit
def _unpack_int4(packed):
    """[R, D/2] bytes → [R, D] int8 codes (low nibble first, sign-extended)."""
    low = (packed << 4) >> 4
    high = packed >> 4
    return tl.interleave(low, high)


@jit(do_not_specialize=("n_tokens", "stride_t", "stride_h"))
def _mean_kernel(x_ptr, mean_ptr, n_tokens, stride_t, stride_h, D: tl.constexpr, BLOCK: tl.constexpr):
    """mean over tokens of one head, fp32."""
    h = tl.program_id(0)
    d = tl.arange(0, D)
    acc = tl.zeros((D,), tl.float32)
    for t0 in range(0, n_tokens, BLOCK):
        t = t0 + tl.arange(0, BLOCK)
        x = tl.load(x_ptr + t[:, None] * stride_t + h * stride_h + d[None, :], mask=(t < n_tokens)[:, None],
                    other=0.0)
        acc += tl.sum(x.to(tl.float32), axis=0)
    tl.store(mean_ptr + h * D + d, acc / n_tokens)


@jit(do_not_specialize=("n_tokens", "n_heads", "n_blocks", "stride_t", "stride_h"))
def _quantize_kernel(x_ptr, mean_ptr, codes_ptr, scales_ptr, n_tokens, n_heads, n_blocks, pre_scale,
                     stride_t, stride_h, D: tl.constexpr, BLOCK: tl.constexpr):
    """Codes and scale of one (head, token block): δ = max|x'|/7, code = round_half_away(x'/δ), x' = (x-mean)·s."""
    h = tl.program_id(0)
    blk = tl.program_id(1)
    t = blk * BLOCK + tl.arange(0, BLOCK)
    d = tl.arange(0, D)
    ok = (t < n_tokens)[:, None]
    x = tl.load(x_ptr + t[:, None] * stride_t + h * stride_h + d[None, :], mask=ok, other=0.0).to(tl.float32)
    mean = tl.load(mean_ptr + h * D + d)
    x = tl.where(ok, (x - mean[None, :]) * pre_scale, 0.0)
    amax = tl.max(tl.max(tl.abs(x), axis=1), axis=0)
    delta = tl.where(amax > 0.0, amax / 7.0, 1.0)
    v = x / delta
    code = tl.minimum(tl.maximum((v + tl.where(v >= 0.0, 0.5, -0.5)).to(tl.int32), -7), 7).to(tl.int8)
    even, odd = tl.split(tl.reshape(code, (BLOCK, D // 2, 2)))
    packed = (even & 0xF) | (odd << 4)
    j = tl.arange(0, D // 2)
    tl.store(codes_ptr + t[:, None] * (n_heads * (D // 2)) + h * (D // 2) + j[None, :], packed, mask=ok)
    tl.store(scales_ptr + h * n_blocks + blk, delta)


@jit(do_not_specialize=("t0", "n_rows", "T", "S", "n_qblocks", "n_kblocks"))
def _qk_kernel(qc_ptr, qs_ptr, kc_ptr, ks_ptr, scores_ptr, scales_ptr, t0, n_rows, T, S, n_qblocks, n_kblocks,
               H: tl.constexpr, G: tl.constexpr, D: tl.constexpr, CAUSAL: tl.constexpr, Q_GROUP: tl.constexpr,
               K_GROUP: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    """int32 scores of BLOCK_M query rows (of the chunk starting at query t0) x BLOCK_N keys of one head, and the
    scales of those rows' key groups. Row h * n_rows + r of both buffers is query t0 + r of head h."""
    mb = tl.program_id(0)
    nb = tl.program_id(1)
    h = tl.program_id(2)
    if CAUSAL:
        if nb * BLOCK_N > S - T + t0 + (mb + 1) * BLOCK_M - 1:
            return  # every key of this tile is past the diagonal: the softmax never reads it
    kv_head = h // G
    r = mb * BLOCK_M + tl.arange(0, BLOCK_M)
    t = t0 + r
    rows_ok = r < n_rows
    row_ids = (h * n_rows + r).to(tl.int64)
    j = tl.arange(0, D // 2)
    q = _unpack_int4(tl.load(qc_ptr + t[:, None] * (H * (D // 2)) + h * (D // 2) + j[None, :],
                             mask=rows_ok[:, None], other=0))
    cols = nb * BLOCK_N + tl.arange(0, BLOCK_N)
    k = _unpack_int4(tl.load(kc_ptr + cols[:, None] * (H // G * (D // 2)) + kv_head * (D // 2) + j[None, :],
                             mask=(cols < S)[:, None], other=0))
    scores = tl.dot(q, tl.trans(k), out_dtype=tl.int32)
    tl.store(scores_ptr + row_ids[:, None] * S + cols[None, :], scores, mask=rows_ok[:, None] & (cols < S)[None, :])
    g = nb * (BLOCK_N // K_GROUP) + tl.arange(0, BLOCK_N // K_GROUP)
    q_scale = tl.load(qs_ptr + h * n_qblocks + t // Q_GROUP, mask=rows_ok, other=0.0)
    k_scale = tl.load(ks_ptr + kv_head * n_kblocks + g, mask=g < n_kblocks, other=0.0)
    tl.store(scales_ptr + row_ids[:, None] * n_kblocks + g[None, :], q_scale[:, None] * k_scale[None, :],
             mask=rows_ok[:, None] & (g < n_kblocks)[None, :])


@jit(do_not_specialize=("t0", "n_rows", "T", "S", "stride_vs", "stride_vh", "stride_ot", "stride_oh"))
def _pv_kernel(p_ptr, v_ptr, out_ptr, t0, n_rows, T, S, stride_vs, stride_vh, stride_ot, stride_oh,
               G: tl.constexpr, D: tl.constexpr, CAUSAL: tl.constexpr, BLOCK_M: tl.constexpr,
               BLOCK_N: tl.constexpr):
    """out = P·V for BLOCK_M query rows of one head; P [H * n_rows, S] in V's dtype, fp32 accumulation."""
    mb = tl.program_id(0)
    h = tl.program_id(1)
    r = mb * BLOCK_M + tl.arange(0, BLOCK_M)
    rows_ok = r < n_rows
    d = tl.arange(0, D)
    p_rows = p_ptr + (h * n_rows + r).to(tl.int64)[:, None] * S
    end = S
    if CAUSAL:
        end = tl.minimum(S, S - T + t0 + (mb + 1) * BLOCK_M)  # P is 0 past the diagonal
    acc = tl.zeros((BLOCK_M, D), tl.float32)
    for n0 in range(0, end, BLOCK_N):
        cols = n0 + tl.arange(0, BLOCK_N)
        p = tl.load(p_rows + cols[None, :], mask=rows_ok[:, None] & (cols < S)[None, :], other=0.0)
        v = tl.load(v_ptr + cols[:, None] * stride_vs + (h // G) * stride_vh + d[None, :],
                    mask=(cols < S)[:, None], other=0.0)
        acc += tl.dot(p, v)
    tl.store(out_ptr + (t0 + r)[:, None] * stride_ot + h * stride_oh + d[None, :], acc.to(out_ptr.dtype.element_ty),
             mask=rows_ok[:, None])


@jit(do_not_specialize=("T", "S", "n_qblocks", "n_kblocks", "stride_vs", "stride_vh", "stride_ot", "stride_oh"))
def _int4_attention_kernel(qc_ptr, qs_ptr, kc_ptr, ks_ptr, v_ptr, out_ptr, T, S, n_qblocks, n_kblocks,
                           stride_vs, stride_vh, stride_ot, stride_oh,
                           H: tl.constexpr, G: tl.constexpr, D: tl.constexpr, CAUSAL: tl.constexpr,
                           Q_GROUP: tl.constexpr, K_GROUP: tl.constexpr,
                           BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    """The fused path: one block of BLOCK_M queries of one head, an fp32 online softmax over key blocks, no score
    buffer. Queries sit at the last T of S positions; one scale per Q_GROUP queries and per K_GROUP keys."""
    mb = tl.program_id(0)
    h = tl.program_id(1)
    kv_head = h // G
    rows = mb * BLOCK_M + tl.arange(0, BLOCK_M)
    j = tl.arange(0, D // 2)
    d = tl.arange(0, D)
    q = _unpack_int4(tl.load(qc_ptr + rows[:, None] * (H * (D // 2)) + h * (D // 2) + j[None, :],
                             mask=(rows < T)[:, None], other=0))
    q_scale = tl.load(qs_ptr + h * n_qblocks + rows // Q_GROUP, mask=rows < T, other=0.0)
    positions = S - T + rows
    end = S
    if CAUSAL:
        end = tl.minimum(S, S - T + (mb + 1) * BLOCK_M)  # key blocks past the diagonal are skipped
    m_i = tl.full((BLOCK_M,), float("-inf"), tl.float32)
    l_i = tl.zeros((BLOCK_M,), tl.float32)
    acc = tl.zeros((BLOCK_M, D), tl.float32)
    for n0 in range(0, end, BLOCK_N):
        cols = n0 + tl.arange(0, BLOCK_N)
        k = _unpack_int4(tl.load(kc_ptr + cols[:, None] * (H // G * (D // 2)) + kv_head * (D // 2) + j[None, :],
                                 mask=(cols < S)[:, None], other=0))
        k_scale = tl.load(ks_ptr + kv_head * n_kblocks + cols // K_GROUP, mask=cols < S, other=0.0)
        s = tl.dot(q, tl.trans(k), out_dtype=tl.int32).to(tl.float32) * (q_scale[:, None] * k_scale[None, :])
        visible = (cols < S)[None, :]
        if CAUSAL:
            visible = visible & (cols[None, :] <= positions[:, None])
        s = tl.where(visible, s, float("-inf"))
        m_new = tl.maximum(m_i, tl.max(s, axis=1))
        m_safe = tl.where(m_new == float("-inf"), 0.0, m_new)
        p = tl.exp(s - m_safe[:, None])
        alpha = tl.exp(m_i - m_safe)
        l_i = l_i * alpha + tl.sum(p, axis=1)
        v = tl.load(v_ptr + cols[:, None] * stride_vs + kv_head * stride_vh + d[None, :], mask=(cols < S)[:, None],
                    other=0.0)
        acc = acc * alpha[:, None] + tl.dot(p.to(v.dtype), v)
        m_i = m_new
    out = acc / tl.where(l_i == 0.0, 1.0, l_i)[:, None]
    tl.store(out_ptr + rows[:, None] * stride_ot + h * stride_oh + d[None, :], out.to(out_ptr.dtype.element_ty),
             mask=(rows < T)[:, None])


# ----------------------------------------------------------------------------------------------- host side
def _check(q, k, v):
    q = float_array(q, "q", ndim=3)
    k = float_array(k, "k", ndim=3)
    v = float_array(v, "v", ndim=3)
    if q.dtype == np.float32 or k.dtype != q.dtype or v.dtype != q.dtype:
        raise ValueError(f"q, k, v must all be float16 or all bfloat16 (P·V runs in that dtype), got "
                         f"{q.dtype}, {k.dtype}, {v.dtype}")
    (T, H, D), (S, Hkv, Dk) = q.shape, k.shape
    if v.shape != k.shape or Dk != D or H % Hkv:
        raise ValueError(f"need q [T, H, D], k and v [S, Hkv, D] with Hkv dividing H; got {q.shape}, {k.shape}, "
                         f"{v.shape}")
    if D < 16 or D & (D - 1):
        raise ValueError(f"head dim must be a power of two >= 16, got {D}")
    if T > S:
        raise ValueError(f"more queries ({T}) than keys ({S})")
    return q, k, v


def quantize_int4_blocks(x: np.ndarray, block: int, *, pre_scale: float = 1.0, smooth: bool = False
                         ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """x [N, heads, D] → (codes [N, heads, D/2] int8 packed, scales [heads, ceil(N/block)] fp32, mean [heads, D]).

    With smooth, the per-head token mean is subtracted first (and returned); otherwise mean is zeros.
    """
    x = float_array(x, "x", ndim=3)
    N, heads, D = x.shape
    if D < 16 or D & (D - 1) or block < 1 or block & (block - 1):
        raise ValueError(f"head dim must be a power of two >= 16 and block a power of two, got {D}, {block}")
    e = x.itemsize
    mean = np.zeros((heads, D), np.float32)
    if smooth:
        _mean_kernel[(heads,)](x, mean, N, x.strides[0] // e, x.strides[1] // e, D=D, BLOCK=64)
    n_blocks = cdiv(N, block)
    codes = np.empty((N, heads, D // 2), np.int8)
    scales = np.empty((heads, n_blocks), np.float32)
    _quantize_kernel[(heads, n_blocks)](x, mean, codes, scales, N, heads, n_blocks, float(pre_scale),
                                        x.strides[0] // e, x.strides[1] // e, D=D, BLOCK=block)
    return codes, scales, mean


def int4_attention(q: np.ndarray, k: np.ndarray, v: np.ndarray, *, causal: bool = True, scale: float | None = None,
                   q_block: int | None = None, k_block: int | None = None, config: dict | None = None,
                   fused: bool = False, chunk_rows: int | None = None) -> np.ndarray:
    """softmax(Q·Kᵀ·scale)·V with Q and K in INT4 (per-block scales, K smoothed); q [T, H, D], k/v [S, Hkv, D].

    q_block / k_block: tokens per quantisation scale (default: the tile, BLOCK_M / BLOCK_N); powers of two that
    divide the tile. Smaller blocks cost more scales and lose less to one outlier token.
    fused: the flash kernel instead of scores -> int4_softmax -> P·V (module docstring).
    chunk_rows: query tokens per chunk of the default path (default: from SCORE_BUDGET).
    """
    q, k, v = _check(q, k, v)
    cfg = config or AUTOTUNE_CONFIGS[0]
    (T, H, D), (S, Hkv, _) = q.shape, k.shape
    block_m, block_n = cfg["BLOCK_M"], cfg["BLOCK_N"]
    q_block = block_m if q_block is None else q_block
    k_block = block_n if k_block is None else k_block
    for blk, tile, name in ((q_block, block_m, "q_block"), (k_block, block_n, "k_block")):
        if blk < 1 or blk & (blk - 1) or tile % blk:
            raise ValueError(f"{name} must be a power of two dividing the tile ({tile}), got {blk}")
    if chunk_rows is not None and chunk_rows < 1:
        raise ValueError(f"chunk_rows must be >= 1, got {chunk_rows}")
    scale = 1.0 / math.sqrt(D) if scale is None else float(scale)
    q_codes, q_scales, _ = quantize_int4_blocks(q, q_block, pre_scale=scale)
    k_codes, k_scales, _ = quantize_int4_blocks(k, k_block, smooth=True)
    n_qblocks, n_kblocks = q_scales.shape[1], k_scales.shape[1]
    out = np.empty_like(q)
    e = v.itemsize
    strides = (v.strides[0] // e, v.strides[1] // e, out.strides[0] // e, out.strides[1] // e)
    tiles = {"CAUSAL": bool(causal), "BLOCK_M": block_m, "BLOCK_N": block_n, "num_warps": cfg["num_warps"]}
    if fused:
        _int4_attention_kernel[(cdiv(T, block_m), H)](
            q_codes, q_scales, k_codes, k_scales, v, out, T, S, n_qblocks, n_kblocks, *strides,
            H=H, G=H // Hkv, D=D, Q_GROUP=q_block, K_GROUP=k_block, **tiles)
        return out
    chunk = min(T, chunk_rows or _default_chunk(H, S, block_m))
    for t0 in range(0, T, chunk):
        n = min(chunk, T - t0)
        scores = np.empty((H * n, S), np.int32)
        scales = np.empty((H * n, n_kblocks), np.float32)
        _qk_kernel[(cdiv(n, block_m), cdiv(S, block_n), H)](
            q_codes, q_scales, k_codes, k_scales, scores, scales, t0, n, T, S, n_qblocks, n_kblocks,
            H=H, G=H // Hkv, D=D, Q_GROUP=q_block, K_GROUP=k_block, **tiles)
        lengths = np.tile(np.arange(S - T + t0 + 1, S - T + t0 + n + 1, dtype=np.int32), H) if causal else None
        probs = int4_softmax(scores, scales, None, S, k_block, out_dtype=v.dtype, lengths=lengths)
        _pv_kernel[(cdiv(n, block_m), H)](probs, v, out, t0, n, T, S, *strides, G=H // Hkv, D=D, **tiles)
    return out


def _default_chunk(H: int, S: int, block_m: int) -> int:
    """Query tokens per chunk: H·chunk·S <= SCORE_BUDGET, a multiple of the tile when at least one tile fits."""
    rows = max(1, SCORE_BUDGET // (H * S))
    return rows - rows % block_m if rows >= block_m else rows


# ----------------------------------------------------------------------------------------------- references
def quantize_int4_blocks_reference(x, block, *, pre_scale=1.0, mean=None):
    """Unpacked codes [N, heads, D] int8 and scales, with the kernel's fp32 arithmetic and rounding."""
    x32 = np.asarray(x, np.float32)
    N, heads, D = x32.shape
    if mean is not None:
        x32 = x32 - np.asarray(mean, np.float32)[None]
    x32 = x32 * np.float32(pre_scale)
    n_blocks = cdiv(N, block)
    codes = np.empty(x32.shape, np.int8)
    scales = np.empty((heads, n_blocks), np.float32)
    for b in range(n_blocks):
        xb = x32[b * block:(b + 1) * block]
        amax = np.abs(xb).max(axis=(0, 2))
        delta = np.where(amax > 0, amax / np.float32(7), np.float32(1)).astype(np.float32)
        vb = xb / delta[None, :, None]
        codes[b * block:(b + 1) * block] = np.clip(np.trunc(vb + np.where(vb >= 0, 0.5, -0.5).astype(np.float32)),
                                                   -7, 7)
        scales[:, b] = delta
    return codes, scales


def unpack_codes(packed: np.ndarray) -> np.ndarray:
    """[.., D/2] packed bytes → [.., D] int8 codes (low nibble = even channel)."""
    p = packed.astype(np.int8)
    low = ((p << 4).astype(np.int8) >> 4).astype(np.int8)
    high = (p >> 4).astype(np.int8)
    return np.stack([low, high], axis=-1).reshape(*p.shape[:-1], p.shape[-1] * 2)


def int4_scores_attention_reference(q_codes, q_scales, k_codes, k_scales, v, *, causal, block_m, block_n):
    """float64 attention from given INT4 codes (scores already scaled, natural-log units): the math of both paths,
    before P is rounded to fp16/bf16 and the output to the input dtype."""
    qc, kc = unpack_codes(q_codes).astype(np.float64), unpack_codes(k_codes).astype(np.float64)
    T, H, D = qc.shape
    S, Hkv, _ = kc.shape
    G = H // Hkv
    qd = qc * np.repeat(q_scales, block_m, axis=1)[:, :T].T[:, :, None]
    kd = kc * np.repeat(k_scales, block_n, axis=1)[:, :S].T[:, :, None]
    s = np.einsum("thd,shd->hts", qd, np.repeat(kd, G, axis=1))
    if causal:
        s = np.where(np.arange(S)[None, :] <= np.arange(S - T, S)[:, None], s, -np.inf)
    p = np.exp(s - s.max(axis=-1, keepdims=True))
    p /= p.sum(axis=-1, keepdims=True)
    return np.einsum("hts,shd->thd", p, np.repeat(np.asarray(v, np.float64), G, axis=1))


def int4_attention_reference(q, k, v, *, causal=True, scale=None, block_m=64, block_n=64):
    """numpy quantisation (float64 token mean) followed by the exact dequantised attention."""
    D = q.shape[2]
    scale = 1.0 / math.sqrt(D) if scale is None else scale
    qc, qs = quantize_int4_blocks_reference(q, block_m, pre_scale=scale)
    mean = np.asarray(k, np.float64).mean(axis=0).astype(np.float32)
    kc, ks = quantize_int4_blocks_reference(k, block_n, mean=mean)
    pack = lambda c: ((c[..., 0::2] & 0xF) | (c[..., 1::2] << 4)).astype(np.int8)  # noqa: E731
    return int4_scores_attention_reference(pack(qc), qs, pack(kc), ks, v, causal=causal, block_m=block_m,
                                           block_n=block_n)


def attention_fp32_reference(q, k, v, *, causal=True, scale=None):
    """Unquantised float64 attention, to measure what INT4 Q·Kᵀ costs."""
    q, k, v = (np.asarray(a, np.float64) for a in (q, k, v))
    (T, H, D), (S, Hkv, _) = q.shape, k.shape
    scale = 1.0 / math.sqrt(D) if scale is None else scale
    s = np.einsum("thd,shd->hts", q, np.repeat(k, H // Hkv, axis=1)) * scale
    if causal:
        s = np.where(np.arange(S)[None, :] <= np.arange(S - T, S)[:, None], s, -np.inf)
    p = np.exp(s - s.max(axis=-1, keepdims=True))
    p /= p.sum(axis=-1, keepdims=True)
    return np.einsum("hts,shd->thd", p, np.repeat(v, H // Hkv, axis=1))


def make_inputs(rng, T, S, H, Hkv, D, dtype, outliers: bool = False):
    """Random q, k, v; with outliers, K gets large per-channel offsets and a few Q tokens are scaled up 8x."""
    q = rng.standard_normal((T, H, D))
    k = rng.standard_normal((S, Hkv, D))
    if outliers:
        k += rng.standard_normal((1, Hkv, D)) * 3 + np.where(rng.random((1, Hkv, D)) < 0.05, 20.0, 0.0)
        q[rng.random(T) < 0.1] *= 8
    return q.astype(dtype), k.astype(dtype), random_array(rng, (S, Hkv, D), dtype)


def error_vs_fp32(out, q, k, v, causal=True) -> str:
    """max |out - fp32 attention|, the relative L2 error and the cosine similarity (SageAttention's metric)."""
    ref = attention_fp32_reference(q, k, v, causal=causal)
    got = np.asarray(out, np.float64)
    diff = got - ref
    cos = float(np.sum(got * ref) / (np.linalg.norm(got) * np.linalg.norm(ref)))
    return f"max={np.abs(diff).max():.1e},rel_l2={np.linalg.norm(diff) / np.linalg.norm(ref):.1e},cos={cos:.4f}"


@register
def _cases():
    rng = np.random.default_rng(5)
    # Qwen3.5 full-attention heads (16 query / 2 KV, head dim 256) at a reduced, odd token count; quantisation
    # blocks of the whole 64-token tile and of 16 tokens, on random and on outlier-heavy inputs; the default path
    # (scores -> int4_softmax -> P·V), and the fused flash kernel once.
    shapes = [(200, 256, np.float16, outliers, block, False) for block in (64, 16) for outliers in (False, True)]
    for T, D, dtype, outliers, block, fused in shapes + [(77, 128, BF16, True, 16, False),
                                                         (200, 256, np.float16, True, 16, True)]:
        q, k, v = make_inputs(rng, T, T, 16, 2, D, dtype, outliers)
        notes: dict = {}

        def run(q=q, k=k, v=v, block=block, fused=fused, notes=notes):
            out = int4_attention(q, k, v, causal=True, q_block=block, k_block=block, fused=fused)
            if not notes:  # first run: what the INT4 scores cost against unquantised attention
                notes["err_vs_fp32"] = error_vs_fp32(out, q, k, v)
            return out

        def ref(q=q, k=k, v=v, block=block):
            return int4_attention_reference(q, k, v, block_m=block, block_n=block)

        tol = TOLERANCE[np.dtype(dtype)]
        op = "int4_attention" + (".fused" if fused else "") + ".causal" + (".outliers" if outliers else "")
        yield Case(op, f"T={T} H=16/2 D={D} qk_block={block}", dtype_name(dtype), run, ref, rtol=tol, atol=tol,
                   notes=notes, min_bytes=2 * q.nbytes + k.nbytes + v.nbytes)
