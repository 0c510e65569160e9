"""Quantisation formats in numpy: INT4 weight-only (AWQ / GPTQ packing), MXFP4, FP8 E4M3 / E5M2.

These are the exact storage formats of `research/qwen35.md` §5; the DSL kernels that consume them
live in `kernels.quant_gemm` (W4A16 GEMM, MXFP4 -> FP8 experts) and `kernels.int4_softmax`.

INT4 weight-only, logical weight W [K_in, N_out] (y = x @ W), groups of `group_size` input rows:
  codes q in 0..15, zero points z in 0..15 per (group, column), fp16 scales s per (group, column);
  W[k, n] = (q[k, n] - z[k // G, n]) * s[k // G, n].
  * AWQ packing: qweight int32 [K, N/8], column 8c+j at bits 4*R[j], R = [0, 4, 1, 5, 2, 6, 3, 7];
    qzeros int32 [K/G, N/8] in the same order.
  * GPTQ packing: qweight int32 [K/8, N], row 8r+j at bits 4*j; qzeros int32 [K/G, N/8] sequential
    along N. GPTQ v1 checkpoints store z - 1 (`zero_offset=1` adds it back).
  Asymmetric (AWQ's quantiser): s = max(max - min, 1e-5) / 15, z = clamp(-round(min / s), 0, 15).
  Symmetric: s = max|w| / 7, z = 8, so +-max|w| are both representable.
  q = clamp(round(w / s) + z, 0, 15) with `rounding` "rne" (nearest, ties to even) or "rtz" (toward 0).

MXFP4 (OCP MX v1.0, gpt-oss layout): a weight [..., R, C] is stored as blocks uint8 [..., R, C/32, 16]
(element j of a 32-block in byte j // 2, low nibble for even j) and E8M0 scales uint8 [..., R, C/32];
value = E2M1[nibble] * 2^(scale - 127). Quantiser: shared_exp = floor(log2(amax)) - 2 (FLOOR mode).

FP8: E4M3 (fn, max 448, no inf) and E5M2 (max 57344), cast with saturation then round to nearest even.
"""

from __future__ import annotations

from dataclasses import dataclass

import ml_dtypes
import numpy as np

AWQ_ORDER = (0, 4, 1, 5, 2, 6, 3, 7)  # nibble index of column 8c + j
E2M1_VALUES = np.array([0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0, -0.0, -0.5, -1.0, -1.5, -2.0, -3.0, -4.0, -6.0],
                       dtype=np.float32)
FP8_DTYPES = {"e4m3": ml_dtypes.float8_e4m3fn, "e5m2": ml_dtypes.float8_e5m2}
FP8_MAX = {"e4m3": 448.0, "e5m2": 57344.0}
MX_BLOCK = 32


def _round(x: np.ndarray, rounding: str) -> np.ndarray:
    if rounding == "rne":
        return np.rint(x)
    if rounding == "rtz":
        return np.trunc(x)
    raise ValueError(f"rounding must be 'rne' or 'rtz', got {rounding!r}")


# ---------------------------------------------------------------------------------------------- INT4


def quantize_int4(w: np.ndarray, group_size: int = 128, *, symmetric: bool = False,
                  rounding: str = "rne") -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Quantise W [K, N] per group of `group_size` rows: returns (codes uint8 [K, N], zeros uint8 [K/G, N],
    scales fp16 [K/G, N]). Codes are computed with the fp16-rounded scale, so they match what is stored."""
    w = np.asarray(w)
    if w.ndim != 2:
        raise ValueError(f"quantize_int4 expects a 2-D weight [K, N], got shape {w.shape}")
    K, N = w.shape
    if group_size <= 0 or K % group_size:
        raise ValueError(f"K={K} must be a positive multiple of group_size={group_size}")
    g = w.astype(np.float32).reshape(K // group_size, group_size, N)
    if symmetric:
        scale = (np.abs(g).max(axis=1) / 7.0).astype(np.float16)
        scale = np.where(scale == 0, np.float16(1.0), scale)
        zeros = np.full(scale.shape, 8, dtype=np.float32)
    else:
        lo, hi = g.min(axis=1), g.max(axis=1)
        scale = (np.maximum(hi - lo, 1e-5) / 15.0).astype(np.float16)
        zeros = np.clip(-_round(lo / scale.astype(np.float32), rounding), 0, 15)
    s32 = scale.astype(np.float32)[:, None, :]
    q = np.clip(_round(g / s32, rounding) + zeros[:, None, :], 0, 15)
    return q.reshape(K, N).astype(np.uint8), zeros.astype(np.uint8), scale


def _pack_rows8(q: np.ndarray, nibble_of: tuple[int, ...]) -> np.ndarray:
    """Pack 8 consecutive entries of the last axis into one int32; entry j goes to nibble nibble_of[j]."""
    *lead, n = q.shape
    q8 = q.astype(np.uint32).reshape(*lead, n // 8, 8)
    packed = np.zeros((*lead, n // 8), dtype=np.uint32)
    for j in range(8):
        packed |= q8[..., j] << np.uint32(4 * nibble_of[j])
    return packed.view(np.int32)


def _unpack_rows8(packed: np.ndarray, nibble_of: tuple[int, ...]) -> np.ndarray:
    p = np.asarray(packed).view(np.uint32)
    parts = [(p >> np.uint32(4 * nibble_of[j])) & np.uint32(0xF) for j in range(8)]
    return np.stack(parts, axis=-1).reshape(*p.shape[:-1], p.shape[-1] * 8).astype(np.uint8)


_SEQUENTIAL = tuple(range(8))


def pack_int4(q: np.ndarray, order: str) -> np.ndarray:
    """Pack codes [K, N] into an int32 qweight: AWQ [K, N/8] (interleaved), GPTQ [K/8, N] (along K)."""
    q = np.asarray(q)
    if order == "awq":
        if q.shape[1] % 8:
            raise ValueError(f"AWQ packing needs N % 8 == 0, got N={q.shape[1]}")
        return _pack_rows8(q, AWQ_ORDER)
    if order == "gptq":
        if q.shape[0] % 8:
            raise ValueError(f"GPTQ packing needs K % 8 == 0, got K={q.shape[0]}")
        return np.ascontiguousarray(_pack_rows8(q.T, _SEQUENTIAL).T)
    raise ValueError(f"order must be 'awq' or 'gptq', got {order!r}")


def unpack_int4(qweight: np.ndarray, order: str) -> np.ndarray:
    """Inverse of pack_int4: codes uint8 [K, N]."""
    if order == "awq":
        return _unpack_rows8(qweight, AWQ_ORDER)
    if order == "gptq":
        return np.ascontiguousarray(_unpack_rows8(np.asarray(qweight).T, _SEQUENTIAL).T)
    raise ValueError(f"order must be 'awq' or 'gptq', got {order!r}")


def pack_zeros(z: np.ndarray, order: str) -> np.ndarray:
    """Zero points [K/G, N] -> qzeros int32 [K/G, N/8]: AWQ interleaved, GPTQ sequential along N."""
    if order not in ("awq", "gptq"):
        raise ValueError(f"order must be 'awq' or 'gptq', got {order!r}")
    return _pack_rows8(np.asarray(z), AWQ_ORDER if order == "awq" else _SEQUENTIAL)


def unpack_zeros(qzeros: np.ndarray, order: str) -> np.ndarray:
    if order not in ("awq", "gptq"):
        raise ValueError(f"order must be 'awq' or 'gptq', got {order!r}")
    return _unpack_rows8(qzeros, AWQ_ORDER if order == "awq" else _SEQUENTIAL)


@dataclass
class Int4Weight:
    """A packed INT4 weight-only matrix, logical shape [K, N] (y = x @ W).

    qweight int32 ([K, N/8] AWQ or [K/8, N] GPTQ), qzeros int32 [K/G, N/8], scales fp16 [K/G, N].
    zero_offset is added to the stored zero points (1 for GPTQ v1 checkpoints, else 0).
    """

    qweight: np.ndarray
    qzeros: np.ndarray
    scales: np.ndarray
    group_size: int
    order: str
    zero_offset: int = 0

    @property
    def shape(self) -> tuple[int, int]:
        return self.scales.shape[0] * self.group_size, self.scales.shape[1]

    @classmethod
    def from_float(cls, w: np.ndarray, group_size: int = 128, order: str = "awq", *, symmetric: bool = False,
                   rounding: str = "rne", gptq_v1: bool = False) -> Int4Weight:
        q, z, s = quantize_int4(w, group_size, symmetric=symmetric, rounding=rounding)
        offset = 1 if gptq_v1 else 0
        if gptq_v1 and order != "gptq":
            raise ValueError("gptq_v1 storage only exists for the GPTQ packing order")
        stored_z = z.astype(np.int32) - offset  # v1 stores z - 1 (z = 0 wraps to 15, as in AutoGPTQ)
        return cls(pack_int4(q, order), pack_zeros(stored_z & 0xF, order), s, group_size, order, offset)

    def codes(self) -> np.ndarray:
        return unpack_int4(self.qweight, self.order)

    def zeros(self) -> np.ndarray:
        """Effective zero points [K/G, N] (stored value + zero_offset, in 4-bit arithmetic)."""
        return (unpack_zeros(self.qzeros, self.order).astype(np.int32) + self.zero_offset) & 0xF

    def dequantize(self) -> np.ndarray:
        """W [K, N] in fp32, exact: (q - z) is a small integer and s an fp16, so the product is exact."""
        G = self.group_size
        q = self.codes().astype(np.float32)
        z = np.repeat(self.zeros().astype(np.float32), G, axis=0)
        s = np.repeat(self.scales.astype(np.float32), G, axis=0)
        return (q - z) * s

    def validate(self) -> None:
        """Raise ValueError unless the arrays have the shapes and dtypes of one consistent weight."""
        if self.order not in ("awq", "gptq"):
            raise ValueError(f"order must be 'awq' or 'gptq', got {self.order!r}")
        if self.group_size not in (32, 64, 128):
            raise ValueError(f"group_size must be 32, 64 or 128, got {self.group_size}")
        if self.scales.ndim != 2 or self.scales.dtype not in (np.float16, np.float32):
            raise ValueError(f"scales must be a 2-D fp16/fp32 array [K/G, N], got {self.scales.dtype} "
                             f"{self.scales.shape}")
        K, N = self.shape
        want_q = (K, N // 8) if self.order == "awq" else (K // 8, N)
        for name, arr, want in (("qweight", self.qweight, want_q), ("qzeros", self.qzeros, (K // self.group_size,
                                                                                           N // 8))):
            if arr.dtype != np.int32 or arr.shape != want:
                raise ValueError(f"{name} must be int32 {want} for a {self.order} [K={K}, N={N}] weight, "
                                 f"got {arr.dtype} {arr.shape}")
        if N % 8:
            raise ValueError(f"N must be a multiple of 8, got {N}")


# ---------------------------------------------------------------------------------------------- MXFP4


def e2m1_round(x: np.ndarray) -> np.ndarray:
    """Nearest E2M1 code (0..15) of each value, ties to the even mantissa, saturating at +-6."""
    x = np.asarray(x, dtype=np.float32)
    mags = E2M1_VALUES[:8]
    mid = (mags[1:] + mags[:-1]) / 2
    a = np.minimum(np.abs(x), 6.0)
    lo = np.searchsorted(mid, a, side="left")  # ties -> lower index
    hi = np.searchsorted(mid, a, side="right")  # ties -> upper index
    idx = np.where(lo % 2 == 0, lo, hi)  # at a tie exactly one of them is even (mantissa bit 0)
    return (idx + 8 * np.signbit(x)).astype(np.uint8)


def quantize_mxfp4(w: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Quantise [..., C] along the last axis into (blocks uint8 [..., C/32, 16], scales uint8 [..., C/32])."""
    w = np.asarray(w, dtype=np.float32)
    if w.shape[-1] % MX_BLOCK:
        raise ValueError(f"the last axis ({w.shape[-1]}) must be a multiple of {MX_BLOCK}")
    b = w.reshape(*w.shape[:-1], w.shape[-1] // MX_BLOCK, MX_BLOCK)
    amax = np.abs(b).max(axis=-1)
    with np.errstate(divide="ignore"):
        shared = np.floor(np.log2(np.where(amax > 0, amax, 2.0 ** -127))) - 2
    shared = np.clip(shared, -127, 127)
    codes = e2m1_round(b / np.exp2(shared)[..., None].astype(np.float32))
    blocks = codes[..., 0::2] | (codes[..., 1::2] << 4)
    return blocks.astype(np.uint8), (shared + 127).astype(np.uint8)


def mxfp4_codes(blocks: np.ndarray) -> np.ndarray:
    """E2M1 codes [..., C/32, 32] of packed blocks [..., C/32, 16]."""
    b = np.asarray(blocks, dtype=np.uint8)
    return np.stack([b & 0xF, b >> 4], axis=-1).reshape(*b.shape[:-1], 2 * b.shape[-1])


def dequantize_mxfp4(blocks: np.ndarray, scales: np.ndarray) -> np.ndarray:
    """Exact fp32 values [..., C] of an MXFP4 tensor (E8M0 scale 0xFF, NaN, is not produced by the quantiser)."""
    vals = E2M1_VALUES[mxfp4_codes(blocks)]
    out = np.ldexp(vals, scales.astype(np.int32)[..., None] - 127)
    return out.reshape(*out.shape[:-2], -1).astype(np.float32)


# ---------------------------------------------------------------------------------------------- FP8


def fp8_decode_table(fmt: str) -> np.ndarray:
    """fp32 value of each of the 256 codes, from the format's definition (NaN where the code is NaN)."""
    if fmt not in FP8_MAX:
        raise ValueError(f"fmt must be 'e4m3' or 'e5m2', got {fmt!r}")
    ebits, mbits, bias = (4, 3, 7) if fmt == "e4m3" else (5, 2, 15)
    codes = np.arange(256)
    sign = np.where(codes >> 7, -1.0, 1.0)
    e = (codes >> mbits) & ((1 << ebits) - 1)
    m = codes & ((1 << mbits) - 1)
    frac = m / (1 << mbits)
    val = np.where(e == 0, frac * 2.0 ** (1 - bias), (1 + frac) * np.exp2((e - bias).astype(np.float64)))
    if fmt == "e4m3":
        val = np.where((e == 15) & (m == 7), np.nan, val)
    else:
        val = np.where(e == 31, np.where(m == 0, np.inf, np.nan), val)
    return (sign * val).astype(np.float32)


def to_fp8(x: np.ndarray, fmt: str = "e4m3") -> np.ndarray:
    """Saturating round-to-nearest-even cast to an ml_dtypes fp8 array (the GPU's satfinite conversion)."""
    if fmt not in FP8_MAX:
        raise ValueError(f"fmt must be 'e4m3' or 'e5m2', got {fmt!r}")
    lim = FP8_MAX[fmt]
    return np.clip(np.asarray(x, dtype=np.float32), -lim, lim).astype(FP8_DTYPES[fmt])


def quantize_fp8(x: np.ndarray, fmt: str = "e4m3", axis: int | None = -1) -> tuple[np.ndarray, np.ndarray]:
    """Scaled FP8: scale = amax / FP8_MAX per slice along `axis` (per tensor when None); returns (codes, scale fp32)
    with x ~= codes * scale. All-zero slices get scale 1."""
    x = np.asarray(x, dtype=np.float32)
    amax = np.abs(x).max(axis=axis, keepdims=True) if axis is not None else np.abs(x).max(keepdims=True)
    scale = np.where(amax > 0, amax / np.float32(FP8_MAX.get(fmt, 1.0)), np.float32(1.0)).astype(np.float32)
    return to_fp8(x / scale, fmt), scale


def dequantize_fp8(codes: np.ndarray, scale: np.ndarray) -> np.ndarray:
    return codes.astype(np.float32) * scale
