"""The math library's numpy backend: `jit.mathlib`'s algorithms computed on numpy arrays.

The interpreter and eager mode evaluate `math.exp`, `math.sin`, ... through `evaluate`, which runs the
very algorithms the code generator emits as LLVM IR (jit.codegen.mathlib), one IEEE operation at a
time in the same format, so the results are the compiled ones bit for bit. numpy has every operation
the algorithms use except a fused multiply-add, which jit.interp.numerics computes exactly.
"""

from __future__ import annotations

import operator

import numpy as np

from jit import mathlib
from jit.interp import numerics as N

_COMPARE = {"<": operator.lt, ">": operator.gt, "<=": operator.le, ">=": operator.ge, "==": operator.eq,
            "!=": operator.ne}


def evaluate(name: str, *args: np.ndarray, fp64: bool) -> np.ndarray:
    """math.<name> (a key of jit.mathlib.UNARY, or "pow") on arrays of one shape, in fp64 or fp32."""
    ops = NumpyFloatOps(fp64)
    shape = np.shape(args[0])
    flat = [np.ascontiguousarray(a, dtype=ops.ft).reshape(-1) for a in args]
    algorithm = mathlib.pow if name == "pow" else mathlib.UNARY[name]
    with np.errstate(all="ignore"):
        return np.asarray(algorithm(ops, *flat), dtype=ops.ft).reshape(shape)


class NumpyFloatOps(mathlib.FloatArithmetic):
    """`FloatArithmetic` on numpy arrays of float32 or float64 (and their same-width integers)."""

    def __init__(self, is64: bool) -> None:
        self.is64 = is64
        self.ft = np.float64 if is64 else np.float32
        self.it = np.int64 if is64 else np.int32
        self.ut = np.uint64 if is64 else np.uint32

    # operand coercion: Python numbers become scalars of the format (integers wrap to its width)
    def f(self, x):
        return x if isinstance(x, (np.ndarray, np.generic)) else self.ft(x)

    def i(self, x):
        if isinstance(x, (np.ndarray, np.generic)):
            return x
        return self.ut(int(x) & int(np.iinfo(self.ut).max)).view(self.it)

    def add(self, x, y):
        return self.f(x) + self.f(y)

    def sub(self, x, y):
        return self.f(x) - self.f(y)

    def mul(self, x, y):
        return self.f(x) * self.f(y)

    def div(self, x, y):
        return self.f(x) / self.f(y)

    def neg(self, x):
        return -self.f(x)

    def fma(self, x, y, z):
        x, y, z = np.broadcast_arrays(*(np.asarray(self.f(v)) for v in (x, y, z)))
        return N.fma64(x, y, z) if self.is64 else N.fma32(x, y, z)

    def abs(self, x):
        return np.abs(self.f(x))

    def rint(self, x):
        return np.rint(self.f(x))

    def floor(self, x):
        return np.floor(self.f(x))

    def trunc(self, x):
        return np.trunc(self.f(x))

    def sqrt(self, x):
        return np.sqrt(self.f(x))

    def copysign(self, mag, sign):
        return np.copysign(self.f(mag), self.f(sign))

    def cmp(self, op: str, x, y):
        x, y = self.f(x), self.f(y)
        result = _COMPARE[op](x, y)
        if op == "!=":  # ordered: NaN compares false
            result = result & ~np.isnan(x) & ~np.isnan(y)
        return result

    def ult(self, x, y):
        return ~(self.f(x) >= self.f(y))

    def select(self, cond, x, y):
        return np.where(cond, self.f(x), self.f(y)).astype(self.ft, copy=False)

    def iselect(self, cond, x, y):
        return np.where(cond, self.i(x), self.i(y)).astype(self.it, copy=False)

    def and_(self, p, q):
        return np.logical_and(p, q)

    def or_(self, p, q):
        return np.logical_or(p, q)

    def not_(self, p):
        return np.logical_not(p)

    def bits(self, x):
        return np.asarray(self.f(x)).view(self.it)

    def from_bits(self, n):
        return np.asarray(self.i(n)).view(self.ft)

    def iadd(self, x, y):
        return self.i(x) + self.i(y)

    def isub(self, x, y):
        return self.i(x) - self.i(y)

    def iand(self, x, y):
        return self.i(x) & self.i(y)

    def ior(self, x, y):
        return self.i(x) | self.i(y)

    def ixor(self, x, y):
        return self.i(x) ^ self.i(y)

    def shl(self, x, y):
        return np.left_shift(self.i(x), self.i(y))

    def lshr(self, x, y):
        unsigned = np.asarray(self.i(x)).view(self.ut)
        return np.right_shift(unsigned, np.asarray(self.i(y)).astype(self.ut)).view(self.it)

    def ashr(self, x, y):
        return np.right_shift(self.i(x), self.i(y))

    def icmp(self, op: str, x, y):
        return _COMPARE[op](self.i(x), self.i(y))

    def sitofp(self, n):
        return np.asarray(self.i(n)).astype(self.ft)

    def wide(self) -> NumpyFloatOps:
        return NumpyFloatOps(True)

    def widen(self, x):
        return np.asarray(self.f(x)).astype(np.float64)

    def narrow(self, x):
        return np.asarray(x).astype(self.ft)
