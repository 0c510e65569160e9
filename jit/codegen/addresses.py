"""Pointer tiles seen as one scalar base plus a per-lane element offset.

Most pointer tiles are `base + offsets` built from a splatted scalar pointer through addptr and index
remaps. Checking such an access needs only the min and max of the integer offsets (native 32-bit
vector min/max) and the base's alignment, instead of min/max over 64-bit addresses lane by lane.
"""

from __future__ import annotations

import llvmlite.ir as ir

from dsl.ir.core import Value
from dsl.ir.ops import OP, Trait, with_trait
from jit.codegen.elements import source_index
from jit.codegen.llvm_types import I64

REINDEX = with_trait(Trait.REINDEX)


def pointer_base(lw, value: Value) -> Value | None:
    """The scalar pointer every lane of a fused pointer expression is offset from, or None."""
    if value.type.is_scalar:
        return value
    if value not in lw.fused:
        return None
    op = value.op
    if op.name == OP.TILE_SPLAT:
        return op.operands[0]
    if op.name in REINDEX or op.name == OP.TILE_ADDPTR:
        return pointer_base(lw, op.operands[0])
    return None


def offset_terms(value: Value) -> list[Value]:
    """The integer offsets added along the way from the base (call only when pointer_base succeeded)."""
    terms = []
    while not value.type.is_scalar:
        op = value.op
        if op.name == OP.TILE_SPLAT:
            break
        if op.name == OP.TILE_ADDPTR:
            terms.append(op.operands[1])
        value = op.operands[0]
    return terms


def element_offset(lw, value: Value, idx: list[ir.Value], wide: bool) -> ir.Value | None:
    """The lane's offset from the base, in elements (None for 0); `wide` sums the terms as i64."""
    if value.type.is_scalar:
        return None
    op = value.op
    if op.name == OP.TILE_SPLAT:
        return None
    if op.name in REINDEX:
        return element_offset(lw, op.operands[0], source_index(lw, op, idx), wide)
    inner = element_offset(lw, op.operands[0], idx, wide)
    offset = lw.element(op.operands[1], idx)
    if wide and offset.type.width < 64:
        signed = op.operands[1].type.dtype.is_int_signed()
        offset = lw.b.sext(offset, I64) if signed else lw.b.zext(offset, I64)
    return offset if inner is None else lw.b.add(inner, offset)


def offset_key(value: Value) -> tuple:
    """Equal keys mean equal per-lane offsets (whatever the bases): the addptr offsets and index remaps
    met on the way down, by identity."""
    key: list = [value.type.shape]
    while not value.type.is_scalar:
        op = value.op
        if op.name == OP.TILE_SPLAT:
            break
        if op.name == OP.TILE_ADDPTR:
            key.append(op.operands[1])
        else:
            key.append((op.name, op.operands[0].type.shape, tuple(sorted(op.attrs.items()))))
        value = op.operands[0]
    return tuple(key)
