"""Fusion: which tile values are never stored, and the per-element expressions that compute them inline.

A pure elementwise op or index remap whose single use is in the same block, by an op that reads its
operands element by element, is *fused*: the consumer's loop computes it at each index it needs
(`element`), recursing through fused producers. Constants, splats and aranges are always fused (they
cost less to recompute than to load). Everything else is materialised once into a stack buffer.
"""

from __future__ import annotations

import llvmlite.ir as ir
import numpy as np

from dsl.dtypes import dtype
from dsl.ir.core import Function, Operation, Value
from dsl.ir.ops import OPS
from jit.codegen import numerics
from jit.codegen.llvm_types import I32, I64, constant, is_narrow_float
from jit.codegen.ops_elementwise import ELEMENTWISE

REMAPS = ("arith.constant", "tile.arange", "tile.splat", "tile.broadcast", "tile.expand_dims",
          "tile.permute", "tile.flip")
ALWAYS_FUSED = frozenset({"arith.constant", "tile.arange", "tile.splat"})
# integer and pointer ops cheap enough to recompute in every consumer (index and mask arithmetic)
INDEX_OPS = frozenset({"tile.broadcast", "tile.expand_dims", "tile.permute", "tile.flip", "tile.addptr",
                       "arith.add", "arith.sub", "arith.mul", "arith.and", "arith.or", "arith.xor", "arith.shl",
                       "arith.shr", "arith.min", "arith.max", "arith.cmp", "arith.select", "arith.not",
                       "arith.neg", "arith.cast"})
MAX_INDEX_COST = 24
FUSABLE = frozenset(REMAPS) | frozenset(name for name, info in OPS.items() if info.elementwise)
# ops that read their tile operands element by element (or materialise them where they are)
CONSUMERS = FUSABLE | {"tile.load", "tile.store", "tile.atomic", "tile.atomic_cas", "tile.reduce", "tile.scan",
                       "tile.dot", "tile.reshape", "tile.join", "tile.cat", "tile.gather", "tile.sort",
                       "tile.histogram", "tile.print", "tile.assert"}


def users(func: Function) -> dict[Value, list[Operation]]:
    """Every value's using ops, once per operand slot (an op using a value twice appears twice)."""
    table: dict[Value, list[Operation]] = {}
    for op in func.walk():
        for operand in op.operands:
            table.setdefault(operand, []).append(op)
    return table


def fused_values(func: Function, users: dict[Value, list[Operation]]) -> set[Value]:
    """The tile values computed inline by their consumer instead of being stored."""
    fused = set()
    index_cost: dict[Value, int] = {}
    for op in func.walk():
        if op.name not in FUSABLE or len(op.results) != 1 or op.result.type.is_scalar:
            continue
        value = op.result
        if op.name in ALWAYS_FUSED:
            fused.add(value)
            index_cost[value] = 1
            continue
        cost = _index_cost(op, index_cost)
        if cost is not None:  # index arithmetic: recomputing keeps addresses affine in the loop variable
            fused.add(value)
            index_cost[value] = cost
            continue
        mine = users.get(value, [])
        if len(mine) == 1 and mine[0].parent is op.parent and mine[0].name in CONSUMERS:
            fused.add(value)
    return fused


def _index_cost(op: Operation, known: dict[Value, int]) -> int | None:
    """Size of the expression if `op` is cheap integer/pointer arithmetic on other index expressions."""
    if op.name not in INDEX_OPS or op.result.type.dtype.is_floating():
        return None
    cost = 1
    for operand in op.operands:
        if operand.type.is_scalar:
            continue
        if operand not in known:
            return None
        cost += known[operand]
    return cost if cost <= MAX_INDEX_COST else None


def element(lw, value: Value, idx: list[ir.Value]) -> ir.Value:
    """The register value of `value` at index `idx` (i64 per dim); scalars ignore the index."""
    if value.type.is_scalar:
        return lw.scalars[value]
    buf = lw.buffers.get(value)
    if buf is not None:
        return buf.load(lw.b, idx)
    return compute(lw, value.op, idx)


def compute(lw, op: Operation, idx: list[ir.Value]) -> ir.Value:
    """Evaluate a pure op at one index from its operands' elements."""
    remap = _REMAPS.get(op.name)
    if remap is not None:
        return remap(lw, op, idx)
    return ELEMENTWISE[op.name](lw, op, [element(lw, v, idx) for v in op.operands])


def emit_pure(lw, op: Operation) -> None:
    """Definition-site lowering of elementwise ops and remaps: SSA for scalars, nothing when fused,
    a view when the operand is stored and the op only reindexes, else one loop into a new buffer."""
    result = op.result
    if result.type.is_scalar:
        lw.scalars[result] = compute(lw, op, [])
        return
    if result in lw.fused:
        return
    view = _VIEWS.get(op.name)
    if view is not None and op.operands and op.operands[0] in lw.buffers:
        lw.bind(result, view(op, lw.buffers[op.operands[0]]), owned=False)
        return
    buf = lw.new_buffer(result.type)
    lw.fill(buf, lambda idx: compute(lw, op, idx))
    lw.bind(result, buf, owned=True)


def constant_value(lw, dt: dtype, value) -> ir.Value:
    """A register constant, rounded to narrow formats."""
    if is_narrow_float(dt):
        return numerics.round_to(lw.b, ir.Constant(ir.FloatType(), float(np.float32(value))), dt)
    return constant(dt, value)


def _constant(lw, op, idx):
    return constant_value(lw, op.result.type.dtype, op.attrs["value"])


def _arange(lw, op, idx):
    start = op.attrs["start"]
    value = lw.b.trunc(idx[0], I32)
    return lw.b.add(value, ir.Constant(I32, start), flags=["nsw"]) if start else value


def _splat(lw, op, idx):
    return lw.scalars[op.operands[0]]


def source_index(lw, op: Operation, idx: list[ir.Value]) -> list[ir.Value]:
    """For ops that only reindex (broadcast, expand_dims, permute, flip): the operand's index."""
    return _INDEX_MAPS[op.name](lw, op, idx)


def _broadcast_index(lw, op, idx):
    zero = ir.Constant(I64, 0)
    return [zero if s == 1 else i for s, i in zip(op.operands[0].type.shape, idx)]


def _expand_dims_index(lw, op, idx):
    axis = op.attrs["axis"]
    return idx[:axis] + idx[axis + 1:]


def _permute_index(lw, op, idx):
    src_idx = [None] * len(idx)
    for i, o in enumerate(op.attrs["order"]):
        src_idx[o] = idx[i]
    return src_idx


def _flip_index(lw, op, idx):
    axis = op.attrs["axis"]
    n = op.result.type.shape[axis]
    return idx[:axis] + [lw.b.sub(ir.Constant(I64, n - 1), idx[axis], flags=["nsw"])] + idx[axis + 1:]


_INDEX_MAPS = {
    "tile.broadcast": _broadcast_index,
    "tile.expand_dims": _expand_dims_index,
    "tile.permute": _permute_index,
    "tile.flip": _flip_index,
}


def _reindex(lw, op, idx):
    return element(lw, op.operands[0], source_index(lw, op, idx))


_REMAPS = {
    "arith.constant": _constant,
    "tile.arange": _arange,
    "tile.splat": _splat,
    **{name: _reindex for name in _INDEX_MAPS},
}


def _view_broadcast(op, buf):
    return buf.view(op.result.type.shape, [0 if s == 1 else st for s, st in zip(buf.shape, buf.strides)])


def _view_expand_dims(op, buf):
    axis = op.attrs["axis"]
    return buf.view(op.result.type.shape, buf.strides[:axis] + (0,) + buf.strides[axis:])


def _view_permute(op, buf):
    return buf.view(op.result.type.shape, [buf.strides[o] for o in op.attrs["order"]])


def _view_flip(op, buf):
    axis = op.attrs["axis"]
    strides = list(buf.strides)
    offset = buf.offset + (buf.shape[axis] - 1) * strides[axis]
    strides[axis] = -strides[axis]
    return buf.view(buf.shape, strides, offset)


_VIEWS = {
    "tile.broadcast": _view_broadcast,
    "tile.expand_dims": _view_expand_dims,
    "tile.permute": _view_permute,
    "tile.flip": _view_flip,
}
