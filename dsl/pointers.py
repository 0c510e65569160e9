"""Block pointers and tensor descriptors, lowered to pointer tiles and masks.

Triton itself now lowers `make_block_ptr` this way; a descriptor load is a masked gather whose
out-of-bounds elements read the padding value.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from dsl import dtypes as T
from dsl.core import tensor, unwrap
from dsl.ir.core import TileType
from dsl.semantic import current
from dsl.tuples import tuple as tl_tuple
from dsl.types import tensor_descriptor_type


@dataclass(frozen=True)
class block_pointer:
    """A pointer to a block_shape window of a strided tensor at `offsets`."""

    base: tensor
    shape: tuple
    strides: tuple
    offsets: tuple
    block_shape: tuple
    order: tuple

    def flatten(self) -> tuple[list, object]:
        """Run-time parts (so a block pointer can be carried through loops) and how to rebuild it."""
        parts = [self.base, *self.shape, *self.strides, *self.offsets]
        n = len(self.block_shape)

        def rebuild(values):
            base, rest = values[0], values[1:]
            return replace(self, base=base, shape=tuple(rest[:n]), strides=tuple(rest[n:2 * n]),
                           offsets=tuple(rest[2 * n:]))
        return parts, rebuild

    def advance(self, offsets):
        return advance(self, offsets)


def make_block_ptr(base, shape, strides, offsets, block_shape, order) -> block_pointer:
    s = current()
    base = s.to_tensor(base)
    if not base.dtype.is_ptr() or base.shape:
        raise TypeError("make_block_ptr: base must be a scalar pointer")
    block_shape = tuple(int(unwrap(b)) for b in unwrap(block_shape))
    s.check_shape(block_shape)
    n = len(block_shape)
    if not (len(shape) == len(strides) == len(offsets) == n):
        raise ValueError("make_block_ptr: shape, strides, offsets and block_shape must have the same length")
    as64 = [s.cast(s.to_tensor(v), T.int64) for v in (*shape, *strides)]
    offs = [s.cast(s.to_tensor(v), T.int32) for v in offsets]
    return block_pointer(base, tuple(as64[:n]), tuple(as64[n:]), tuple(offs), block_shape,
                         tuple(unwrap(o) for o in unwrap(order)))


def advance(base: block_pointer, offsets) -> block_pointer:
    s = current()
    if len(offsets) != len(base.offsets):
        raise ValueError("advance: one offset per dimension")
    new = tuple(s.binary("add", o, s.cast(s.to_tensor(d), T.int32)) for o, d in zip(base.offsets, offsets))
    return replace(base, offsets=new)


def _pointers_and_mask(base, shape, strides, offsets, block_shape, check_dims):
    s = current()
    rank = len(block_shape)
    ptr = s.broadcast_to(base, block_shape)
    mask = None
    for d in range(rank):
        idx = s.cast(s.arange(0, block_shape[d]), T.int64) + s.cast(s.to_tensor(offsets[d]), T.int64)
        for _ in range(d):
            idx = s.expand_dims(idx, 0)
        for _ in range(rank - d - 1):
            idx = s.expand_dims(idx, idx.type.rank)
        ptr = s.addptr(ptr, s.broadcast_to(idx * strides[d], block_shape))
        if d in check_dims:
            inside = s.logical("and", idx >= 0, idx < shape[d])
            mask = inside if mask is None else s.logical("and", mask, inside)
    if mask is not None:
        mask = s.broadcast_to(mask, block_shape)
    return ptr, mask


def _padding(padding_option, dtype):
    padding_option = unwrap(padding_option) or "zero"
    if padding_option not in ("zero", "nan"):
        raise ValueError(f"padding_option must be 'zero' or 'nan', got {padding_option!r}")
    if padding_option == "nan":
        if not dtype.is_floating():
            raise ValueError("padding_option='nan' needs a floating-point tensor")
        return float("nan")
    return 0


def load_block(bp: block_pointer, boundary_check, padding_option) -> tensor:
    checks = tuple(unwrap(d) for d in unwrap(boundary_check) or ())
    ptr, mask = _pointers_and_mask(bp.base, bp.shape, bp.strides, bp.offsets, bp.block_shape, checks)
    other = _padding(padding_option, bp.base.dtype.element_ty) if mask is not None else None
    return current().load(ptr, mask, other)


def store_block(bp: block_pointer, value, boundary_check) -> None:
    checks = tuple(unwrap(d) for d in unwrap(boundary_check) or ())
    ptr, mask = _pointers_and_mask(bp.base, bp.shape, bp.strides, bp.offsets, bp.block_shape, checks)
    current().store(ptr, value, mask)


@dataclass(frozen=True)
class tensor_descriptor:
    """A 2-5 D global tensor with a fixed block shape; out-of-bounds elements read as padding."""

    base: tensor
    shape: tuple
    strides: tuple
    block_shape: tuple
    padding_option: str = "zero"

    @property
    def dtype(self):
        return self.base.dtype.element_ty

    @property
    def block_type(self) -> TileType:
        return TileType(self.dtype, tuple(self.block_shape))

    @property
    def type(self) -> tensor_descriptor_type:
        """Triton's `desc.type`: the block type and the tuple types of the shape and strides."""
        return tensor_descriptor_type(self.block_type, tl_tuple(self.shape).type, tl_tuple(self.strides).type)

    def _window(self, offsets):
        n = len(self.block_shape)
        if len(offsets) != n:
            raise ValueError(f"expected {n} offsets, but got {len(offsets)}")  # Triton's text
        return _pointers_and_mask(self.base, self.shape, self.strides, offsets, self.block_shape, tuple(range(n)))

    def _stored(self, value, what: str) -> tensor:
        """A stored block must have the block's shape exactly (Triton does not broadcast it)."""
        value = current().to_tensor(value)
        if tuple(value.shape) != tuple(self.block_shape):
            raise ValueError(f"descriptor {what} of a {list(value.shape)} value into a {list(self.block_shape)} "
                             "block: the value must have the block's shape")
        return value

    def load(self, offsets) -> tensor:
        ptr, mask = self._window(offsets)
        return current().load(ptr, mask, _padding(self.padding_option, self.dtype))

    def store(self, offsets, value) -> None:
        value = self._stored(value, "store")
        ptr, mask = self._window(offsets)
        current().store(ptr, value, mask)

    def atomic_add(self, offsets, value) -> tensor:
        value = self._stored(value, "atomic_add")
        ptr, mask = self._window(offsets)
        return current().atomic("add", ptr, value, mask)


def make_tensor_descriptor(base, shape, strides, block_shape, padding_option="zero") -> tensor_descriptor:
    s = current()
    base = s.to_tensor(base)
    if not base.dtype.is_ptr() or base.shape:
        raise TypeError("make_tensor_descriptor: base must be a scalar pointer")
    block_shape = [unwrap(b) for b in unwrap(block_shape)]
    _check_descriptor(base.dtype.element_ty, list(shape), list(strides), block_shape, unwrap(padding_option))
    s.check_shape(block_shape)
    shape = tuple(s.cast(s.to_tensor(v), T.int64) for v in shape)
    strides = tuple(s.cast(s.to_tensor(v), T.int64) for v in strides)
    return tensor_descriptor(base, shape, strides, tuple(block_shape), unwrap(padding_option))


def _check_descriptor(elem: T.dtype, shape: list, strides: list, block_shape: list, padding_option) -> None:
    """Triton's checks of a device-side TMA descriptor, in its order and with its texts (its tests match
    them): rank 1-5, one stride and block dim per dim, >= 16 bytes per block row, unit last stride,
    power-of-2 integer block dims, no NaN padding of integers."""
    ndim = len(shape)
    if not 1 <= ndim <= 5:
        raise ValueError(f"Expected 1 <= ndim <= 5 but got {ndim} dimensions")
    if len(strides) != ndim:
        raise ValueError(f"Expected {ndim} strides but got {len(strides)}")
    if len(block_shape) != ndim:
        raise ValueError(f"Expected block_shape to have {ndim} dimensions but got {len(block_shape)}")
    for i, d in enumerate(block_shape):
        if not isinstance(d, int) or isinstance(d, bool):
            raise TypeError(f"Shape element {i} must have type `constexpr[int]`, got `constexpr[{type(d)}]`")
    elem_size = elem.primitive_bitwidth // 8
    row_bytes = block_shape[-1] * elem_size
    if row_bytes < 16:
        raise ValueError("Descriptor block shape must have at least 16 bytes in the last dimension, but got "
                         f"{block_shape[-1]} * {elem_size} = {row_bytes} bytes")
    last_stride = unwrap(strides[-1])
    if isinstance(last_stride, int) and last_stride != 1:
        raise ValueError(f"Tensor descriptor last dim must be 1 but got {last_stride}")
    for i, d in enumerate(block_shape):
        if d <= 0 or d & (d - 1):
            raise ValueError(f"Shape element {i} must be a power of 2")
    if elem.is_int() and padding_option == "nan":
        raise ValueError("Padding option `nan` is not supported for integer blocks")


def load_tensor_descriptor(desc: tensor_descriptor, offsets) -> tensor:
    return desc.load(offsets)


def store_tensor_descriptor(desc: tensor_descriptor, offsets, value) -> None:
    desc.store(offsets, value)
