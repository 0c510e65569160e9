"""Elementwise ops of the interpreter: one table, op name -> function(op, *operand arrays) -> array.

Operands are numpy arrays in register form (see numerics.register_dtype); region bodies of
reductions run through the same table on whole slices, so every function broadcasts.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from dsl.dtypes import dtype
from dsl.ir.core import Operation
from dsl.ir.ops import OP
from jit import abi, mathlib
from jit.interp import float_ops
from jit.interp import numerics as N

Elementwise = Callable[..., np.ndarray]


def _dt(op: Operation) -> dtype:
    return op.operands[0].type.dtype


def _out(op: Operation, value) -> np.ndarray:
    return np.asarray(value).astype(N.register_dtype(op.result.type.dtype), copy=False)


def _arith(on_int: Callable, on_float: Callable, exact: bool = False) -> Elementwise:
    def run(op, *args):
        dt = _dt(op)
        with np.errstate(all="ignore"):
            if dt.is_floating():
                value = on_float(*args)
                return _out(op, value if exact else N.round_narrow(value, dt) if N.is_narrow(dt) else value)
            return _out(op, on_int(dt, *args))

    return run


def _minus_one(dt: dtype, like: np.ndarray) -> np.ndarray:
    return np.full(like.shape, -1, np.int64).astype(N.register_dtype(dt))


def _int_div(dt: dtype, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """C division: truncating; x / 0 = -1, INT_MIN / -1 = INT_MIN."""
    a, b = np.broadcast_arrays(a, b)
    zero = b == 0
    safe = np.where(zero, 1, b).astype(b.dtype)
    if dt.is_int_signed():
        safe = np.where(b == -1, 1, safe).astype(b.dtype)
        q = np.floor_divide(a, safe)
        r = a - q * safe
        q = np.where((r != 0) & ((a < 0) != (safe < 0)), q + 1, q).astype(a.dtype)
        q = np.where(b == -1, (np.zeros_like(a) - a), q).astype(a.dtype)  # wraps for INT_MIN
    else:
        q = a // safe
    return np.where(zero, _minus_one(dt, a), q).astype(a.dtype)


def _int_rem(dt: dtype, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """C remainder: sign of the dividend; x % 0 = x."""
    a, b = np.broadcast_arrays(a, b)
    q = _int_div(dt, a, b)
    r = (a - q * np.where(b == 0, 0, b).astype(b.dtype)).astype(a.dtype)
    return np.where(b == 0, a, r).astype(a.dtype)


def _float_min(propagate: bool, smaller: bool) -> Callable:
    def run(a, b):
        a, b = np.broadcast_arrays(a, b)
        pick_a = (a < b) if smaller else (a > b)
        both_zero = (a == 0) & (b == 0)
        zero_pick = np.signbit(a) if smaller else ~np.signbit(a)
        pick_a = np.where(both_zero, zero_pick, pick_a)
        value = np.where(pick_a, a, b)
        if propagate:
            return np.where(np.isnan(a) | np.isnan(b), a + b, value)
        value = np.where(np.isnan(a), b, value)
        return np.where(np.isnan(b), a, value)

    return run


def _minmax(smaller: bool) -> Elementwise:
    def run(op, a, b):
        dt = _dt(op)
        if dt.is_floating():
            return _out(op, _float_min(bool(op.attrs["propagate_nan"]), smaller)(a, b))
        return _out(op, np.minimum(a, b) if smaller else np.maximum(a, b))

    return run


def _unsigned(x: np.ndarray) -> np.ndarray:
    return x.astype(N._UINT[x.dtype.itemsize]) if x.dtype.kind == "i" else x


def _shl(op, a, c):
    width = _dt(op).primitive_bitwidth
    if _dt(op).is_bool():
        return _out(op, np.where(_unsigned(c) >= 1, False, a))
    far = _unsigned(c) >= width
    with np.errstate(all="ignore"):
        return _out(op, np.where(far, 0, np.left_shift(a, np.where(far, 0, c).astype(a.dtype))))


def _shr(op, a, c):
    dt = _dt(op)
    width = dt.primitive_bitwidth
    if dt.is_bool():
        return _out(op, np.where(_unsigned(c) >= 1, False, a))
    far = _unsigned(c) >= width
    if dt.is_int_signed():
        amount = np.where(far, width - 1, c).astype(a.dtype)
        return _out(op, np.right_shift(a, amount))
    return _out(op, np.where(far, 0, np.right_shift(a, np.where(far, 0, c).astype(a.dtype))))


def _umulhi(op, a, c):
    dt = _dt(op)
    width = dt.primitive_bitwidth
    a, c = np.broadcast_arrays(a, c)
    if width <= 32:
        wide = np.int64 if dt.is_int_signed() else np.uint64
        product = a.astype(wide) * c.astype(wide)
        return _out(op, (product >> wide(width)).astype(a.dtype))
    hi = [(int(x) * int(y)) >> width for x, y in zip(a.ravel().tolist(), c.ravel().tolist())]
    mask = (1 << width) - 1
    return _out(op, np.array([h & mask for h in hi], dtype=np.uint64).reshape(a.shape).view(a.dtype))


def _fma(op, a, b, c):
    dt = _dt(op)
    if dt.is_floating():
        return _out(op, N.fma(a, b, c, dt))
    with np.errstate(all="ignore"):
        return _out(op, a * b + c)


_ORDER = {"eq": np.equal, "ne": np.not_equal, "lt": np.less, "le": np.less_equal, "gt": np.greater,
          "ge": np.greater_equal}


def _cmp(op, a, b):
    return np.asarray(_ORDER[op.attrs["predicate"]](a, b), dtype=np.bool_)


def _not(op, a):
    return _out(op, np.logical_not(a) if _dt(op).is_bool() else np.invert(a))


def _neg(op, a):
    with np.errstate(all="ignore"):
        return _out(op, -a if _dt(op).is_floating() else (np.zeros_like(a) - a))


def _bitwise(fn: Callable) -> Elementwise:
    return lambda op, a, b: _out(op, fn(a, b))


# -- casts: one table keyed by (source class, destination class)

def _class(dt: dtype) -> str:
    if dt.is_ptr():
        return "ptr"
    if dt.is_bool():
        return "bool"
    return "float" if dt.is_floating() else "int"


def _int_to_float(x, src, dst, rounding):
    if dst.is_fp64():
        return x.astype(np.float64)
    if dst.is_fp32():
        return x.astype(np.float32)
    return N.round_narrow(N.f64_to_f32(x.astype(np.float64), "rto"), dst, "rtne")


def _float_to_int(x, src, dst, rounding):
    info = np.iinfo(dst.to_numpy())
    with np.errstate(all="ignore"):
        t = np.trunc(x.astype(np.float64))
        low, high = float(info.min), float(info.max)
        out = np.where(np.isnan(t), 0, np.clip(t, low, high))
        result = out.astype(dst.to_numpy())
        result = np.where(t >= high, info.max, result)  # high may round up in f64 (int64/uint64)
        return np.where(t <= low, info.min, result).astype(dst.to_numpy())


def _float_to_float(x, src, dst, rounding):
    if src.is_fp64():
        if dst.is_fp64():
            return x
        if dst.is_fp32():
            return N.f64_to_f32(x, rounding)
        return N.round_narrow(N.f64_to_f32(x, "rto" if rounding == "rtne" else "rtz"), dst, rounding)
    if dst.is_fp64():
        return x.astype(np.float64)
    if N.is_narrow(dst):
        return N.round_narrow(x, dst, rounding)
    return x.astype(np.float32)


_CASTS: dict[tuple[str, str], Callable] = {
    ("int", "int"): lambda x, s, d, r: x.astype(d.to_numpy()),
    ("bool", "int"): lambda x, s, d, r: x.astype(d.to_numpy()),
    ("int", "bool"): lambda x, s, d, r: x != 0,
    ("float", "bool"): lambda x, s, d, r: x != 0,
    ("ptr", "bool"): lambda x, s, d, r: x != 0,
    ("int", "float"): _int_to_float,
    ("bool", "float"): lambda x, s, d, r: x.astype(N.register_dtype(d)),
    ("float", "int"): _float_to_int,
    ("float", "float"): _float_to_float,
    ("ptr", "int"): lambda x, s, d, r: x.astype(d.to_numpy()),
    ("int", "ptr"): lambda x, s, d, r: x.astype(np.int64),
    ("bool", "ptr"): lambda x, s, d, r: x.astype(np.int64),
    ("ptr", "ptr"): lambda x, s, d, r: x,
}


def cast_value(x: np.ndarray, src: dtype, dst: dtype, rounding: str = "rtne") -> np.ndarray:
    with np.errstate(all="ignore"):
        return np.asarray(_CASTS[(_class(src), _class(dst))](np.asarray(x), src, dst, rounding),
                          N.register_dtype(dst))


def _cast(op, x):
    return cast_value(x, _dt(op), op.result.type.dtype, op.attrs.get("rounding", "rtne"))


def _bitcast(op, x):
    return _out(op, N.from_bits(N.to_bits(x, _dt(op)), op.result.type.dtype))


def _addptr(op, ptr, offset):
    size = max(1, op.result.type.dtype.element_ty.itemsize)
    wide = offset.astype(np.int64)
    with np.errstate(all="ignore"):
        address = (ptr.astype(np.int64) + wide * np.int64(size)).astype(np.int64)
    if op.operands[1].type.dtype.primitive_bitwidth < 64:
        return address
    limit = abi.WRAP_LIMIT_BYTES // size  # as compiled: a distance that wraps 64 bits leaves every buffer
    return np.where((wide < -limit) | (wide >= limit), np.int64(abi.WRAPPED_ADDRESS), address)


# -- math: jit.mathlib's algorithms, run on numpy (the compiled code runs them as LLVM IR): the same bits


def _math(name: str) -> Elementwise:
    def run(op, *args):
        dt = _dt(op)
        value = float_ops.evaluate(name, *args, fp64=dt.is_fp64())
        return _out(op, N.round_narrow(value, dt) if N.is_narrow(dt) else value)

    return run


def _rounding(fn: Callable) -> Elementwise:
    return lambda op, x: _out(op, fn(x) if _dt(op).is_floating() else x)


def _abs(op, x):
    with np.errstate(all="ignore"):
        if _dt(op).is_int_unsigned():
            return x
        return _out(op, np.abs(x))


ELEMENTWISE: dict[str, Elementwise] = {
    OP.ARITH_ADD: _arith(lambda dt, a, b: a + b, lambda a, b: a + b),
    OP.ARITH_SUB: _arith(lambda dt, a, b: a - b, lambda a, b: a - b),
    OP.ARITH_MUL: _arith(lambda dt, a, b: a * b, lambda a, b: a * b),
    OP.ARITH_DIV: _arith(_int_div, lambda a, b: a / b),
    OP.ARITH_REM: _arith(_int_rem, lambda a, b: np.fmod(a, b), exact=True),
    OP.ARITH_MIN: _minmax(True),
    OP.ARITH_MAX: _minmax(False),
    OP.ARITH_AND: _bitwise(np.bitwise_and),
    OP.ARITH_OR: _bitwise(np.bitwise_or),
    OP.ARITH_XOR: _bitwise(np.bitwise_xor),
    OP.ARITH_SHL: _shl,
    OP.ARITH_SHR: _shr,
    OP.ARITH_UMULHI: _umulhi,
    OP.ARITH_NEG: _neg,
    OP.ARITH_NOT: _not,
    OP.ARITH_FMA: _fma,
    OP.ARITH_CMP: _cmp,
    OP.ARITH_SELECT: lambda op, c, a, b: _out(op, np.where(c, a, b)),
    OP.ARITH_CAST: _cast,
    OP.ARITH_BITCAST: _bitcast,
    OP.TILE_ADDPTR: _addptr,
    OP.MATH_ABS: _abs,
    OP.MATH_POW: _math("pow"),
    OP.MATH_FLOOR: _rounding(np.floor),
    OP.MATH_CEIL: _rounding(np.ceil),
    OP.MATH_TRUNC: _rounding(np.trunc),
    OP.MATH_RINT: _rounding(np.rint),
    **{f"math.{name}": _math(name) for name in mathlib.UNARY},
}
