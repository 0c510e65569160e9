"""Materialised tiles: a stack allocation seen through a strided view.

A view (offset + strides, strides may be 0 or negative) lets broadcast, permute, flip, split, reshape
and reduce results share their source's storage instead of copying it. `root` names the allocation,
so code that overwrites buffers (loop-carried values at a yield) can tell when two views overlap.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

import llvmlite.ir as ir

from dsl.dtypes import dtype
from jit.codegen.llvm_types import from_slot, to_slot
from jit.codegen.loops import linear_index, row_major_strides


@dataclass(frozen=True)
class Buffer:
    ptr: ir.Value  # slot_type(dtype)*
    dtype: dtype
    shape: tuple[int, ...]
    strides: tuple[int, ...]
    offset: int = 0
    root: int = 0  # identity of the allocation

    @property
    def contiguous(self) -> bool:
        return self.offset == 0 and self.strides == row_major_strides(self.shape)

    def address(self, b: ir.IRBuilder, idx: Sequence[ir.Value]) -> ir.Value:
        return b.gep(self.ptr, [linear_index(b, idx, self.strides, self.offset)], inbounds=True)

    def load(self, b: ir.IRBuilder, idx: Sequence[ir.Value]) -> ir.Value:
        return from_slot(b, b.load(self.address(b, idx)), self.dtype)

    def store(self, b: ir.IRBuilder, idx: Sequence[ir.Value], value: ir.Value) -> None:
        b.store(to_slot(b, value, self.dtype), self.address(b, idx))

    def view(self, shape: Sequence[int], strides: Sequence[int], offset: int | None = None) -> Buffer:
        return replace(self, shape=tuple(shape), strides=tuple(strides),
                       offset=self.offset if offset is None else offset)

    def reshaped(self, shape: Sequence[int]) -> Buffer:
        """Same elements in row-major order; only valid on a contiguous buffer."""
        assert self.contiguous
        return self.view(shape, row_major_strides(shape), 0)
