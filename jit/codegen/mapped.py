"""tile.map_elementwise: a scalar region (with its own control flow) inlined into a loop over the tile.

The region is emitted once, inside a scalar loop over groups of `pack` consecutive row-major elements;
its arguments are the group's elements of each operand and its yields are stored into the result tiles.
"""

from __future__ import annotations

import llvmlite.ir as ir

from dsl.ir.core import Operation
from dsl.ir.ops import OP
from jit.codegen.llvm_types import I64
from jit.codegen.loops import loop_nest


def emit_map_elementwise(lw, op: Operation) -> None:
    pack = op.attrs["pack"]
    shape = op.results[0].type.shape
    outputs = [lw.new_buffer(r.type) for r in op.results]
    region = op.regions[0]
    b = lw.b
    numel = 1
    for d in shape:
        numel *= d

    def group(first: list[ir.Value]) -> None:
        flat = first[0] if first else ir.Constant(I64, 0)
        indices = [_unravel(b, b.add(b.mul(flat, ir.Constant(I64, pack)), ir.Constant(I64, j)), shape)
                   for j in range(pack)]
        scalars = [lw.element(operand, idx) for operand in op.operands for idx in indices]
        values = lw.inline_region(region, scalars)
        for r, out in enumerate(outputs):
            for j, idx in enumerate(indices):
                out.store(b, idx, values[r * pack + j])

    loop_nest(b, [numel // pack] if shape else [], group, scalar=True)
    for value, out in zip(op.results, outputs):
        lw.define(value, out)


EMITTERS = {OP.TILE_MAP_ELEMENTWISE: emit_map_elementwise}


def _unravel(b: ir.IRBuilder, flat: ir.Value, shape: tuple[int, ...]) -> list[ir.Value]:
    """Row-major index of element `flat` (constant divisors: shifts, since block dims are powers of 2)."""
    idx = []
    for d in reversed(shape):
        idx.append(b.urem(flat, ir.Constant(I64, d)))
        flat = b.udiv(flat, ir.Constant(I64, d))
    return idx[::-1]
