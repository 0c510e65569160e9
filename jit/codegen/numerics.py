"""The one door from the code generator to narrow-float conversions and vector math.

`floats` (narrow formats) and `mathlib` (exp, log, ... written in IR so loops vectorise) live in their
own modules; everything here forwards to them, so the rest of the code generator never needs to know
which math backend or float encoder is in use.
"""

from __future__ import annotations

import llvmlite.ir as ir

from dsl.dtypes import dtype

try:  # written concurrently; until they exist, LLVM intrinsics and fptrunc-based conversions stand in
    from jit.codegen import floats as _floats
except ImportError:  # pragma: no cover - transitional
    _floats = None
try:
    from jit.codegen import mathlib as _mathlib
except ImportError:  # pragma: no cover - transitional
    _mathlib = None

_F32 = ir.FloatType()
_F64 = ir.DoubleType()
_HALF = ir.HalfType()
_I16 = ir.IntType(16)
_I32 = ir.IntType(32)


def round_to(b: ir.IRBuilder, x: ir.Value, dt: dtype, rounding: str = "rtne") -> ir.Value:
    """Round an f32 register to the nearest value of `dt` (still an f32 register)."""
    if dt.primitive_bitwidth >= 32:
        return x
    if _floats is not None:
        return _floats.round_to(b, x, dt.name, rounding)
    return _fallback_decode(b, _fallback_encode(b, x, dt), dt)


def encode(b: ir.IRBuilder, x: ir.Value, dt: dtype) -> ir.Value:
    """f32 register (exact in `dt`) -> the format's bits (i16 or i8)."""
    if _floats is not None:
        return _floats.encode(b, x, dt.name)
    return _fallback_encode(b, x, dt)


def decode(b: ir.IRBuilder, bits: ir.Value, dt: dtype) -> ir.Value:
    """The format's bits -> f32 register."""
    if _floats is not None:
        return _floats.decode(b, bits, dt.name)
    return _fallback_decode(b, bits, dt)


def tf32_truncate(b: ir.IRBuilder, x: ir.Value) -> ir.Value:
    """Keep the top 10 mantissa bits of an f32 (what tensor cores read of a tf32 operand)."""
    if _floats is not None:
        return _floats.tf32_truncate(b, x)
    bits = b.bitcast(x, _I32)
    return b.bitcast(b.and_(bits, ir.Constant(_I32, 0xFFFFE000)), _F32)


_MATHLIB_UNARY = ("exp", "exp2", "log", "log2", "sin", "cos", "tanh", "erf", "sqrt", "rsqrt")
_INTRINSIC_UNARY = {"exp": "llvm.exp", "exp2": "llvm.exp2", "log": "llvm.log", "log2": "llvm.log2",
                    "sin": "llvm.sin", "cos": "llvm.cos", "sqrt": "llvm.sqrt", "tanh": "llvm.tanh"}
_LIBM_UNARY = {"erf": "erf"}


def unary(b: ir.IRBuilder, name: str, x: ir.Value) -> ir.Value:
    """math.<name> on an f32 or f64 register."""
    if _mathlib is not None and name in _MATHLIB_UNARY and _mathlib_supports(x.type):
        return getattr(_mathlib, name)(b, x)
    if name == "rsqrt":
        return b.fdiv(ir.Constant(x.type, 1.0), unary(b, "sqrt", x))
    suffix = "f32" if x.type == _F32 else "f64"
    if name in _INTRINSIC_UNARY:
        fn = _declare(b.module, f"{_INTRINSIC_UNARY[name]}.{suffix}", x.type, [x.type])
    else:
        libm = _LIBM_UNARY[name] + ("f" if x.type == _F32 else "")
        fn = _declare(b.module, libm, x.type, [x.type])
    return b.call(fn, [x])


def pow(b: ir.IRBuilder, x: ir.Value, y: ir.Value) -> ir.Value:
    if _mathlib is not None and _mathlib_supports(x.type):
        return _mathlib.pow(b, x, y)
    suffix = "f32" if x.type == _F32 else "f64"
    return b.call(_declare(b.module, f"llvm.pow.{suffix}", x.type, [x.type, x.type]), [x, y])


def _mathlib_supports(ty: ir.Type) -> bool:
    supports = getattr(_mathlib, "supports", None)
    return supports(ty) if supports is not None else ty == _F32


def _declare(module: ir.Module, name: str, ret: ir.Type, args: list[ir.Type]) -> ir.Function:
    fn = module.globals.get(name)
    return fn if fn is not None else ir.Function(module, ir.FunctionType(ret, args), name=name)


def _fallback_encode(b: ir.IRBuilder, x: ir.Value, dt: dtype) -> ir.Value:
    if dt.name == "fp16":
        return b.bitcast(b.fptrunc(x, _HALF), _I16)
    if dt.name == "bf16":  # round to nearest even on the top 16 bits; NaN stays NaN
        bits = b.bitcast(x, _I32)
        lsb = b.and_(b.lshr(bits, ir.Constant(_I32, 16)), ir.Constant(_I32, 1))
        rounded = b.lshr(b.add(b.add(bits, ir.Constant(_I32, 0x7FFF)), lsb), ir.Constant(_I32, 16))
        is_nan = b.fcmp_unordered("uno", x, x)
        nan = b.or_(b.lshr(bits, ir.Constant(_I32, 16)), ir.Constant(_I32, 0x40))
        return b.trunc(b.select(is_nan, nan, rounded), _I16)
    raise NotImplementedError(f"{dt.name} needs jit.codegen.floats")


def _fallback_decode(b: ir.IRBuilder, bits: ir.Value, dt: dtype) -> ir.Value:
    if dt.name == "fp16":
        return b.fpext(b.bitcast(bits, _HALF), _F32)
    if dt.name == "bf16":
        return b.bitcast(b.shl(b.zext(bits, _I32), ir.Constant(_I32, 16)), _F32)
    raise NotImplementedError(f"{dt.name} needs jit.codegen.floats")
