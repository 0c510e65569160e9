"""Records on every tile.reduce how a GPU splits its axis over threads, so that sums round as Triton's do.

Triton reduces in three stages (jit.layout.reduction_split): each thread folds its own elements in
register order, lanes combine by butterfly shuffles, then warps through shared memory. Floating-point
sums depend on that order. The split follows the operand's blocked layout: Triton's default for
`num_warps` warps of WARP_SIZE lanes, with `size_per_thread` elements per thread along the last dim when the
values come from a load, as the reduction inherits the load's layout (its size_per_thread, set by
jit.passes.assign_vector_widths, at most the tile's elements per thread). Values not loaded get one element
per thread. The pass sets `split = (per_thread, lanes, warps)`; the code generator and the interpreter add in
that order. It also records the layout's `size_per_thread` along the last dim, from which the profiler lays out
the partials a cross-warp reduction exchanges through shared memory (jit.shared_model.reduction_exchange).
tests/jit/test_gpu_numerics.py replays sums recorded on an H200 and matches them bit for bit.
"""

from __future__ import annotations

import math

from dsl.ir.core import Function, Value
from dsl.ir.ops import OP
from jit.layout import default_layout, reduction_split

WARP_SIZE = 32  # Triton's threads per warp on NVIDIA and MUSA GPUs alike


def assign_reduction_order(func: Function, num_warps: int) -> None:
    for op in func.walk():
        if op.name == OP.TILE_REDUCE and op.operands[0].type.shape:
            shape = op.operands[0].type.shape
            per_thread = max(1, math.prod(shape) // (num_warps * WARP_SIZE))
            load = _source_load(op.operands[0], set())
            run = 1 if load is None else load.attrs.get("size_per_thread", 1)
            layout = default_layout(shape, num_warps, WARP_SIZE, min(run, per_thread))
            op.attrs["split"] = reduction_split(layout, op.attrs["axis"])
            op.attrs["size_per_thread"] = layout.vector


def _source_load(value: Value, seen: set):
    """The first tile.load found walking back through elementwise ops and casts."""
    op = value.op
    if op is None or id(op) in seen:
        return None
    seen.add(id(op))
    if op.name == OP.TILE_LOAD:
        return op
    if not op.info.elementwise:
        return None
    for operand in op.operands:
        if not operand.type.is_scalar:
            found = _source_load(operand, seen)
            if found is not None:
                return found
    return None
