"""The math library's LLVM backend: `jit.mathlib`'s algorithms emitted as straight-line LLVM IR.

`FloatOps` implements `jit.mathlib.FloatArithmetic` on an IRBuilder; the emitters below (`exp(b, x)`,
...) run the algorithms on it. They take an f32 or f64 value (or a vector of them) and return the same
type; `supports(ty)` says which types those are. Loops of them vectorise: no calls, only intrinsics
LLVM vectorises (fma, fabs, floor, rint, sqrt, copysign). The interpreter runs the same algorithms on
numpy (jit.interp.float_ops), so both give the same bits.
"""

from __future__ import annotations

from collections.abc import Callable

import llvmlite.ir as ir

from jit import mathlib as algorithms
from jit.mathlib import FloatArithmetic

F32 = ir.FloatType()
F64 = ir.DoubleType()


def _element(ty: ir.Type) -> ir.Type:
    return ty.element if isinstance(ty, ir.VectorType) else ty


def supports(ty: ir.Type) -> bool:
    """True for the types the emitters accept: float, double, and vectors of them."""
    return _element(ty) in (F32, F64)


def int_type_like(ty: ir.Type) -> ir.Type:
    """The integer type of the same width and shape as float type `ty` (i32 for float, <8 x i64> ...)."""
    width = {F32: 32, F64: 64, ir.HalfType(): 16}[_element(ty)]
    if isinstance(ty, ir.VectorType):
        return ir.VectorType(ir.IntType(width), ty.count)
    return ir.IntType(width)


def const(ty: ir.Type, value: float | int) -> ir.Constant:
    """A constant of scalar or vector type `ty` (vectors get `value` in every lane).

    Integers are wrapped to the type's width, so 0xFFFFFFFF is a valid i32 constant.
    """
    elem = _element(ty)
    if isinstance(elem, ir.IntType):
        value = int(value) & ((1 << elem.width) - 1)
        if value >= 1 << (elem.width - 1):
            value -= 1 << elem.width
        scalar = ir.Constant(elem, value)
    else:
        scalar = ir.Constant(elem, float(value))
    if isinstance(ty, ir.VectorType):
        return ir.Constant(ty, [scalar] * ty.count)
    return scalar


def _mangle(ty: ir.Type) -> str:
    # llvmlite 0.50's VectorType has no intrinsic_name, so the overload suffix is spelled here
    elem = _element(ty)
    name = {F32: "f32", F64: "f64"}.get(elem) or f"i{elem.width}"
    return f"v{ty.count}{name}" if isinstance(ty, ir.VectorType) else name


def intrinsic(b: ir.IRBuilder, name: str, *args: ir.Value) -> ir.Value:
    """Call LLVM intrinsic `name` ("llvm.fma", ...) overloaded on, and returning, the first argument's type."""
    ty = args[0].type
    full = f"{name}.{_mangle(ty)}"
    fn = b.module.globals.get(full)
    if fn is None:
        fn = ir.Function(b.module, ir.FunctionType(ty, [a.type for a in args]), name=full)
    return b.call(fn, list(args))


class FloatOps(FloatArithmetic):
    """`FloatArithmetic` that emits LLVM IR on one float type (scalar or vector) through an IRBuilder.

    Python numbers become constants: of the float type in float methods, of the same-width integer
    type in integer methods. jit.codegen.floats uses it too, for the narrow formats' rounding.
    """

    def __init__(self, b: ir.IRBuilder, ty: ir.Type) -> None:
        if not supports(ty):
            raise TypeError(f"math emitters take float or double values, not {ty}")
        self.b = b
        self.ty = ty
        self.ity = int_type_like(ty)
        self.is64 = _element(ty) == F64

    # operand coercion
    def f(self, x: ir.Value | float) -> ir.Value:
        return x if isinstance(x, ir.Value) else const(self.ty, x)

    def i(self, x: ir.Value | int) -> ir.Value:
        return x if isinstance(x, ir.Value) else const(self.ity, x)

    # float arithmetic
    def add(self, x, y):
        return self.b.fadd(self.f(x), self.f(y))

    def sub(self, x, y):
        return self.b.fsub(self.f(x), self.f(y))

    def mul(self, x, y):
        return self.b.fmul(self.f(x), self.f(y))

    def div(self, x, y):
        return self.b.fdiv(self.f(x), self.f(y))

    def neg(self, x):
        return self.b.fneg(self.f(x))

    def fma(self, x, y, z):
        return intrinsic(self.b, "llvm.fma", self.f(x), self.f(y), self.f(z))

    def abs(self, x):
        return intrinsic(self.b, "llvm.fabs", self.f(x))

    def rint(self, x):
        return intrinsic(self.b, "llvm.rint", self.f(x))

    def floor(self, x):
        return intrinsic(self.b, "llvm.floor", self.f(x))

    def trunc(self, x):
        return intrinsic(self.b, "llvm.trunc", self.f(x))

    def sqrt(self, x):
        return intrinsic(self.b, "llvm.sqrt", self.f(x))

    def copysign(self, mag, sign):
        return intrinsic(self.b, "llvm.copysign", self.f(mag), self.f(sign))

    # comparisons (ordered: false when an operand is NaN) and selects
    def cmp(self, op: str, x, y):
        return self.b.fcmp_ordered(op, self.f(x), self.f(y))

    def ult(self, x, y):
        return self.b.fcmp_unordered("<", self.f(x), self.f(y))

    def isnan(self, x):
        return self.b.fcmp_unordered("uno", self.f(x), self.f(x))

    def select(self, cond, x, y):
        """cond ? x : y on floats."""
        return self.b.select(cond, self.f(x), self.f(y))

    def iselect(self, cond, x, y):
        return self.b.select(cond, self.i(x), self.i(y))

    def and_(self, p, q):
        return self.b.and_(p, q)

    def or_(self, p, q):
        return self.b.or_(p, q)

    def not_(self, p):
        return self.b.not_(p)

    # bit manipulation
    def bits(self, x):
        return self.b.bitcast(self.f(x), self.ity)

    def from_bits(self, n):
        return self.b.bitcast(self.i(n), self.ty)

    def iadd(self, x, y):
        return self.b.add(self.i(x), self.i(y))

    def isub(self, x, y):
        return self.b.sub(self.i(x), self.i(y))

    def iand(self, x, y):
        return self.b.and_(self.i(x), self.i(y))

    def ior(self, x, y):
        return self.b.or_(self.i(x), self.i(y))

    def ixor(self, x, y):
        return self.b.xor(self.i(x), self.i(y))

    def shl(self, x, y):
        return self.b.shl(self.i(x), self.i(y))

    def lshr(self, x, y):
        return self.b.lshr(self.i(x), self.i(y))

    def ashr(self, x, y):
        return self.b.ashr(self.i(x), self.i(y))

    def icmp(self, op: str, x, y):
        return self.b.icmp_signed(op, self.i(x), self.i(y))

    def sitofp(self, n):
        return self.b.sitofp(self.i(n), self.ty)

    # f32 <-> f64 of the same shape
    def wide(self) -> FloatOps:
        ty = ir.VectorType(F64, self.ty.count) if isinstance(self.ty, ir.VectorType) else F64
        return FloatOps(self.b, ty)

    def widen(self, x):
        return self.b.fpext(x, self.wide().ty)

    def narrow(self, x):
        return self.b.fptrunc(x, self.ty)


Emitter = Callable[[ir.IRBuilder, ir.Value], ir.Value]


def _emitter(algorithm: Callable) -> Emitter:
    def emit(b: ir.IRBuilder, x: ir.Value) -> ir.Value:
        return algorithm(FloatOps(b, x.type), x)

    emit.__name__ = emit.__qualname__ = algorithm.__name__
    emit.__doc__ = algorithm.__doc__
    return emit


UNARY: dict[str, Emitter] = {name: _emitter(fn) for name, fn in algorithms.UNARY.items()}
"""Every one-argument emitter by name (pow takes two)."""


def pow(b: ir.IRBuilder, x: ir.Value, y: ir.Value) -> ir.Value:
    """x^y with C99 special cases (see jit.mathlib.pow)."""
    if x.type != y.type:
        raise TypeError(f"pow operands differ in type: {x.type} and {y.type}")
    return algorithms.pow(FloatOps(b, x.type), x, y)
