"""Attention with an INT4 Q·Kᵀ (SageAttention2-style, research/qwen35.md §6.2-6.3): Q and K are quantised per
block of tokens to symmetric INT4 codes, the scores are an integer dot, dequantised by the two block scales,
then an fp32 online softmax (exp2) and P·V in fp16 (bf16 inputs: bf16).

Quantisation (one scale per head and block of BLOCK tokens, round half away from zero, codes in [-7, 7], two codes
a byte, low nibble = even channel):
* Q is pre-multiplied by `sm_scale · log2(e)` so the scores come out in the exp2 domain;
* K is smoothed first: `K - mean_tokens(K)` per KV head. That adds `q·mean` to every score of a query row, which
  softmax ignores, and it removes the channel outliers that would otherwise spend the 4 bits.

Softmax: part 1's scale-aware INT4 softmax takes INT4 logit codes with group scales along a whole row; a fused
flash kernel sees one key block at a time and holds fp32 scores, so this module uses its own fp32 online softmax.

Accuracy: against a float64 reference that dequantises the same codes, the fp16 output is within ~2e-3 (P is
rounded to fp16 before P·V). The quantisation error itself, against fp32 attention on the unquantised inputs, is
what the benchmark reports in its notes (random inputs, and inputs with K channel outliers and Q token outliers).
"""

from __future__ import annotations

import math

import numpy as np

import dsl as tl
from jit import cdiv, jit
from kernels._common import BF16, dtype_name, float_array, random_array
from kernels.registry import Case, register

_LOG2E = 1.4426950408889634

# First entry is the default. BLOCK_M / BLOCK_N are also the Q / K quantisation blocks (one scale per block).
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


@jit(do_not_specialize=("T", "S", "n_qblocks", "n_kblocks", "stride_vs", "stride_vh", "stride_ot", "stride_oh"))
def _int4_attention_kernel(qc_ptr, qs_ptr, kc_ptr, ks_ptr, v_ptr, out_ptr, T, S, n_qblocks, n_kblocks,
                           stride_vs, stride_vh, stride_ot, stride_oh,
                           H: tl.constexpr, G: tl.constexpr, D: tl.constexpr, CAUSAL: tl.constexpr,
                           Q_GROUP: tl.constexpr, K_GROUP: tl.constexpr,
                           BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    """One block of BLOCK_M queries of one head; queries sit at the last T of S positions.

    One scale per Q_GROUP queries and per K_GROUP keys (the quantisation blocks, dividing the tiles)."""
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
        p = tl.exp2(s - m_safe[:, None])
        alpha = tl.exp2(m_i - m_safe)
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
                   q_block: int | None = None, k_block: int | None = None, config: dict | None = None) -> np.ndarray:
    """softmax(Q·Kᵀ·scale)·V with Q and K in INT4 (per-block scales, K smoothed); q [T, H, D], k/v [S, Hkv, D].

    q_block / k_block: tokens per quantisation scale (default: the tile, BLOCK_M / BLOCK_N); powers of two that
    divide the tile. Smaller blocks cost more scales and lose less to one outlier token.
    """
    q, k, v = _check(q, k, v)
    cfg = config or AUTOTUNE_CONFIGS[0]
    (T, H, D), (S, Hkv, _) = q.shape, k.shape
    q_block = cfg["BLOCK_M"] if q_block is None else q_block
    k_block = cfg["BLOCK_N"] if k_block is None else k_block
    for blk, tile, name in ((q_block, cfg["BLOCK_M"], "q_block"), (k_block, cfg["BLOCK_N"], "k_block")):
        if blk < 1 or blk & (blk - 1) or tile % blk:
            raise ValueError(f"{name} must be a power of two dividing the tile ({tile}), got {blk}")
    scale = 1.0 / math.sqrt(D) if scale is None else float(scale)
    q_codes, q_scales, _ = quantize_int4_blocks(q, q_block, pre_scale=scale * _LOG2E)
    k_codes, k_scales, _ = quantize_int4_blocks(k, k_block, smooth=True)
    out = np.empty_like(q)
    e = v.itemsize
    _int4_attention_kernel[(cdiv(T, cfg["BLOCK_M"]), H)](
        q_codes, q_scales, k_codes, k_scales, v, out, T, S, q_scales.shape[1], k_scales.shape[1],
        v.strides[0] // e, v.strides[1] // e, out.strides[0] // e, out.strides[1] // e,
        H=H, G=H // Hkv, D=D, CAUSAL=bool(causal), Q_GROUP=q_block, K_GROUP=k_block,
        BLOCK_M=cfg["BLOCK_M"], BLOCK_N=cfg["BLOCK_N"],
        num_warps=cfg["num_warps"])
    return out


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
    """float64 attention from given INT4 codes (scores already in log2 units): the kernel's math, exactly."""
    qc, kc = unpack_codes(q_codes).astype(np.float64), unpack_codes(k_codes).astype(np.float64)
    T, H, D = qc.shape
    S, Hkv, _ = kc.shape
    G = H // Hkv
    qd = qc * np.repeat(q_scales, block_m, axis=1)[:, :T].T[:, :, None]
    kd = kc * np.repeat(k_scales, block_n, axis=1)[:, :S].T[:, :, None]
    s = np.einsum("thd,shd->hts", qd, np.repeat(kd, G, axis=1))
    if causal:
        s = np.where(np.arange(S)[None, :] <= np.arange(S - T, S)[:, None], s, -np.inf)
    p = np.exp2(s - s.max(axis=-1, keepdims=True))
    p /= p.sum(axis=-1, keepdims=True)
    return np.einsum("hts,shd->thd", p, np.repeat(np.asarray(v, np.float64), G, axis=1))


def int4_attention_reference(q, k, v, *, causal=True, scale=None, block_m=64, block_n=64):
    """numpy quantisation (float64 token mean) followed by the exact dequantised attention."""
    D = q.shape[2]
    scale = 1.0 / math.sqrt(D) if scale is None else scale
    qc, qs = quantize_int4_blocks_reference(q, block_m, pre_scale=scale * _LOG2E)
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
    # blocks of the whole 64-token tile and of 16 tokens, on random and on outlier-heavy inputs.
    shapes = [(200, 256, np.float16, outliers, block) for block in (64, 16) for outliers in (False, True)]
    for T, D, dtype, outliers, block in shapes + [(77, 128, BF16, True, 16)]:
        q, k, v = make_inputs(rng, T, T, 16, 2, D, dtype, outliers)
        notes: dict = {}

        def run(q=q, k=k, v=v, block=block, notes=notes):
            out = int4_attention(q, k, v, causal=True, q_block=block, k_block=block)
            if not notes:  # first run: what the INT4 scores cost against unquantised attention
                notes["err_vs_fp32"] = error_vs_fp32(out, q, k, v)
            return out

        def ref(q=q, k=k, v=v, block=block):
            return int4_attention_reference(q, k, v, block_m=block, block_n=block)

        tol = 2e-2 if dtype == BF16 else 5e-3
        yield Case("int4_attention.causal" + (".outliers" if outliers else ""), f"T={T} H=16/2 D={D} qk_block={block}",
                   dtype_name(dtype), run, ref, rtol=tol, atol=tol, notes=notes,
                   min_bytes=2 * q.nbytes + k.nbytes + v.nbytes)
