"""INT4 "scale-aware" softmax: row softmax of logits stored as integer codes with per-group scales and zero points.

Input format along each row of C logits (groups of `group_size` G consecutive logits, G a power of two):
    codes  uint8 [R, ceil(C / 2)]   INT4: two codes per byte, element j in byte j // 2, low nibble for even j
       or  int32 [R, C]             wider integer codes, one per element (e.g. the integer Q·Kᵀ of
                                    kernels.int4_attention); q - z must fit in int32
    scales fp32  [R, ceil(C / G)]   > 0
    zeros  int32 [R, ceil(C / G)]   integer zero points, not limited to 0..15, so a group far from 0
                                    (logits around +-1e4) is represented exactly as well as one around 0;
                                    or None: all zero (symmetric codes, attention scores)
    lengths int  [R] or None        row r holds logits only in its first lengths[r] columns (1..C); the
                                    rest get probability 0 and their codes are never read (a causal mask)
    logit[r, j] = float32((q[r, j] - zeros[r, g]) * scales[r, g]),  g = j // G,  j < lengths[r]
`quantize_logits_int4` produces the INT4 form (s = range / 15, z = rne(-min / s)).

One kernel serves both code widths (constexpr PACKED). It first finds the row maximum from the codes alone: per
group it takes the largest code (an integer max) and converts only that one, (max_q - z) * s, since s > 0 keeps
the order. Only then does it take exponentials (natural exp), of (logit - max) <= 0, so nothing overflows for any
scale; a second pass sums them and a third writes probabilities (fp32, fp16 or bf16) and, on request, INT4
probability codes with one scale per row:
    pcode = rne(15 * exp(logit - max)) in 0..15,  pscale = 1 / (15 * sum),  p ~= pcode * pscale
(max p = 1 / sum, so the row's largest probability gets code 15), packed two per byte like the input.

Host function:
    int4_softmax(codes, scales, zeros, n_cols, group_size, out_dtype=np.float32, return_codes=False, lengths=None)
        -> probs [R, n_cols]   or   (probs, pcodes uint8 [R, ceil(n_cols / 2)], pscale fp32 [R])

Error bounds against `int4_softmax_reference` (float64 softmax of the same fp32 logits):
    fp32 probs |p - ref| <= 1e-5 * ref + 1e-9;  fp16 probs <= 1e-3 * ref + 1e-6;  bf16 probs <= 4e-3 * ref + 1e-6;
    pscale within 1e-5 relative of 1 / (15 * sum_ref);  |pcode * pscale - ref| <= pscale / 2 * (1 + 1e-4)
    (rounding of 15 * exp within fp32 error: a code may differ from the reference's by 1 at exact ties).
"""

from __future__ import annotations

import numpy as np

import dsl as tl
from jit import Config, cdiv, jit
from kernels._common import BF16, int_array, resolve
from kernels.config_table import with_default
from kernels.registry import Case, register
from kernels.tuning import as_configs, tuned

AUTOTUNE_CONFIGS = [{"BLOCK": 1024, "num_warps": 4}, {"BLOCK": 256, "num_warps": 2},
                    {"BLOCK": 4096, "num_warps": 8}]  # BLOCK: columns per chunk of a row
TOLERANCE = {np.dtype(np.float32): (1e-5, 1e-9), np.dtype(np.float16): (1e-3, 1e-6), BF16: (4e-3, 1e-6)}
_INT32_MIN = tl.constexpr(-(2**31))  # below every code: masks columns past the length


@jit
def _per_element(t, NG: tl.constexpr, G: tl.constexpr):
    """[NG] per-group values -> [NG * G] per-element values."""
    return tl.reshape(tl.broadcast_to(t[:, None], (NG, G)), (NG * G,))


@jit
def _load_chunk(code_row, scale_row, zero_row, c0, length, BLOCK: tl.constexpr, G: tl.constexpr,
                PACKED: tl.constexpr, HAS_ZEROS: tl.constexpr):
    """Codes (int32, 0 past `length`) of columns c0 .. c0 + BLOCK - 1, and scales and zeros of their BLOCK // G
    groups (groups wholly past `length` are not read: their scores may never have been written)."""
    NG: tl.constexpr = BLOCK // G
    g = c0 // G + tl.arange(0, NG)
    in_row = g * G < length
    s = tl.load(scale_row + g, mask=in_row, other=1.0)
    z = tl.zeros((NG,), tl.int32)
    if HAS_ZEROS:
        z = tl.load(zero_row + g, mask=in_row, other=0)
    if PACKED:
        ib = c0 // 2 + tl.arange(0, BLOCK // 2)
        byte = tl.load(code_row + ib, mask=2 * ib < length, other=0).to(tl.int32)
        q = tl.interleave(byte & 0xF, byte >> 4)
    else:
        cols = c0 + tl.arange(0, BLOCK)
        q = tl.load(code_row + cols, mask=cols < length, other=0)
    return q, s, z


@jit
def _exp_chunk(code_row, scale_row, zero_row, c0, length, m, BLOCK: tl.constexpr, G: tl.constexpr,
               PACKED: tl.constexpr, HAS_ZEROS: tl.constexpr):
    """exp(logit - m) of columns c0 .. c0 + BLOCK - 1; 0 past the row's length."""
    NG: tl.constexpr = BLOCK // G
    q, s, z = _load_chunk(code_row, scale_row, zero_row, c0, length, BLOCK, G, PACKED, HAS_ZEROS)
    x = (q - _per_element(z, NG, G)).to(tl.float32) * _per_element(s, NG, G)
    return tl.where(c0 + tl.arange(0, BLOCK) < length, tl.exp(x - m), 0.0)


@jit
def int4_softmax_kernel(codes_ptr, scales_ptr, zeros_ptr, lengths_ptr, out_ptr, pcodes_ptr, pscale_ptr, n_cols,
                        code_stride, n_groups, BLOCK: tl.constexpr, G: tl.constexpr, PACKED: tl.constexpr,
                        HAS_ZEROS: tl.constexpr, WRITE_CODES: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    NG: tl.constexpr = BLOCK // G
    code_row = codes_ptr + row * code_stride
    scale_row = scales_ptr + row * n_groups
    zero_row = zeros_ptr + row * n_groups
    length = tl.load(lengths_ptr + row)
    offs = tl.arange(0, BLOCK)

    # pass 1: row max from codes and scales: an integer max per group, one multiply per group, no exponentials
    m_vec = tl.full((NG,), float("-inf"), dtype=tl.float32)
    for c0 in range(0, length, BLOCK):
        q, s, z = _load_chunk(code_row, scale_row, zero_row, c0, length, BLOCK, G, PACKED, HAS_ZEROS)
        q = tl.where(c0 + offs < length, q, tl.full((BLOCK,), _INT32_MIN, tl.int32))
        in_row = c0 + tl.arange(0, NG) * G < length  # the group has at least one logit
        qmax = tl.where(in_row, tl.max(tl.reshape(q, (NG, G)), axis=1), z)  # (z: keep q - z from overflowing)
        m_vec = tl.maximum(m_vec, tl.where(in_row, (qmax - z).to(tl.float32) * s, float("-inf")))
    m = tl.max(m_vec, axis=0)

    # pass 2: the sum of exp(logit - max) <= 1 per term
    l_vec = tl.zeros((BLOCK,), dtype=tl.float32)
    for c0 in range(0, length, BLOCK):
        l_vec += _exp_chunk(code_row, scale_row, zero_row, c0, length, m, BLOCK, G, PACKED, HAS_ZEROS)
    total = tl.sum(l_vec, axis=0)

    # pass 3: probabilities (and INT4 probability codes) over the whole row, 0 past its length
    out_row = out_ptr + row * n_cols
    n_bytes = (n_cols + 1) // 2
    for c0 in range(0, n_cols, BLOCK):
        e = _exp_chunk(code_row, scale_row, zero_row, c0, length, m, BLOCK, G, PACKED, HAS_ZEROS)
        tl.store(out_row + c0 + offs, (e / total).to(out_ptr.dtype.element_ty), mask=c0 + offs < n_cols)
        if WRITE_CODES:
            lo, hi = tl.split(tl.reshape(tl.extra.libdevice.rint(e * 15.0).to(tl.int32), (BLOCK // 2, 2)))
            ib = c0 // 2 + tl.arange(0, BLOCK // 2)
            tl.store(pcodes_ptr + row * n_bytes + ib, (lo | (hi << 4)).to(tl.uint8), mask=ib < n_bytes)
    if WRITE_CODES:
        tl.store(pscale_ptr + row, 1.0 / (15.0 * total))


def _whole_groups(config: Config, group_size: int) -> Config:
    """`config` with a chunk of whole quantisation groups."""
    kwargs = {**config.kwargs, "BLOCK": max(config.kwargs["BLOCK"], group_size)}
    return Config(kwargs, num_warps=config.num_warps, num_stages=config.num_stages)


int4_softmax_kernel_tuned = with_default(
    tuned(int4_softmax_kernel, AUTOTUNE_CONFIGS, key=["n_cols", "n_groups"],
          keep=lambda cfg, args: cfg["BLOCK"] >= args["G"]),
    lambda named: _whole_groups(as_configs(AUTOTUNE_CONFIGS[:1])[0], int(named["G"])))  # the first, fitted


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


def dequantize_logits(codes: np.ndarray, scales: np.ndarray, zeros: np.ndarray | None, n_cols: int,
                      group_size: int) -> np.ndarray:
    """fp32 logits exactly as the kernel forms them: float32((q - z) * s), from uint8 (INT4) or int32 codes."""
    g = np.arange(n_cols) // group_size
    q = (unpack_nibbles(codes, n_cols) if codes.dtype == np.uint8 else codes).astype(np.int64)
    z = 0 if zeros is None else zeros.astype(np.int64)[:, g]
    return ((q - z).astype(np.float32) * scales[:, g]).astype(np.float32)


def _check(codes, scales, zeros, lengths, n_cols: int, group_size: int) -> np.ndarray:
    """Validate the inputs; returns the per-row lengths as int32 (n_cols for every row when None)."""
    if group_size < 1 or group_size & (group_size - 1):
        raise ValueError(f"group_size must be a power of two, got {group_size}")
    if n_cols < 1:
        raise ValueError(f"n_cols must be >= 1, got {n_cols}")
    dtype, shape = getattr(codes, "dtype", type(codes).__name__), getattr(codes, "shape", None)
    width = {np.dtype(np.uint8): cdiv(n_cols, 2), np.dtype(np.int32): n_cols}.get(dtype)
    if not isinstance(codes, np.ndarray) or codes.ndim != 2 or codes.shape[1] != width:
        raise ValueError(f"codes must be uint8 [R, ceil({n_cols}/2)={cdiv(n_cols, 2)}] (packed INT4) or int32 "
                         f"[R, {n_cols}], got {dtype} {shape}")
    R = codes.shape[0]
    ng = cdiv(n_cols, group_size)
    if not isinstance(scales, np.ndarray) or scales.dtype != np.float32 or scales.shape != (R, ng):
        raise ValueError(f"scales must be float32 [{R}, {ng}], got {getattr(scales, 'dtype', None)} "
                         f"{getattr(scales, 'shape', None)}")
    if zeros is not None and (not isinstance(zeros, np.ndarray) or zeros.dtype != np.int32 or zeros.shape != (R, ng)):
        raise ValueError(f"zeros must be None or int32 [{R}, {ng}], got {getattr(zeros, 'dtype', None)} "
                         f"{getattr(zeros, 'shape', None)}")
    if lengths is None:
        return np.full((R,), n_cols, np.int32)
    lengths = int_array(lengths, "lengths", (R,))
    if R and (lengths.min() < 1 or lengths.max() > n_cols):
        raise ValueError(f"lengths must be in 1..n_cols={n_cols}, got {lengths.min()}..{lengths.max()}")
    return lengths


def int4_softmax(codes: np.ndarray, scales: np.ndarray, zeros: np.ndarray | None, n_cols: int, group_size: int,
                 out_dtype=np.float32, return_codes: bool = False, config: dict | None = None, tune: bool = False,
                 lengths: np.ndarray | None = None) -> np.ndarray | tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Row softmax of integer-coded logits (module docstring); probs in out_dtype (fp32, fp16 or bf16).
    `config`: one of AUTOTUNE_CONFIGS (default: the machine's config table, kernels.config_table, else the first);
    `tune=True` lets the autotuner choose."""
    lengths = _check(codes, scales, zeros, lengths, n_cols, group_size)
    out_dtype = np.dtype(out_dtype)
    if out_dtype not in TOLERANCE:
        raise ValueError(f"out_dtype must be float32, float16 or bfloat16, got {out_dtype}")
    R = codes.shape[0]
    probs = np.empty((R, n_cols), dtype=out_dtype)
    pcodes = np.zeros((R, cdiv(n_cols, 2)), dtype=np.uint8)
    pscale = np.zeros((R,), dtype=np.float32)
    args = (np.ascontiguousarray(codes), np.ascontiguousarray(scales),
            scales if zeros is None else np.ascontiguousarray(zeros),  # no zeros: a placeholder, never read
            lengths, probs, pcodes, pscale, n_cols, codes.shape[1], scales.shape[1])
    meta = {"G": group_size, "PACKED": codes.dtype == np.uint8, "HAS_ZEROS": zeros is not None,
            "WRITE_CODES": return_codes}
    chosen = resolve(int4_softmax_kernel_tuned, AUTOTUNE_CONFIGS, args, meta, config, tune)
    if R and chosen is None:
        int4_softmax_kernel_tuned[(R,)](*args, **meta)
    elif R:
        int4_softmax_kernel[(R,)](*args, **meta, **_whole_groups(chosen, group_size).all_kwargs())
    return (probs, pcodes, pscale) if return_codes else probs


def int4_softmax_reference(codes: np.ndarray, scales: np.ndarray, zeros: np.ndarray | None, n_cols: int,
                           group_size: int, out_dtype=np.float32, return_codes: bool = False,
                           lengths: np.ndarray | None = None
                           ) -> np.ndarray | tuple[np.ndarray, np.ndarray, np.ndarray]:
    """float64 softmax of the fp32 dequantised logits of each row's first lengths[r] columns (0 past them);
    codes rne(15 * exp(x - max)), pscale 1 / (15 * sum)."""
    x = dequantize_logits(codes, scales, zeros, n_cols, group_size).astype(np.float64)
    if lengths is not None:
        x = np.where(np.arange(n_cols)[None, :] < np.asarray(lengths)[:, None], x, -np.inf)
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
               run=lambda G=G: int4_softmax(codes, scales, zeros, C, G, out_dtype=np.float16),
               reference=lambda G=G: int4_softmax_reference(codes, scales, zeros, C, G, out_dtype=np.float16),
               rtol=rtol, atol=atol, min_bytes=codes.nbytes + scales.nbytes + zeros.nbytes + R * C * 2,
               notes={"max_abs_err_vs_fp32_logits": f"{np.abs(ref - exact).max():.2e}"})

    # int32 scores as kernels.int4_attention makes them (D=128 INT4 dots, one scale per row and 64-key group, no
    # zero points), with a causal mask as row lengths: the last 64 of 2001 query positions.
    G = 64  # (the case above binds its own G)
    scores = rng.integers(-49 * 128, 49 * 128, size=(R, C), dtype=np.int32)
    group_scales = rng.uniform(1e-4, 1e-3, size=(R, cdiv(C, G))).astype(np.float32)
    lengths = C - 64 + 1 + np.arange(R, dtype=np.int32)
    yield Case("int4_softmax.int32_rows", f"R={R} C={C} G={G}", "int32->fp16",
               run=lambda: int4_softmax(scores, group_scales, None, C, G, out_dtype=np.float16, lengths=lengths),
               reference=lambda: int4_softmax_reference(scores, group_scales, None, C, G, out_dtype=np.float16,
                                                        lengths=lengths),
               rtol=rtol, atol=atol, min_bytes=scores.nbytes + group_scales.nbytes + lengths.nbytes + R * C * 2)
