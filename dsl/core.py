"""The values kernel code manipulates: `tensor` (an IR value with a type) and `constexpr`.

Operators on tensors dispatch to `dsl.semantic`, which applies Triton's typing rules and emits IR
into the kernel being compiled. Compile-time values are plain Python objects inside the frontend;
`constexpr` exists for annotations (`BLOCK: tl.constexpr`) and for globals (`X = tl.constexpr(4)`).
"""

from __future__ import annotations

import contextvars
from collections.abc import Callable

from dsl.dtypes import dtype
from dsl.ir.core import TileType, Value

ACTIVE_SEMANTIC: contextvars.ContextVar = contextvars.ContextVar("wavetile_semantic")
"""The `dsl.semantic.Semantic` of the kernel being built, which tensor operators call (it sets this
itself); kept here so that this module needs no import of semantic, which imports it."""

MEMBERS: dict[str, Callable] = {}
"""Tensor methods by name (`x.sum(1)`, `x.reshape(...)`): dsl.language registers them here."""


def active_semantic():
    """The Semantic object in use; an error outside a kernel."""
    try:
        return ACTIVE_SEMANTIC.get()
    except LookupError:
        raise RuntimeError("triton.language functions can only be called inside a @jit function") from None


class constexpr:
    """A compile-time value. As an annotation it marks a parameter specialised on its value."""

    def __init__(self, value):
        self.value = value.value if isinstance(value, constexpr) else value

    def __repr__(self) -> str:
        return f"constexpr[{self.value!r}]"

    def __index__(self) -> int:
        return self.value

    def __bool__(self) -> bool:
        return bool(self.value)

    def __eq__(self, other) -> bool:
        return self.value == unwrap(other)

    def __hash__(self) -> int:
        return hash(self.value)

    def __call__(self, *args, **kwargs):
        return self.value(*args, **kwargs)

    def __getattr__(self, name):
        return getattr(self.value, name)


def unwrap(value):
    """The Python value inside a constexpr (or the value itself)."""
    return value.value if isinstance(value, constexpr) else value


class block_shape(tuple):
    """A tensor's shape: a tuple of ints that also equals the list Triton's `tensor.shape` is
    (`tl.static_assert(x.shape == [BLOCK])`) and concatenates with lists."""

    __slots__ = ()

    def __eq__(self, other) -> bool:
        if isinstance(other, list):
            other = tuple(unwrap(v) for v in other)
        return tuple.__eq__(self, other)

    def __ne__(self, other) -> bool:
        return not self == other

    __hash__ = tuple.__hash__

    def __add__(self, other) -> block_shape:
        return block_shape(tuple(self) + tuple(other))

    def __radd__(self, other) -> block_shape:
        return block_shape(tuple(other) + tuple(self))


class tensor:
    """A value inside a kernel: a scalar (shape ()) or an N-d block."""

    def __init__(self, handle: Value):
        self.handle = handle

    @property
    def type(self) -> TileType:
        return self.handle.type

    @property
    def dtype(self) -> dtype:
        return self.handle.type.dtype

    @property
    def shape(self) -> block_shape:
        return block_shape(self.handle.type.shape)

    @property
    def numel(self) -> int:
        return self.handle.type.numel

    @property
    def T(self) -> tensor:
        return _s().permute(self, _swap_last(self.type.rank))

    def __repr__(self) -> str:
        return f"tensor({self.type})"

    def __bool__(self):
        raise TypeError("the truth value of a tensor is only known when the kernel runs; "
                        "use it in an `if` of its own, or tl.where")

    def __iter__(self):
        raise TypeError("tensors cannot be iterated over in a kernel")

    def __index__(self):
        raise TypeError("a tensor is not a compile-time integer; "
                        "this needs a tl.constexpr value")

    # arithmetic: reflected forms swap operands
    def __add__(self, o): return _s().binary("add", self, o)
    def __radd__(self, o): return _s().binary("add", o, self)
    def __sub__(self, o): return _s().binary("sub", self, o)
    def __rsub__(self, o): return _s().binary("sub", o, self)
    def __mul__(self, o): return _s().binary("mul", self, o)
    def __rmul__(self, o): return _s().binary("mul", o, self)
    def __truediv__(self, o): return _s().truediv(self, o)
    def __rtruediv__(self, o): return _s().truediv(o, self)
    def __floordiv__(self, o): return _s().floordiv(self, o)
    def __rfloordiv__(self, o): return _s().floordiv(o, self)
    def __mod__(self, o): return _s().mod(self, o)
    def __rmod__(self, o): return _s().mod(o, self)
    def __pow__(self, o): return _s().pow(self, o)
    def __rpow__(self, o): return _s().pow(o, self)
    def __and__(self, o): return _s().bitwise("and", self, o)
    def __rand__(self, o): return _s().bitwise("and", o, self)
    def __or__(self, o): return _s().bitwise("or", self, o)
    def __ror__(self, o): return _s().bitwise("or", o, self)
    def __xor__(self, o): return _s().bitwise("xor", self, o)
    def __rxor__(self, o): return _s().bitwise("xor", o, self)
    def __lshift__(self, o): return _s().shift("shl", self, o)
    def __rlshift__(self, o): return _s().shift("shl", o, self)
    def __rshift__(self, o): return _s().shift("shr", self, o)
    def __rrshift__(self, o): return _s().shift("shr", o, self)
    def __neg__(self): return _s().neg(self)
    def __pos__(self): return self
    def __invert__(self): return _s().invert(self)
    def __abs__(self): return _s().unary_math("abs", self)
    def __lt__(self, o): return _s().compare("lt", self, o)
    def __le__(self, o): return _s().compare("le", self, o)
    def __gt__(self, o): return _s().compare("gt", self, o)
    def __ge__(self, o): return _s().compare("ge", self, o)
    def __eq__(self, o): return _s().compare("eq", self, o)  # type: ignore[override]
    def __ne__(self, o): return _s().compare("ne", self, o)  # type: ignore[override]
    __hash__ = object.__hash__

    def logical_and(self, o): return _s().logical("and", self, o)
    def logical_or(self, o): return _s().logical("or", self, o)

    def __getitem__(self, index):
        return _s().subscript(self, index)

    # tensor methods (the `member` functions of triton.language)
    def to(self, dtype, fp_downcast_rounding=None, bitcast=False):
        return _s().cast(self, unwrap(dtype), unwrap(fp_downcast_rounding), unwrap(bitcast))

    def __getattr__(self, name):
        fn = MEMBERS.get(name)
        if fn is None:
            raise AttributeError(f"tensor has no attribute {name!r}")
        return lambda *args, **kwargs: fn(self, *args, **kwargs)


def _swap_last(rank: int) -> list[int]:
    order = list(range(rank))
    if rank >= 2:
        order[-1], order[-2] = order[-2], order[-1]
    return order


_s = active_semantic
