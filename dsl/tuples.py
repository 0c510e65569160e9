"""Triton's `tl.tuple` and `tl.slice`: the Python tuples and slices kernel code already uses, under
Triton's names.

Inside a kernel a tuple of values is a compile-time Python tuple (the frontend unpacks, indexes,
iterates and inlines it as one), so `tl.tuple` is that same thing, a `tuple` subclass, with what Triton's
class adds: `.type` (a `tl.tuple_type`), slices that stay `tl.tuple`s, named fields, and equality with
lists. `tl.slice(start, stop, step)` is a Python slice, as the frontend makes for `x[None, :]`.
"""

from __future__ import annotations

import builtins

from dsl.core import constexpr, unwrap
from dsl.dtypes import dtype
from dsl.types import constexpr_type, tuple_type


class tuple(builtins.tuple):
    """Triton's tuple of kernel values: `tl.tuple([a, b])`, optionally with its `tuple_type` given."""

    def __new__(cls, args=(), type: tuple_type | builtins.list | None = None) -> tuple:
        self = super().__new__(cls, unwrap(args))
        self._type = tuple_type(type) if isinstance(type, (builtins.list, builtins.tuple)) else type
        return self

    @property
    def type(self) -> tuple_type:
        given = self.__dict__.get("_type")
        if given is not None:
            return given
        return tuple_type([_element_type(i, v) for i, v in enumerate(self)])

    @property
    def values(self) -> builtins.list:
        """Triton's spelling of the elements (`t.values`)."""
        return builtins.list(self)

    def __getitem__(self, index):
        index = unwrap(index)
        if isinstance(index, builtins.slice):
            return tuple(builtins.tuple.__getitem__(self, index))
        return builtins.tuple.__getitem__(self, index)

    def __getattr__(self, name: str):
        given = self.__dict__.get("_type")
        fields = given.fields if given is not None else []
        if name in fields and name:
            return builtins.tuple.__getitem__(self, fields.index(name))
        raise AttributeError(f"tl.tuple has no attribute or field {name!r}")

    def __add__(self, other) -> tuple:
        return tuple([*self, *unwrap(other)])

    def __radd__(self, other) -> tuple:
        return tuple([*unwrap(other), *self])

    def __mul__(self, count) -> tuple:
        return tuple(builtins.tuple(self) * unwrap(count))

    __rmul__ = __mul__

    def __eq__(self, other) -> bool:
        """Triton compares the elements, so a tl.tuple equals the list or tuple of the same values."""
        other = unwrap(other)
        if not isinstance(other, (builtins.list, builtins.tuple)):
            return NotImplemented
        return builtins.tuple(self) == builtins.tuple(other)

    def __ne__(self, other) -> bool:
        equal = self.__eq__(other)
        return equal if equal is NotImplemented else not equal

    __hash__ = builtins.tuple.__hash__

    def __repr__(self) -> str:
        return f"tl.tuple({builtins.list(self)!r})"


def _element_type(position: int, value):
    """An element's type as Triton gives it: a tensor's (or other value's) `.type`, a nested tuple's
    tuple_type, or `constexpr_type` for compile-time constants."""
    if isinstance(value, constexpr):
        value = value.value
    if isinstance(value, (builtins.tuple, builtins.list)):
        return tuple(value).type
    if isinstance(value, (bool, int, float, str, dtype)) or value is None:
        return constexpr_type(value)
    value_type = getattr(value, "type", None)
    if value_type is None:
        raise TypeError(f"tl.tuple: cannot infer the type of element {position} ({builtins.type(value).__name__})")
    return value_type


class _SliceMeta(builtins.type):
    def __instancecheck__(cls, obj) -> bool:
        return isinstance(obj, builtins.slice)


class slice(metaclass=_SliceMeta):
    """Triton's `tl.slice(start, stop, step)`: here the Python slice the frontend makes for `a:b:c`
    (Python's slice cannot be subclassed; every Python slice is an instance of this class)."""

    def __new__(cls, start, stop, step) -> builtins.slice:  # type: ignore[misc]
        return builtins.slice(unwrap(start), unwrap(stop), unwrap(step))
