"""arith.cast and arith.bitcast: one table keyed by (source class, destination class).

Conversions to narrow floats avoid double rounding: an f64 (or an integer, which widens exactly to
f64) is first narrowed to f32 with round-to-odd, which makes the final rounding to fp16/bf16/fp8
correct. Float -> int saturates and maps NaN to 0 (llvm.fpto*i.sat), as the op table says.
"""

from __future__ import annotations

from collections.abc import Callable

import llvmlite.ir as ir

from dsl.dtypes import dtype
from jit.codegen import numerics
from jit.codegen.llvm_types import F32, F64, I32, I64, intrinsic, is_narrow_float, register_type


def cast(lw, x: ir.Value, src: dtype, dst: dtype, rounding: str = "rtne") -> ir.Value:
    """Value conversion of one register from `src` to `dst`."""
    if src == dst and src.name == dst.name:
        return x
    return _CASTS[(_class(src), _class(dst))](lw.b, x, src, dst, rounding)


def bitcast(lw, x: ir.Value, src: dtype, dst: dtype) -> ir.Value:
    """Reinterpret the bits; narrow floats pass through their encoding."""
    if src == dst and src.name == dst.name:
        return x
    return _from_bits(lw.b, _to_bits(lw.b, x, src), dst)


def _class(dt: dtype) -> str:
    if dt.is_ptr():
        return "ptr"
    if dt.is_bool():
        return "bool"
    return "float" if dt.is_floating() else "int"


def _int_to_int(b, x, src, dst, rounding):
    to = register_type(dst)
    if to.width < x.type.width:
        return b.trunc(x, to)
    if to.width > x.type.width:
        return b.sext(x, to) if src.is_int_signed() else b.zext(x, to)
    return x


def _to_bool(b, x, src, dst, rounding):
    if src.is_floating():
        return b.fcmp_unordered("!=", x, ir.Constant(x.type, 0.0))
    if src.is_ptr():
        x = b.ptrtoint(x, I64)
    return b.icmp_unsigned("!=", x, ir.Constant(x.type, 0))


def _int_to_float(b, x, src, dst, rounding):
    convert = b.sitofp if src.is_int_signed() else b.uitofp
    if not is_narrow_float(dst):
        return convert(x, register_type(dst))
    return numerics.round_to(b, f64_to_f32(b, convert(x, F64), "rto"), dst, "rtne")


def _float_to_int(b, x, src, dst, rounding):
    to = register_type(dst)
    name = "llvm.fptosi.sat" if dst.is_int_signed() else "llvm.fptoui.sat"
    return b.call(intrinsic(b.module, name, to, [x.type], [to, x.type]), [x])


def _float_to_float(b, x, src, dst, rounding):
    if src.primitive_bitwidth == 64:
        if dst.primitive_bitwidth == 32:
            return f64_to_f32(b, x, rounding)
        return numerics.round_to(b, f64_to_f32(b, x, "rto" if rounding == "rtne" else "rtz"), dst, rounding)
    if dst.primitive_bitwidth == 64:
        return b.fpext(x, F64)
    if is_narrow_float(dst):
        return numerics.round_to(b, x, dst, rounding)
    return x  # narrow -> fp32, or between formats of which the value is exact


def _ptr_to_int(b, x, src, dst, rounding):
    return b.ptrtoint(x, register_type(dst))


def _int_to_ptr(b, x, src, dst, rounding):
    return b.inttoptr(x, register_type(dst))


def _ptr_to_ptr(b, x, src, dst, rounding):
    return b.bitcast(x, register_type(dst))


def _bool_to_float(b, x, src, dst, rounding):
    return b.uitofp(x, register_type(dst))


_CASTS: dict[tuple[str, str], Callable] = {
    ("int", "int"): _int_to_int,
    ("bool", "int"): _int_to_int,
    ("int", "bool"): _to_bool,
    ("float", "bool"): _to_bool,
    ("ptr", "bool"): _to_bool,
    ("int", "float"): _int_to_float,
    ("bool", "float"): _bool_to_float,
    ("float", "int"): _float_to_int,
    ("float", "float"): _float_to_float,
    ("ptr", "int"): _ptr_to_int,
    ("int", "ptr"): _int_to_ptr,
    ("bool", "ptr"): _int_to_ptr,
    ("ptr", "ptr"): _ptr_to_ptr,
}


def f64_to_f32(b: ir.IRBuilder, x: ir.Value, rounding: str) -> ir.Value:
    """Narrow a double: 'rtne' (fptrunc), 'rtz' (toward zero) or 'rto' (round to odd, for a later rounding)."""
    nearest = b.fptrunc(x, F32)
    if rounding == "rtne":
        return nearest
    back = b.fpext(nearest, F64)
    fabs = intrinsic(b.module, "llvm.fabs", F64, [F64])
    overshoot = b.fcmp_ordered(">", b.call(fabs, [back]), b.call(fabs, [x]))  # false for NaN
    bits = b.bitcast(nearest, I32)
    bits = b.select(overshoot, b.sub(bits, ir.Constant(I32, 1)), bits)  # one ulp toward zero
    if rounding == "rto":
        inexact = b.fcmp_ordered("!=", back, x)
        bits = b.select(inexact, b.or_(bits, ir.Constant(I32, 1)), bits)
    return b.bitcast(bits, F32)


def _to_bits(b, x, dt):
    if is_narrow_float(dt):
        return numerics.encode(b, x, dt)
    if dt.is_floating():
        return b.bitcast(x, ir.IntType(dt.primitive_bitwidth))
    if dt.is_ptr():
        return b.ptrtoint(x, I64)
    return x


def _from_bits(b, bits, dt):
    if is_narrow_float(dt):
        return numerics.decode(b, bits, dt)
    if dt.is_floating():
        return b.bitcast(bits, register_type(dt))
    if dt.is_ptr():
        return b.inttoptr(bits, register_type(dt))
    return bits
