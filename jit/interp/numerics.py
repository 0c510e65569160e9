"""Numeric primitives of the interpreter, written independently of the code generator.

Registers hold narrow floats (fp16 / bf16 / fp8) as float32 values exactly representable in their
format, like the compiled code. Rounding to a format uses ml_dtypes / numpy conversions (round to
nearest even), with the op table's extras: round toward zero and fp8 saturation. `fma` is exact: the
f32 one sums in f64 with round-to-odd (so the final rounding to f32 is single), the f64 one by
Boldo and Melquiond's emulation (rationals where it does not apply).
"""

from __future__ import annotations

from fractions import Fraction

import ml_dtypes
import numpy as np

from dsl import dtypes as T
from dsl.dtypes import dtype

NARROW = {"fp16": np.dtype(np.float16), "bf16": np.dtype(ml_dtypes.bfloat16),
          "fp8e4nv": np.dtype(ml_dtypes.float8_e4m3fn), "fp8e5": np.dtype(ml_dtypes.float8_e5m2),
          "fp8e4b8": np.dtype(ml_dtypes.float8_e4m3fnuz), "fp8e5b16": np.dtype(ml_dtypes.float8_e5m2fnuz),
          "fp8e4b15": np.dtype(ml_dtypes.float8_e4m3fn)}
# fp8e4b15 is E4M3FN with the exponent bias 15 instead of 7: the same bits mean 2^-8 times the value,
# so it is computed as E4M3FN values scaled by SCALE (exact: a power of two).
SCALE = {"fp8e4b15": np.float32(2.0**-8)}
_NAN_CODE = {"fp16": 0x7E00, "bf16": 0x7FC0, "fp8e4nv": 0x7F, "fp8e5": 0x7E, "fp8e4b15": 0x7F, "fp8e4b8": 0x80,
             "fp8e5b16": 0x80}
_UINT = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}


def is_narrow(dt: dtype) -> bool:
    return dt.name in NARROW


def register_dtype(dt: dtype) -> np.dtype:
    """The numpy dtype of a register holding `dt` (narrow floats live in float32, pointers in int64)."""
    if is_narrow(dt):
        return np.dtype(np.float32)
    if dt.is_ptr():
        return np.dtype(np.int64)
    return dt.to_numpy()


def max_finite(dt: dtype) -> float:
    return float(ml_dtypes.finfo(NARROW[dt.name]).max) * float(SCALE.get(dt.name, 1.0))


def _unscaled(x: np.ndarray, dt: dtype) -> np.ndarray:
    """Register values of `dt` as values of its numpy storage format (fp8e4b15: times 2^8)."""
    scale = SCALE.get(dt.name)
    return x if scale is None else np.asarray(x, np.float32) / scale


def _scaled(x: np.ndarray, dt: dtype) -> np.ndarray:
    scale = SCALE.get(dt.name)
    return x if scale is None else (np.asarray(x, np.float32) * scale).astype(np.float32)


def round_narrow(x: np.ndarray, dt: dtype, rounding: str = "rtne") -> np.ndarray:
    """float32 `x` rounded to the narrow format `dt`, returned as float32. NaN stays x."""
    x = np.asarray(x, np.float32)
    if not is_narrow(dt):
        return x
    if dt.name in SCALE:
        with np.errstate(all="ignore"):
            return _scaled(round_narrow(_unscaled(x, dt), T.float8e4nv, rounding), dt)
    fmt = NARROW[dt.name]
    with np.errstate(all="ignore"):
        y = x.astype(fmt)
        if rounding == "rtz":
            yf = y.astype(np.float32)
            over = np.abs(yf) > np.abs(x)
            bits = y.view(_UINT[fmt.itemsize])
            stepped = (bits - np.ones_like(bits)).view(fmt)
            y = np.where(over & (np.abs(yf) > 0), stepped, y)
        out = y.astype(np.float32)
        if dt.is_fp8():
            bad = ~np.isfinite(out) & ~np.isnan(x)
            out = np.where(bad, np.copysign(np.float32(max_finite(dt)), x), out)
        elif rounding == "rtz":
            out = np.where(np.isinf(out) & np.isfinite(x), np.copysign(np.float32(max_finite(dt)), x), out)
    return np.where(np.isnan(x), x, out).astype(np.float32)


def f64_to_f32(x: np.ndarray, rounding: str) -> np.ndarray:
    """Narrow doubles: 'rtne', 'rtz' or 'rto' (round to odd, so a later rounding to a narrow format is single)."""
    x = np.asarray(x, np.float64)
    with np.errstate(all="ignore"):
        nearest = x.astype(np.float32)
        if rounding == "rtne":
            return nearest
        back = nearest.astype(np.float64)
        bits = nearest.view(np.uint32).copy()
        over = np.abs(back) > np.abs(x)
        bits = np.where(over, bits - np.uint32(1), bits)
        if rounding == "rto":
            bits = np.where(back != x, bits | np.uint32(1), bits)
        # NaN: comparisons are false, the value passes through
        return bits.astype(np.uint32).view(np.float32)


def encode(x: np.ndarray, dt: dtype) -> np.ndarray:
    """Register values -> the bits stored in memory (narrow NaNs become the canonical NaN with x's sign)."""
    if not is_narrow(dt):
        return np.asarray(x, register_dtype(dt))
    fmt = NARROW[dt.name]
    x = np.asarray(x, np.float32)
    uint = _UINT[fmt.itemsize]
    with np.errstate(all="ignore"):
        bits = _unscaled(x, dt).astype(fmt).view(uint)
    sign = (np.signbit(x).astype(uint) << uint(8 * fmt.itemsize - 1)).astype(uint)
    return np.where(np.isnan(x), sign | uint(_NAN_CODE[dt.name]), bits).astype(uint)


def decode(bits: np.ndarray, dt: dtype) -> np.ndarray:
    """Stored bits of a narrow float -> float32 registers (exact)."""
    fmt = NARROW[dt.name]
    return _scaled(np.asarray(bits).astype(_UINT[fmt.itemsize]).view(fmt).astype(np.float32), dt)


def fma32(a: np.ndarray, b: np.ndarray, c: np.ndarray) -> np.ndarray:
    """float32 a*b+c with one rounding: the product is exact in f64 and the sum is rounded to odd, so
    the final rounding to f32 is the only one (f64 has more than 24 + 2 bits)."""
    a, b, c = (np.asarray(v, np.float64) for v in (a, b, c))
    with np.errstate(all="ignore"):
        p = a * b
        return _round_to_odd(*_two_sum(p, c)).astype(np.float32)


def _two_sum(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(s, e): s = a + b rounded, e its exact error (Knuth; any magnitudes)."""
    s = a + b
    bb = s - a
    return s, (a - (s - bb)) + (b - bb)


_SPLIT = 134217729.0  # 2^27 + 1: Veltkamp's splitter for float64


def _two_product(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(p, e): p = a * b rounded, e its exact error (Dekker), exact while nothing overflows or underflows."""
    p = a * b
    ta, tb = a * _SPLIT, b * _SPLIT
    a_hi, b_hi = ta - (ta - a), tb - (tb - b)
    a_lo, b_lo = a - a_hi, b - b_hi
    return p, ((a_hi * b_hi - p) + a_hi * b_lo + a_lo * b_hi) + a_lo * b_lo


def _round_to_odd(s: np.ndarray, e: np.ndarray) -> np.ndarray:
    """Of the two float64 around s + e (s its rounding to nearest), the one with an odd last bit: s
    when exact or odd, else s's neighbour toward e."""
    fix = np.isfinite(e) & (e != 0) & ((s.view(np.uint64) & np.uint64(1)) == 0)
    return np.where(fix, np.nextafter(s, np.where(e > 0, np.inf, -np.inf)), s)


def _fma64_one(a: float, b: float, c: float) -> float:
    if not (np.isfinite(a) and np.isfinite(b)):
        return a * b + c  # the product is inf or NaN, exactly as in the fused operation
    if not np.isfinite(c):
        return c
    exact = Fraction(a) * Fraction(b) + Fraction(c)
    if exact == 0:
        return a * b + c if a == 0 or b == 0 else 0.0  # signed zeros add by IEEE's rules; else +0
    try:
        return float(exact)  # correctly rounded (integer true division), subnormals included
    except OverflowError:
        return float("inf") if exact > 0 else float("-inf")


def fma64(a: np.ndarray, b: np.ndarray, c: np.ndarray) -> np.ndarray:
    """float64 a*b+c with one rounding: Boldo and Melquiond's emulation (the exact product p + pe, the
    two-sum s + se of p + c, then s + round_to_odd(se + pe) rounded once), which needs the partial
    results far from overflow and underflow; the few elements outside (and non-finite ones) are
    computed in rationals."""
    a, b, c = np.broadcast_arrays(*(np.asarray(v, np.float64) for v in (a, b, c)))
    with np.errstate(all="ignore"):
        p, pe = _two_product(a, b)
        s, se = _two_sum(c, p)
        result = np.array(s + _round_to_odd(*_two_sum(se, pe)), dtype=np.float64)
        big, small = 2.0**995, 2.0**-900
        ap, ar = np.abs(p), np.abs(result)
        safe = ((np.abs(a) < big) & (np.abs(b) < big) & (np.abs(c) < big) & (ap < big) & (ap > small)
                & (ar < big) & (ar > small))
        zero_product = ((a == 0) & np.isfinite(b)) | ((b == 0) & np.isfinite(a))
        result = np.where(zero_product, p + c, result)  # p is exact: an exact signed zero
        safe |= zero_product
    for k in np.flatnonzero(~safe):
        result.flat[k] = _fma64_one(float(a.flat[k]), float(b.flat[k]), float(c.flat[k]))
    return result


def fma(a, b, c, dt: dtype) -> np.ndarray:
    """Fused multiply-add in `dt` (narrow formats: in f32, then rounded)."""
    if dt.is_fp64():
        return fma64(a, b, c)
    return round_narrow(fma32(a, b, c), dt)


def tf32(x: np.ndarray) -> np.ndarray:
    """Drop the low 13 mantissa bits (NaNs unchanged)."""
    x = np.asarray(x, np.float32)
    cut = (x.view(np.uint32) & np.uint32(0xFFFFE000)).view(np.float32)
    return np.where(np.isnan(x), x, cut)


def to_bits(x: np.ndarray, dt: dtype) -> np.ndarray:
    """Register value -> its bit pattern as an unsigned integer array of the type's width."""
    if is_narrow(dt):
        return encode(x, dt)
    if dt.is_bool():
        return np.asarray(x).astype(np.uint8)
    return np.ascontiguousarray(np.asarray(x, register_dtype(dt))).view(_UINT[register_dtype(dt).itemsize])


def from_bits(bits: np.ndarray, dt: dtype) -> np.ndarray:
    if is_narrow(dt):
        return decode(bits, dt)
    if dt.is_bool():
        return np.asarray(bits) != 0
    target = register_dtype(dt)
    return np.ascontiguousarray(np.asarray(bits).astype(_UINT[target.itemsize])).view(target)


INT_TYPES = {d.name: d for d in T.ALL_DTYPES if d.is_int() and not d.is_bool()}
