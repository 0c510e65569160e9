"""`tl.extra.libdevice` / `tl.extra.cuda.libdevice`: the libdevice functions kernels use most.

Every unary `math.*` op of the op table is here under its name, also the ones written nowhere below
(`__getattr__` makes them from the table), so adding a math op needs no line in this module.
"""

from __future__ import annotations

from collections.abc import Callable

from dsl.core import tensor
from dsl.ir.ops import UNARY_MATH
from dsl.language import abs, ceil, cos, erf, exp, exp2, floor, log, log2, rsqrt, sin, sqrt, tanh  # noqa: F401
from dsl.semantic import current


def pow(x, y) -> tensor:
    return current().pow(x, y)


def rint(x) -> tensor:
    return current().unary_math("rint", x)


def round(x) -> tensor:
    """Round half away from zero (C round), unlike rint."""
    s = current()
    x = s.to_tensor(x)
    return s.cast(s.unary_math("trunc", x + s.where(x >= 0, 0.5, -0.5)), x.dtype)


def trunc(x) -> tensor:
    return current().unary_math("trunc", x)


def isnan(x) -> tensor:
    return current().compare("ne", x, x)


def isinf(x) -> tensor:
    s = current()
    return s.compare("eq", s.unary_math("abs", x), float("inf"))


def isfinited(x) -> tensor:
    s = current()
    return s.compare("lt", s.unary_math("abs", x), float("inf"))


isfinite = isfinited


def fast_expf(x) -> tensor:
    return exp(x)


def fast_logf(x) -> tensor:
    return log(x)


def div_rn(x, y) -> tensor:
    return current().truediv(x, y)


def fmod(x, y) -> tensor:
    return current().mod(x, y)


def signbit(x) -> tensor:
    s = current()
    x = s.to_tensor(x)
    from dsl import dtypes as T

    bits = s.cast(x, T.int32 if x.dtype.primitive_bitwidth == 32 else T.int64, bitcast=True)
    return s.compare("lt", bits, 0)


def log1p(x) -> tensor:
    return log(1.0 + x)


def expm1(x) -> tensor:
    return exp(x) - 1.0


def sigmoid(x) -> tensor:
    return 1.0 / (1.0 + exp(-x))


_FROM_TABLE: dict[str, Callable] = {}


def __getattr__(name: str) -> Callable:
    """libdevice.<name> for a unary math op of the table that has no function above."""
    if name not in UNARY_MATH:
        raise AttributeError(f"module 'dsl.libdevice' has no attribute {name!r}")
    if name not in _FROM_TABLE:
        def fn(x) -> tensor:
            return current().unary_math(name, x)

        fn.__name__ = fn.__qualname__ = name
        fn.__doc__ = f"math.{name} of the tile IR, elementwise (dsl/ir/ops.py)."
        _FROM_TABLE[name] = fn
    return _FROM_TABLE[name]
