"""Element expressions: the register value of a tile at one index, recursing through fused producers.

Which values are fused is decided in `fusion`; here a fused value is computed inline at the index its
consumer's loop asks for (broadcast dims read index 0, permute and flip remap indices, expand_dims
drops one), and a stored value is read from its buffer. `emit_pure` is the definition-site lowering
of the ops that can be fused: nothing when fused, a view or one loop into a buffer otherwise.
"""

from __future__ import annotations

import llvmlite.ir as ir
import numpy as np

from dsl.dtypes import dtype
from dsl.ir.core import Operation, Value
from dsl.ir.ops import OP
from jit.codegen import numerics
from jit.codegen.llvm_types import I1, I32, I64, constant, is_narrow_float
from jit.codegen.ops_elementwise import ELEMENTWISE


def element(lw, value: Value, idx: list[ir.Value]) -> ir.Value:
    """The register value of `value` at index `idx` (i64 per dim); scalars ignore the index."""
    if value.type.is_scalar:
        return lw.scalars[value]
    if value in lw.assume_true:
        return ir.Constant(I1, 1)
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
    OP.TILE_BROADCAST: _broadcast_index,
    OP.TILE_EXPAND_DIMS: _expand_dims_index,
    OP.TILE_PERMUTE: _permute_index,
    OP.TILE_FLIP: _flip_index,
}


def _reindex(lw, op, idx):
    return element(lw, op.operands[0], source_index(lw, op, idx))


def _load(lw, op, idx):
    from jit.codegen.memory import load_element  # memory builds on this module

    return load_element(lw, op, idx)


_REMAPS = {
    OP.TILE_LOAD: _load,
    OP.ARITH_CONSTANT: _constant,
    OP.TILE_ARANGE: _arange,
    OP.TILE_SPLAT: _splat,
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
    OP.TILE_BROADCAST: _view_broadcast,
    OP.TILE_EXPAND_DIMS: _view_expand_dims,
    OP.TILE_PERMUTE: _view_permute,
    OP.TILE_FLIP: _view_flip,
}
