"""INT4 "scale-aware" softmax: row softmax of logits stored as 4-bit codes with per-group scales and zero points.

Input format along each row of C logits (groups of `group_size` consecutive logits):
    codes  uint8 [R, ceil(C / 2)]   two codes per byte, element j in byte j // 2, low nibble for even j
    scales fp32  [R, ceil(C / G)]   > 0
    zeros  int32 [R, ceil(C / G)]   integer zero points, not limited to 0..15, so a group far from 0
                                    (logits around +-1e4) is represented exactly as well as one around 0
    logit[r, j] = float32((q[r, j] - zeros[r, g]) * scales[r, g]),  g = j // G
`quantize_logits_int4` produces this (s = range / 15, z = rne(-min / s)).

The kernel first finds the row maximum from the codes alone: per group it takes the largest code (an integer
max over G/2 bytes) and converts only that one, (max_q - z) * s, since s > 0 keeps the order. Only then does
it take exponentials, of (logit - max) <= 0, so nothing overflows for any scale; a second pass sums them and
a third writes probabilities (fp32 or fp16) and, on request, INT4 probability codes with one scale per row:
    pcode = rne(15 * exp(logit - max)) in 0..15,  pscale = 1 / (15 * sum),  p ~= pcode * pscale
(max p = 1 / sum, so the row's largest probability gets code 15), packed two per byte like the input.

Host function:
    int4_softmax(codes, scales, zeros, n_cols, group_size, out_dtype=np.float32, return_codes=False)
        -> probs [R, n_cols]   or   (probs, pcodes uint8 [R, ceil(n_cols / 2)], pscale fp32 [R])

Error bounds against `int4_softmax_reference` (float64 softmax of the same fp32 logits):
    fp32 probs |p - ref| <= 1e-5 * ref + 1e-9;  fp16 probs <= 1e-3 * ref + 1e-6;
    pscale within 1e-5 relative of 1 / (15 * sum_ref);  |pcode * pscale - ref| <= pscale / 2 * (1 + 1e-4)
    (rounding of 15 * exp within fp32 error: a code may differ from the reference's by 1 at exact ties).
"""

from __future__ import annotations

import numpy as np

import dsl as tl
from jit import cdiv, jit
from kernels.registry import Case, register
from kernels.tuning import tuned

AUTOTUNE_CONFIGS = [{"BLOCK_BYTES": 512, "num_warps": 4}, {"BLOCK_BYTES": 128, "num_warps": 2},
                    {"BLOCK_BYTES": 2048, "num_warps": 8}]
TOLERANCE = {np.dtype(np.float32): (1e-5, 1e-9), np.dtype(np.float16): (1e-3, 1e-6)}


@jit
def per_byte(t, NG: tl.constexpr, G2: tl.constexpr):
    """[NG] per-group values -> [NG * G2] per-byte values (each group spans G2 bytes)."""
    return tl.reshape(tl.broadcast_to(t[:, None], (NG, G2)), (NG * G2,))


@jit
def int4_softmax_kernel(codes_ptr, scales_ptr, zeros_ptr, out_ptr, pcodes_ptr, pscale_ptr, n_cols, n_bytes,
                        n_groups, BLOCK_BYTES: tl.constexpr, G2: tl.constexpr, WRITE_CODES: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    NG: tl.constexpr = BLOCK_BYTES // G2
    code_row = codes_ptr + row * n_bytes
    scale_row = scales_ptr + row * n_groups
    zero_row = zeros_ptr + row * n_groups
    offs = tl.arange(0, BLOCK_BYTES)
    offs_g = tl.arange(0, NG)

    # pass 1: row max from codes and scales, one multiply per group, no exponentials
    m_vec = tl.full((NG,), float("-inf"), dtype=tl.float32)
    for b0 in range(0, n_bytes, BLOCK_BYTES):
        ib = b0 + offs
        byte = tl.load(code_row + ib, mask=ib < n_bytes, other=0).to(tl.int32)
        lo = tl.where(2 * ib < n_cols, byte & 0xF, -1)
        hi = tl.where(2 * ib + 1 < n_cols, byte >> 4, -1)
        qmax = tl.max(tl.reshape(tl.maximum(lo, hi), (NG, G2)), axis=1)  # -1: no valid element in the group
        g = b0 // G2 + offs_g
        s = tl.load(scale_row + g, mask=g < n_groups, other=1.0)
        z = tl.load(zero_row + g, mask=g < n_groups, other=0)
        m_vec = tl.maximum(m_vec, tl.where(qmax >= 0, (qmax - z).to(tl.float32) * s, float("-inf")))
    m = tl.max(m_vec, axis=0)

    # pass 2: the sum of exp(logit - max) <= 1 per term
    l_vec = tl.zeros((BLOCK_BYTES,), dtype=tl.float32)
    for b0 in range(0, n_bytes, BLOCK_BYTES):
        ib = b0 + offs
        byte = tl.load(code_row + ib, mask=ib < n_bytes, other=0).to(tl.int32)
        g = b0 // G2 + offs_g
        s = per_byte(tl.load(scale_row + g, mask=g < n_groups, other=1.0), NG, G2)
        z = per_byte(tl.load(zero_row + g, mask=g < n_groups, other=0), NG, G2)
        e_lo = tl.where(2 * ib < n_cols, tl.exp(((byte & 0xF) - z).to(tl.float32) * s - m), 0.0)
        e_hi = tl.where(2 * ib + 1 < n_cols, tl.exp(((byte >> 4) - z).to(tl.float32) * s - m), 0.0)
        l_vec += e_lo + e_hi
    total = tl.sum(l_vec, axis=0)

    # pass 3: probabilities (and INT4 probability codes)
    out_row = out_ptr + row * n_cols
    for b0 in range(0, n_bytes, BLOCK_BYTES):
        ib = b0 + offs
        byte = tl.load(code_row + ib, mask=ib < n_bytes, other=0).to(tl.int32)
        g = b0 // G2 + offs_g
        s = per_byte(tl.load(scale_row + g, mask=g < n_groups, other=1.0), NG, G2)
        z = per_byte(tl.load(zero_row + g, mask=g < n_groups, other=0), NG, G2)
        ok_lo = 2 * ib < n_cols
        ok_hi = 2 * ib + 1 < n_cols
        e_lo = tl.where(ok_lo, tl.exp(((byte & 0xF) - z).to(tl.float32) * s - m), 0.0)
        e_hi = tl.where(ok_hi, tl.exp(((byte >> 4) - z).to(tl.float32) * s - m), 0.0)
        tl.store(out_row + 2 * ib, (e_lo / total).to(out_ptr.dtype.element_ty), mask=ok_lo)
        tl.store(out_row + 2 * ib + 1, (e_hi / total).to(out_ptr.dtype.element_ty), mask=ok_hi)
        if WRITE_CODES:
            c_lo = tl.extra.libdevice.rint(e_lo * 15.0).to(tl.int32)
            c_hi = tl.extra.libdevice.rint(e_hi * 15.0).to(tl.int32)
            tl.store(pcodes_ptr + row * n_bytes + ib, (c_lo | (c_hi << 4)).to(tl.uint8), mask=ib < n_bytes)
    if WRITE_CODES:
        tl.store(pscale_ptr + row, 1.0 / (15.0 * total))


int4_softmax_kernel_tuned = tuned(int4_softmax_kernel, AUTOTUNE_CONFIGS, key=["n_cols", "n_groups"],
                                  keep=lambda cfg, args: cfg["BLOCK_BYTES"] >= args["G2"])


def quantize_logits_int4(x: np.ndarray, group_size: int = 32) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Asymmetric INT4 per group of the last axis: (codes uint8 [R, ceil(C/2)], scales fp32, zeros int32).

    s = max(max - min, 2^-20 * max|x|, 1e-30) / 15 (the floor keeps |z| < 2^24, so (q - z) is exact in fp32),
    z = rne(-min / s), q = clamp(rne(x / s) + z, 0, 15)."""
    x = np.asarray(x, dtype=np.float32)
    if x.ndim != 2 or x.shape[1] == 0:
        raise ValueError(f"x must be 2-D [R, C] with C >= 1, got {x.shape}")
    R, C = x.shape
    ng = cdiv(C, group_size)
    pad = np.concatenate([x, np.repeat(x[:, -1:], ng * group_size - C, axis=1)], axis=1)
    grp = pad.reshape(R, ng, group_size)
    lo, hi = grp.min(axis=2), grp.max(axis=2)
    span = np.maximum(np.maximum(hi - lo, 2.0 ** -20 * np.maximum(np.abs(lo), np.abs(hi))), 1e-30)
    scales = (span / 15.0).astype(np.float32)
    zeros = np.rint(-lo / scales).astype(np.int64)
    q = np.clip(np.rint(grp / scales[..., None]) + zeros[..., None], 0, 15).astype(np.uint8).reshape(R, -1)[:, :C]
    return pack_nibbles(q), scales, zeros.astype(np.int32)


def pack_nibbles(q: np.ndarray) -> np.ndarray:
    """Codes [R, C] (0..15) -> bytes [R, ceil(C/2)], element j in byte j // 2, low nibble for even j."""
    R, C = q.shape
    q = np.concatenate([q.astype(np.uint8), np.zeros((R, C % 2), np.uint8)], axis=1)
    return (q[:, 0::2] | (q[:, 1::2] << 4)).astype(np.uint8)


def unpack_nibbles(b: np.ndarray, n_cols: int) -> np.ndarray:
    return np.stack([b & 0xF, b >> 4], axis=-1).reshape(b.shape[0], -1)[:, :n_cols]


def dequantize_logits(codes: np.ndarray, scales: np.ndarray, zeros: np.ndarray, n_cols: int,
                      group_size: int) -> np.ndarray:
    """fp32 logits exactly as the kernel forms them: float32((q - z) * s)."""
    g = np.arange(n_cols) // group_size
    q = unpack_nibbles(codes, n_cols).astype(np.int64)
    return ((q - zeros.astype(np.int64)[:, g]).astype(np.float32) * scales[:, g]).astype(np.float32)


def _check(codes, scales, zeros, n_cols: int, group_size: int) -> None:
    if group_size < 2 or group_size & (group_size - 1):
        raise ValueError(f"group_size must be a power of two >= 2, got {group_size}")
    if n_cols < 1:
        raise ValueError(f"n_cols must be >= 1, got {n_cols}")
    if not isinstance(codes, np.ndarray) or codes.dtype != np.uint8 or codes.ndim != 2:
        raise ValueError(f"codes must be a 2-D uint8 array, got {getattr(codes, 'dtype', type(codes).__name__)}")
    R = codes.shape[0]
    if codes.shape[1] != cdiv(n_cols, 2):
        raise ValueError(f"codes must be [R, ceil({n_cols}/2)={cdiv(n_cols, 2)}], got {codes.shape}")
    ng = cdiv(n_cols, group_size)
    if not isinstance(scales, np.ndarray) or scales.dtype != np.float32 or scales.shape != (R, ng):
        raise ValueError(f"scales must be float32 [{R}, {ng}], got {getattr(scales, 'dtype', None)} "
                         f"{getattr(scales, 'shape', None)}")
    if not isinstance(zeros, np.ndarray) or zeros.dtype != np.int32 or zeros.shape != (R, ng):
        raise ValueError(f"zeros must be int32 [{R}, {ng}], got {getattr(zeros, 'dtype', None)} "
                         f"{getattr(zeros, 'shape', None)}")


def int4_softmax(codes: np.ndarray, scales: np.ndarray, zeros: np.ndarray, n_cols: int, group_size: int,
                 out_dtype=np.float32, return_codes: bool = False, config: dict | None = None, tune: bool = False):
    """Row softmax of INT4 logits (module docstring); probs in out_dtype (fp32 or fp16). `config`: one of
    AUTOTUNE_CONFIGS (default the first); `tune=True` lets the autotuner choose."""
    _check(codes, scales, zeros, n_cols, group_size)
    out_dtype = np.dtype(out_dtype)
    if out_dtype not in TOLERANCE:
        raise ValueError(f"out_dtype must be float32 or float16, got {out_dtype}")
    R, n_bytes = codes.shape
    probs = np.empty((R, n_cols), dtype=out_dtype)
    pcodes = np.zeros((R, n_bytes), dtype=np.uint8)
    pscale = np.zeros((R,), dtype=np.float32)
    args = (np.ascontiguousarray(codes), np.ascontiguousarray(scales), np.ascontiguousarray(zeros), probs, pcodes,
            pscale, n_cols, n_bytes, scales.shape[1])
    if R and tune:
        int4_softmax_kernel_tuned[(R,)](*args, G2=group_size // 2, WRITE_CODES=return_codes)
    elif R:
        cfg = dict(config or AUTOTUNE_CONFIGS[0])
        cfg["BLOCK_BYTES"] = max(cfg["BLOCK_BYTES"], group_size // 2)  # whole groups per chunk
        int4_softmax_kernel[(R,)](*args, G2=group_size // 2, WRITE_CODES=return_codes, **cfg)
    return (probs, pcodes, pscale) if return_codes else probs


def int4_softmax_reference(codes: np.ndarray, scales: np.ndarray, zeros: np.ndarray, n_cols: int, group_size: int,
                           out_dtype=np.float32, return_codes: bool = False):
    """float64 softmax of the fp32 dequantised logits; codes rne(15 * exp(x - max)), pscale 1 / (15 * sum)."""
    x = dequantize_logits(codes, scales, zeros, n_cols, group_size).astype(np.float64)
    e = np.exp(x - x.max(axis=1, keepdims=True))
    total = e.sum(axis=1, keepdims=True)
    probs = (e / total).astype(out_dtype)
    if not return_codes:
        return probs
    return probs, pack_nibbles(np.rint(15 * e).astype(np.uint8)), (1.0 / (15 * total[:, 0])).astype(np.float32)


@register
def _cases():
    rng = np.random.default_rng(8)
    R, C, G = 64, 2001, 32  # 16 heads x 4 query tokens over 2001 keys, logit scales 1..8
    logits = (rng.standard_normal((R, C)) * rng.uniform(1, 8, size=(R, 1))).astype(np.float32)
    codes, scales, zeros = quantize_logits_int4(logits, G)
    x = logits.astype(np.float64)
    exact = np.exp(x - x.max(1, keepdims=True))
    exact /= exact.sum(1, keepdims=True)
    ref = int4_softmax_reference(codes, scales, zeros, C, G, out_dtype=np.float16)
    rtol, atol = TOLERANCE[np.dtype(np.float16)]
    yield Case("int4_softmax", f"R={R} C={C} G={G}", "int4->fp16",
               run=lambda: int4_softmax(codes, scales, zeros, C, G, out_dtype=np.float16),
               reference=lambda: int4_softmax_reference(codes, scales, zeros, C, G, out_dtype=np.float16),
               rtol=rtol, atol=atol, min_bytes=codes.nbytes + scales.nbytes + zeros.nbytes + R * C * 2,
               notes={"max_abs_err_vs_fp32_logits": f"{np.abs(ref - exact).max():.2e}"})
