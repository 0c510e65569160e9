"""The one door from the code generator to narrow-float conversions and math functions.

`floats` (narrow formats) and `mathlib` (exp, log, ... written as branch-free IR so that loops of them
vectorise) live in their own modules; the rest of the code generator calls them only through here, so
a different backend (a vector math library, say) is a change to this file alone.
"""

from __future__ import annotations

import llvmlite.ir as ir

from dsl.dtypes import dtype
from jit.codegen import floats, mathlib


def round_to(b: ir.IRBuilder, x: ir.Value, dt: dtype, rounding: str = "rtne") -> ir.Value:
    """Round an f32 register to the nearest value of `dt` (still an f32 register); fp32 is unchanged."""
    if dt.primitive_bitwidth >= 32:
        return x
    return floats.round_to(b, x, dt.name, rounding)


def encode(b: ir.IRBuilder, x: ir.Value, dt: dtype) -> ir.Value:
    """f32 register (exact in `dt`) -> the format's bits (i16 or i8)."""
    return floats.encode(b, x, dt.name)


def decode(b: ir.IRBuilder, bits: ir.Value, dt: dtype) -> ir.Value:
    """The format's bits -> f32 register."""
    return floats.decode(b, bits, dt.name)


def tf32_truncate(b: ir.IRBuilder, x: ir.Value) -> ir.Value:
    """Keep the top 10 mantissa bits of an f32 (what tensor cores read of a tf32 operand)."""
    return floats.tf32_truncate(b, x)


def unary(b: ir.IRBuilder, name: str, x: ir.Value) -> ir.Value:
    """math.<name> (a key of jit.mathlib.UNARY) on an f32 or f64 register."""
    return mathlib.UNARY[name](b, x)


def pow(b: ir.IRBuilder, x: ir.Value, y: ir.Value) -> ir.Value:
    return mathlib.pow(b, x, y)
