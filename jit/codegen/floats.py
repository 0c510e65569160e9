"""Narrow float formats (fp16, bf16, fp8e4nv, fp8e5) as branch-free LLVM IR on f32 registers.

The code generator computes narrow floats in `float` registers that hold a value exactly
representable in the format, and stores them as their bits (i16 / i8). This module emits the three
conversions it needs; all are integer and float arithmetic, bitcasts and selects (no calls, no
branches), so loops of them vectorise:

- `encode(x) -> bits`: round an f32 to the format. Rounding is to nearest even ("rtne") or toward
  zero ("rtz"), with subnormals. NaN becomes NVIDIA's canonical NaN, all ones but the sign (0x7fff for
  fp16 and bf16, 0x7f for both fp8 formats): what an H200 produced (benchmarks/gpu/numerics_h200.json).
- `decode(bits) -> f32`: exact.
- `round_to(x) -> f32` = decode(encode(x)), computed without the detour.

Overflow (a finite |x| that rounds above the largest finite value, and +-inf):

    format    default                    rtne (saturate=False)       rtz (saturate=False)
    fp16      (not saturating)           +-inf                       +-max finite, inf -> inf
    bf16      (not saturating)           +-inf                       +-max finite, inf -> inf
    fp8e5     saturating: +-57344        +-inf                       +-max finite, inf -> inf
    fp8e4nv   saturating: +-448          NaN (no inf in E4M3FN)      +-448, inf -> NaN

Saturation is the default for both fp8 formats because Triton converts to fp8 on the GPU with
`cvt.rn.satfinite` (PTX): out-of-range values, infinities included, clamp to the largest finite value
of the sign, NaN stays NaN. Pass saturate=False for IEEE-style overflow (what numpy/ml_dtypes do).

The algorithm, for a format with M mantissa bits and minimum normal exponent emin: values in the
format's normal range are rounded in the f32 bit pattern itself (add half an ulp of the format minus
one plus the round bit, then clear the low 23 - M bits; a carry into the exponent is the correct
result), then rebiased. Values below 2^emin are scaled by 2^(M - emin), exactly, and rounded to an
integer by adding 2^23 (the addition does the rtne rounding); that integer is the subnormal encoding.
bf16 shares f32's exponent range, so the bit-pattern rounding alone covers its subnormals too.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from functools import cache

import llvmlite.ir as ir

from dsl.dtypes import BY_IR, BY_NAME, dtype
from jit.codegen.mathlib import F32, FloatOps

ROUNDINGS = ("rtne", "rtz")


@dataclass(frozen=True)
class _Format:
    name: str
    bits: int
    exp_bits: int
    man_bits: int
    has_inf: bool  # fp8e4nv (E4M3FN) has no infinities and a single NaN mantissa
    exponent_bias: int | None = None  # None: IEEE's 2^(e-1) - 1
    fnuz: bool = False  # AMD's FNUZ formats: no inf, no -0, 0x80 is the only NaN

    @property
    def bias(self) -> int:
        return (1 << (self.exp_bits - 1)) - 1 if self.exponent_bias is None else self.exponent_bias

    @property
    def emin(self) -> int:
        return 1 - self.bias

    @property
    def max_code(self) -> int:
        """Encoding of the largest finite value (sign bit clear)."""
        if self.has_inf:
            return (((1 << self.exp_bits) - 2) << self.man_bits) | ((1 << self.man_bits) - 1)
        if self.fnuz:
            return (1 << (self.bits - 1)) - 1
        return (((1 << self.exp_bits) - 1) << self.man_bits) | ((1 << self.man_bits) - 2)

    @property
    def inf_code(self) -> int:
        return ((1 << self.exp_bits) - 1) << self.man_bits

    @property
    def nan_code(self) -> int:
        """The GPU's canonical NaN: every bit but the sign set (FNUZ formats: the sign bit alone)."""
        return 1 << (self.bits - 1) if self.fnuz else (1 << (self.bits - 1)) - 1

    @property
    def max_finite(self) -> float:
        code = self.max_code
        exp, man = code >> self.man_bits, code & ((1 << self.man_bits) - 1)
        return (1 + man / (1 << self.man_bits)) * 2.0 ** (exp - self.bias)

    @property
    def rebias(self) -> int:
        """Difference of f32's and the format's exponent biases."""
        return 127 - self.bias


_FORMATS = {
    "fp16": _Format("fp16", 16, 5, 10, True),
    "bf16": _Format("bf16", 16, 8, 7, True),
    "fp8e5": _Format("fp8e5", 8, 5, 2, True),
    "fp8e4nv": _Format("fp8e4nv", 8, 4, 3, False),
    "fp8e4b15": _Format("fp8e4b15", 8, 4, 3, False, exponent_bias=15),
    "fp8e4b8": _Format("fp8e4b8", 8, 4, 3, False, exponent_bias=8, fnuz=True),
    "fp8e5b16": _Format("fp8e5b16", 8, 5, 2, False, exponent_bias=16, fnuz=True),
}


@cache
def _fmt(fmt: dtype | str) -> _Format | None:
    """The format of a dtype, its name ("fp16") or IR spelling ("f16"); None for fp32."""
    if isinstance(fmt, str):
        fmt = BY_NAME.get(fmt) or BY_IR.get(fmt) or fmt
    name = fmt.name if isinstance(fmt, dtype) else fmt
    if name == "fp32":
        return None
    try:
        return _FORMATS[name]
    except KeyError:
        raise ValueError(f"not a narrow float format: {fmt!r}") from None


def _f32_ops(b: ir.IRBuilder, x: ir.Value, rounding: str = "rtne") -> FloatOps:
    """Validate the arguments shared by the f32 -> narrow conversions."""
    if rounding not in ROUNDINGS:
        raise ValueError(f"rounding must be one of {ROUNDINGS}, not {rounding!r}")
    elem = x.type.element if isinstance(x.type, ir.VectorType) else x.type
    if elem != F32:
        raise TypeError(f"narrow float conversions take f32 values, not {x.type}")
    return FloatOps(b, x.type)


def _int_type(like: ir.Type, width: int) -> ir.Type:
    if isinstance(like, ir.VectorType):
        return ir.VectorType(ir.IntType(width), like.count)
    return ir.IntType(width)


def _round_bits(o: FloatOps, ax, f: _Format, rounding: str):
    """|x|'s f32 bit pattern rounded to f.man_bits mantissa bits (still an f32 pattern)."""
    shift = 23 - f.man_bits
    if rounding == "rtne":
        odd = o.iand(o.lshr(ax, shift), 1)
        ax = o.iadd(o.iadd(ax, (1 << (shift - 1)) - 1), odd)
    return o.iand(ax, ~((1 << shift) - 1) & 0xFFFFFFFF)


def _overflow_code(f: _Format, rounding: str, saturate: bool, *, inf_input: bool) -> int:
    """Encoding (sign clear) for a finite overflow, or for an infinite input when inf_input."""
    if saturate or (rounding == "rtz" and not inf_input):
        return f.max_code
    return f.inf_code if f.has_inf else f.nan_code


def encode(b: ir.IRBuilder, x: ir.Value, fmt: dtype | str, rounding: str = "rtne",
           saturate: bool | None = None) -> ir.Value:
    """Round f32 `x` to `fmt` and return its bits (i16 for fp16/bf16, i8 for fp8; i32 for fp32).

    saturate=None picks the format's default (fp8: saturate, fp16/bf16: IEEE overflow); see the
    module docstring for the overflow table.
    """
    o = _f32_ops(b, x, rounding)
    f = _fmt(fmt)
    if f is None:
        return o.bits(x)
    if saturate is None:
        saturate = f.bits == 8
    bits = o.bits(x)
    ax = o.iand(bits, 0x7FFFFFFF)
    sign = o.lshr(o.iand(bits, 0x80000000), 32 - f.bits)
    rb = _round_bits(o, ax, f, rounding)
    code = o.isub(o.lshr(rb, 23 - f.man_bits), f.rebias << f.man_bits)
    if f.emin > -126:  # formats whose subnormals are normal in f32
        t = o.mul(o.abs(x), 2.0 ** (f.man_bits - f.emin))  # exact; < 2^M below 2^emin
        if rounding == "rtz":
            t = o.trunc(t)
        sub = o.isub(o.bits(o.add(t, 2.0**23)), 0x4B000000)  # the add rounds to nearest even
        code = o.iselect(o.icmp("<", ax, _f32_bits(2.0**f.emin)), sub, code)
    max_bits = _f32_bits(f.max_finite)
    finite_ovf = _overflow_code(f, rounding, saturate, inf_input=False)
    inf_ovf = _overflow_code(f, rounding, saturate, inf_input=True)
    code = o.iselect(o.icmp(">", rb, max_bits), finite_ovf, code)
    if inf_ovf != finite_ovf:
        code = o.iselect(o.icmp("==", ax, 0x7F800000), inf_ovf, code)
    if f.fnuz:  # no negative zero: a value that rounds to 0 encodes as +0
        sign = o.iselect(o.icmp("==", code, 0), 0, sign)
    code = o.ior(code, sign)
    code = o.iselect(o.icmp(">", ax, 0x7F800000), f.nan_code, code)  # the canonical NaN has no sign
    return b.trunc(code, _int_type(x.type, f.bits))


def decode(b: ir.IRBuilder, bits: ir.Value, fmt: dtype | str) -> ir.Value:
    """Exact f32 value of `fmt` bits (i16 / i8, or vectors of them). NaN payloads are kept."""
    f = _fmt(fmt)
    ity = bits.type
    fty = ir.VectorType(F32, ity.count) if isinstance(ity, ir.VectorType) else F32
    o = FloatOps(b, fty)
    if f is None:
        return o.from_bits(bits)
    if (ity.element if isinstance(ity, ir.VectorType) else ity).width != f.bits:
        raise TypeError(f"{f.name} bits are i{f.bits}, not {ity}")
    v = b.zext(bits, o.ity)
    shift = 23 - f.man_bits
    if f.name == "bf16":  # bf16 is the top half of an f32, subnormals and NaNs included
        return o.from_bits(o.shl(v, 16))
    sign = o.shl(o.iand(v, 1 << (f.bits - 1)), 32 - f.bits)
    mag = o.iand(v, (1 << (f.bits - 1)) - 1)
    out = o.iadd(o.shl(mag, shift), f.rebias << 23)  # normal numbers
    sub = o.bits(o.mul(o.sitofp(mag), 2.0 ** (f.emin - f.man_bits)))  # exact: mag < 2^M
    out = o.iselect(o.icmp("<", mag, 1 << f.man_bits), sub, out)
    if f.has_inf:  # all-ones exponent: inf or NaN with the payload shifted into place
        special = o.ior(o.shl(o.iand(mag, (1 << f.man_bits) - 1), shift), 0x7F800000)
        out = o.iselect(o.icmp(">=", mag, f.inf_code), special, out)
    elif f.fnuz:  # 0x80 (the sign bit alone) is the NaN
        out = o.iselect(o.icmp("==", v, f.nan_code), 0x7FC00000, out)
        sign = o.iselect(o.icmp("==", v, f.nan_code), 0, sign)
    else:
        out = o.iselect(o.icmp("==", mag, f.nan_code), 0x7FC00000, out)
    return o.from_bits(o.ior(out, sign))


def round_to(b: ir.IRBuilder, x: ir.Value, fmt: dtype | str, rounding: str = "rtne",
             saturate: bool | None = None) -> ir.Value:
    """decode(encode(x)) for f32 `x`, computed in place: the nearest value of `fmt` as an f32.

    NaN stays NaN (x itself is returned for NaN lanes); overflow follows `encode`.
    """
    o = _f32_ops(b, x, rounding)
    f = _fmt(fmt)
    if f is None:
        return x
    if saturate is None:
        saturate = f.bits == 8
    bits = o.bits(x)
    ax = o.iand(bits, 0x7FFFFFFF)
    sign = o.iand(bits, 0x80000000)
    rb = _round_bits(o, ax, f, rounding)
    y = o.from_bits(o.ior(rb, sign))
    if f.emin > -126:
        t = o.mul(o.abs(x), 2.0 ** (f.man_bits - f.emin))
        t = o.trunc(t) if rounding == "rtz" else o.rint(t)
        sub = o.copysign(o.mul(t, 2.0 ** (f.emin - f.man_bits)), x)
        y = o.select(o.icmp("<", ax, _f32_bits(2.0**f.emin)), sub, y)

    def value(code: int) -> float:
        if code == f.max_code:
            return f.max_finite
        return float("inf") if code == f.inf_code else float("nan")

    finite_ovf = _overflow_code(f, rounding, saturate, inf_input=False)
    inf_ovf = _overflow_code(f, rounding, saturate, inf_input=True)
    y = o.select(o.icmp(">", rb, _f32_bits(f.max_finite)), o.copysign(value(finite_ovf), x), y)
    if inf_ovf != finite_ovf:
        y = o.select(o.icmp("==", ax, 0x7F800000), o.copysign(value(inf_ovf), x), y)
    if f.fnuz:  # no negative zero
        y = o.select(o.eq(y, 0.0), 0.0, y)
    return o.select(o.isnan(x), x, y)


def tf32_truncate(b: ir.IRBuilder, x: ir.Value) -> ir.Value:
    """Zero the low 13 mantissa bits of f32 `x` (the bits a tensor core ignores in a tf32 operand).

    NaNs pass unchanged: clearing the bits of a NaN whose payload lies only there would make inf.
    """
    o = _f32_ops(b, x)
    truncated = o.from_bits(o.iand(o.bits(x), 0xFFFFE000))
    return o.select(o.isnan(x), x, truncated)


def _f32_bits(value: float) -> int:
    return struct.unpack("<I", struct.pack("<f", value))[0]
