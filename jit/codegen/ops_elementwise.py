"""One table: elementwise op name -> the LLVM instructions computing one element.

Emitters take the lowering, the op (for dtypes and attributes) and the operands' register values, and
return the result's register value; scalars and tile elements go through the same rows. The rules are
the op table's (dsl/ir/ops.py): integer division never traps, shifts past the width give 0 or the sign,
narrow floats compute in f32 and round after every inexact op.
"""

from __future__ import annotations

from collections.abc import Callable

import llvmlite.ir as ir

from dsl.dtypes import dtype
from dsl.ir.core import Operation
from dsl.ir.ops import OP
from jit import abi, mathlib
from jit.codegen import numerics
from jit.codegen.casts import bitcast, cast
from jit.codegen.llvm_types import I1, intrinsic, is_narrow_float

Emitter = Callable[["object", Operation, list[ir.Value]], ir.Value]


def _dt(op: Operation) -> dtype:
    return op.operands[0].type.dtype


def _arith(on_int: Callable, on_float: Callable, exact: bool = False) -> Emitter:
    """Integer and float variants of one op; narrow-float results are rounded unless the op is exact."""

    def emit(lw, op: Operation, args: list[ir.Value]) -> ir.Value:
        dt = _dt(op)
        if dt.is_floating():
            value = on_float(lw, op, *args)
            return value if exact or not is_narrow_float(dt) else numerics.round_to(lw.b, value, dt)
        return on_int(lw, op, *args)

    return emit


def _int_only(fn: Callable) -> Emitter:
    return lambda lw, op, args: fn(lw, op, *args)


def _zero(v: ir.Value) -> ir.Constant:
    return ir.Constant(v.type, 0)


def _ones(v: ir.Value) -> ir.Constant:
    return ir.Constant(v.type, -1)


def _int_min(v: ir.Value) -> ir.Constant:
    return ir.Constant(v.type, -(1 << (v.type.width - 1)) if v.type.width > 1 else -1)


def _div_int(lw, op: Operation, a: ir.Value, c: ir.Value) -> ir.Value:
    """Truncating division; x / 0 = -1 (all ones), INT_MIN / -1 = INT_MIN; never a trapping divide."""
    b = lw.b
    by_zero = b.icmp_unsigned("==", c, _zero(c))
    if _dt(op).is_int_signed():
        overflow = b.and_(b.icmp_signed("==", a, _int_min(a)), b.icmp_signed("==", c, _ones(c)))
        safe = b.select(b.or_(by_zero, overflow), ir.Constant(c.type, 1), c)
        return b.select(by_zero, _ones(a), b.sdiv(a, safe))
    safe = b.select(by_zero, ir.Constant(c.type, 1), c)
    return b.select(by_zero, _ones(a), b.udiv(a, safe))


def _rem_int(lw, op: Operation, a: ir.Value, c: ir.Value) -> ir.Value:
    """C remainder; x % 0 = x, INT_MIN % -1 = 0."""
    b = lw.b
    by_zero = b.icmp_unsigned("==", c, _zero(c))
    if _dt(op).is_int_signed():
        overflow = b.and_(b.icmp_signed("==", a, _int_min(a)), b.icmp_signed("==", c, _ones(c)))
        safe = b.select(b.or_(by_zero, overflow), ir.Constant(c.type, 1), c)
        return b.select(by_zero, a, b.srem(a, safe))
    safe = b.select(by_zero, ir.Constant(c.type, 1), c)
    return b.select(by_zero, a, b.urem(a, safe))


def _minmax(kind: str) -> Emitter:
    """kind 'min' or 'max'; floats follow propagate_nan (llvm.minimum vs llvm.minnum)."""

    def on_int(lw, op, a, c):
        signed = _dt(op).is_int_signed()
        pred = "<" if kind == "min" else ">"
        cmp = lw.b.icmp_signed(pred, a, c) if signed else lw.b.icmp_unsigned(pred, a, c)
        return lw.b.select(cmp, a, c)

    def on_float(lw, op, a, c):
        name = {"min": ("llvm.minimum", "llvm.minnum"), "max": ("llvm.maximum", "llvm.maxnum")}[kind]
        fn = intrinsic(lw.module, name[0] if op.attrs["propagate_nan"] else name[1], a.type, [a.type, a.type])
        return lw.b.call(fn, [a, c])

    return _arith(on_int, on_float, exact=True)


def _shl(lw, op, a, c):
    b = lw.b
    too_far = b.icmp_unsigned(">=", c, ir.Constant(c.type, a.type.width))
    return b.select(too_far, _zero(a), b.shl(a, c))


def _shr(lw, op, a, c):
    b = lw.b
    width = ir.Constant(c.type, a.type.width)
    if _dt(op).is_int_signed():
        last = ir.Constant(c.type, a.type.width - 1)
        return b.ashr(a, b.select(b.icmp_unsigned(">=", c, width), last, c))
    return b.select(b.icmp_unsigned(">=", c, width), _zero(a), b.lshr(a, c))


def _umulhi(lw, op, a, c):
    b = lw.b
    wide = ir.IntType(2 * a.type.width)
    ext = b.sext if _dt(op).is_int_signed() else b.zext
    product = b.mul(ext(a, wide), ext(c, wide))
    return b.trunc(b.lshr(product, ir.Constant(wide, a.type.width)), a.type)


def _fma(lw, op, args):
    dt = _dt(op)
    b = lw.b
    a, c, d = args
    if not dt.is_floating():
        return b.add(b.mul(a, c), d)
    value = b.call(intrinsic(lw.module, "llvm.fma", a.type, [a.type] * 3), [a, c, d])
    return numerics.round_to(b, value, dt) if is_narrow_float(dt) else value


_ORDERED = {"eq": "==", "ne": "!=", "lt": "<", "le": "<=", "gt": ">", "ge": ">="}


def _cmp(lw, op, args):
    a, c = args
    b = lw.b
    dt = _dt(op)
    pred = _ORDERED[op.attrs["predicate"]]
    if dt.is_floating():
        if op.attrs["predicate"] == "ne":
            return b.fcmp_unordered("!=", a, c)
        return b.fcmp_ordered(pred, a, c)
    if dt.is_int_signed():
        return b.icmp_signed(pred, a, c)
    return b.icmp_unsigned(pred, a, c)


def _not(lw, op, args):
    return lw.b.xor(args[0], _ones(args[0]) if args[0].type != I1 else ir.Constant(I1, 1))


def _neg(lw, op, args):
    (a,) = args
    return lw.b.fneg(a) if _dt(op).is_floating() else lw.b.sub(_zero(a), a)


_ROUNDING_INTRINSICS = {"floor": "llvm.floor", "ceil": "llvm.ceil", "trunc": "llvm.trunc", "rint": "llvm.rint"}


def _rounding(name: str) -> Emitter:
    def emit(lw, op, args):
        (a,) = args
        if not _dt(op).is_floating():
            return a
        return lw.b.call(intrinsic(lw.module, _ROUNDING_INTRINSICS[name], a.type, [a.type]), [a])

    return emit


def _abs(lw, op, args):
    (a,) = args
    dt = _dt(op)
    if dt.is_floating():
        return lw.b.call(intrinsic(lw.module, "llvm.fabs", a.type, [a.type]), [a])
    if dt.is_int_signed():
        return lw.b.call(intrinsic(lw.module, "llvm.abs", a.type, [a.type, I1]), [a, ir.Constant(I1, 0)])
    return a


def _math(name: str) -> Emitter:
    def emit(lw, op, args):
        dt = _dt(op)
        value = numerics.unary(lw.b, name, args[0])
        return numerics.round_to(lw.b, value, dt) if is_narrow_float(dt) else value

    return emit


def _pow(lw, op, args):
    dt = _dt(op)
    value = numerics.pow(lw.b, *args)
    return numerics.round_to(lw.b, value, dt) if is_narrow_float(dt) else value


def _addptr(lw, op, args):
    ptr, offset = args
    b = lw.b
    off_dt = op.operands[1].type.dtype
    if offset.type.width < 64:
        offset = b.sext(offset, ir.IntType(64)) if off_dt.is_int_signed() else b.zext(offset, ir.IntType(64))
        return b.gep(ptr, [offset])  # 32-bit offsets times the element size cannot wrap 64-bit addresses
    address = b.gep(ptr, [offset])
    if not lw.checks:
        return address
    # a 64-bit offset whose byte distance does not fit would wrap around to an address inside the buffer:
    # such a pointer becomes one no buffer holds, so the bounds check reports the access
    limit = abi.WRAP_LIMIT_BYTES // max(1, op.operands[0].type.dtype.element_ty.itemsize)
    i64 = ir.IntType(64)
    if off_dt.is_int_signed():
        wraps = b.or_(b.icmp_signed("<", offset, ir.Constant(i64, -limit)),
                      b.icmp_signed(">=", offset, ir.Constant(i64, limit)))
    else:
        wraps = b.icmp_unsigned(">=", offset, ir.Constant(i64, limit))
    return b.select(wraps, b.inttoptr(ir.Constant(i64, abi.WRAPPED_ADDRESS), address.type), address)


ELEMENTWISE: dict[str, Emitter] = {
    OP.ARITH_ADD: _arith(lambda lw, op, a, c: lw.b.add(a, c), lambda lw, op, a, c: lw.b.fadd(a, c)),
    OP.ARITH_SUB: _arith(lambda lw, op, a, c: lw.b.sub(a, c), lambda lw, op, a, c: lw.b.fsub(a, c)),
    OP.ARITH_MUL: _arith(lambda lw, op, a, c: lw.b.mul(a, c), lambda lw, op, a, c: lw.b.fmul(a, c)),
    OP.ARITH_DIV: _arith(_div_int, lambda lw, op, a, c: lw.b.fdiv(a, c)),
    OP.ARITH_REM: _arith(_rem_int, lambda lw, op, a, c: lw.b.frem(a, c), exact=True),
    OP.ARITH_MIN: _minmax("min"),
    OP.ARITH_MAX: _minmax("max"),
    OP.ARITH_AND: _int_only(lambda lw, op, a, c: lw.b.and_(a, c)),
    OP.ARITH_OR: _int_only(lambda lw, op, a, c: lw.b.or_(a, c)),
    OP.ARITH_XOR: _int_only(lambda lw, op, a, c: lw.b.xor(a, c)),
    OP.ARITH_SHL: _int_only(_shl),
    OP.ARITH_SHR: _int_only(_shr),
    OP.ARITH_UMULHI: _int_only(_umulhi),
    OP.ARITH_NEG: _neg,
    OP.ARITH_NOT: _not,
    OP.ARITH_FMA: _fma,
    OP.ARITH_CMP: _cmp,
    OP.ARITH_SELECT: lambda lw, op, args: lw.b.select(*args),
    OP.ARITH_CAST: lambda lw, op, args: cast(lw, args[0], op.operands[0].type.dtype, op.result.type.dtype,
                                            op.attrs.get("rounding", "rtne")),
    OP.ARITH_BITCAST: lambda lw, op, args: bitcast(lw, args[0], op.operands[0].type.dtype, op.result.type.dtype),
    OP.TILE_ADDPTR: _addptr,
    OP.MATH_ABS: _abs,
    OP.MATH_POW: _pow,
    **{f"math.{name}": _rounding(name) for name in _ROUNDING_INTRINSICS},
    **{f"math.{name}": _math(name) for name in mathlib.UNARY},  # the math library's algorithms
}
