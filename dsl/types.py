"""Triton's type names that kernel code spells: `tl.const`, `tl.void`, `tl.block_type`, `tl.tuple_type`,
`tl.constexpr_type`. wavetile's tensors carry a TileType; these names map Triton's views onto it."""

from __future__ import annotations

from dsl.dtypes import dtype
from dsl.ir.core import TileType


class const:
    """Annotation of a kernel parameter pointing to read-only data: loads work, a store is a compile error."""


void = dtype("void", "void", "void", 0)


class _BlockTypeMeta(type):
    def __instancecheck__(cls, obj) -> bool:
        return isinstance(obj, TileType) and bool(obj.shape)


class block_type(metaclass=_BlockTypeMeta):
    """Triton's type of a tensor with a shape: `block_type(tl.float32, [16])` is that TileType."""

    def __new__(cls, element_ty: dtype, shape) -> TileType:  # type: ignore[misc]
        shape = tuple(int(getattr(d, "value", d)) for d in shape)
        if not shape:
            raise ValueError("block_type needs a non-empty shape")
        return TileType(element_ty, shape)


class constexpr_type:
    """The type of a compile-time constant (Triton's `constexpr_type(value)`)."""

    def __init__(self, value):
        self.value = value

    def __eq__(self, other) -> bool:
        return isinstance(other, constexpr_type) and self.value == other.value

    def __hash__(self) -> int:
        return hash(("constexpr", repr(self.value)))

    def __repr__(self) -> str:
        return f"constexpr_type[{self.value}]"


class tuple_type:
    """The type of a tuple of values: its element types and optional field names."""

    def __init__(self, types, fields=None):
        self.types = list(types)
        self.fields = list(fields) if fields is not None else [""] * len(self.types)

    def __iter__(self):
        return iter(self.types)

    def __len__(self) -> int:
        return len(self.types)

    def __getitem__(self, index):
        return self.types[index]

    def __eq__(self, other) -> bool:
        return isinstance(other, tuple_type) and self.types == other.types and self.fields == other.fields

    def __hash__(self) -> int:
        return hash(tuple(map(str, self.types)))

    def __repr__(self) -> str:
        return "[" + ", ".join(map(str, self.types)) + "]"


class tensor_descriptor_type:
    """The type of a `tl.make_tensor_descriptor` result, with Triton's fields: the block's TileType and
    the tuple types of the global shape and strides."""

    def __init__(self, block_type: TileType, shape_type: tuple_type, strides_type: tuple_type):
        self.block_type = block_type
        self.shape_type = shape_type
        self.strides_type = strides_type

    def __eq__(self, other) -> bool:
        return (isinstance(other, tensor_descriptor_type) and self.block_type == other.block_type
                and self.shape_type == other.shape_type and self.strides_type == other.strides_type)

    def __hash__(self) -> int:
        return hash(("tensor_descriptor", self.block_type, hash(self.shape_type), hash(self.strides_type)))

    def __repr__(self) -> str:
        return f"tensor_descriptor<{self.block_type}>"
