"""Records on every tile.reduce how a GPU splits its axis over threads, so that sums round as Triton's do.

Triton reduces in three stages (jit.layout.reduction_split): each thread folds its own elements in
register order, lanes combine by butterfly shuffles, then warps through shared memory. Floating-point
sums depend on that order. The split follows the operand's blocked layout: Triton's default for
`num_warps` warps of WARP_SIZE lanes, with 16 bytes per thread along the last dim when the values come
from a load that is contiguous along it (the coalescing pass vectorises such loads and the reduction
inherits the load's layout), but never more than the tile's elements per thread; one element per thread
otherwise. Not modeled: Triton also narrows the vector when it cannot prove the rows 16-byte aligned. The pass sets
`split = (per_thread, lanes, warps)`; the code generator and the interpreter add in that order.
tests/jit/test_gpu_numerics.py replays sums recorded on an H200 and matches them bit for bit.
"""

from __future__ import annotations

import math

from dsl.ir.core import Function, Value
from jit.layout import default_layout, reduction_split

WARP_SIZE = 32  # Triton's threads per warp on NVIDIA and MUSA GPUs alike
_SAME_VALUES = ("tile.broadcast", "tile.expand_dims", "tile.splat")


def assign_reduction_order(func: Function, num_warps: int) -> None:
    for op in func.walk():
        if op.name == "tile.reduce" and op.operands[0].type.shape:
            shape = op.operands[0].type.shape
            # as Triton's coalescing pass: at most 16 bytes, and no more than the tile has per thread
            vector = min(_vector(op.operands[0]), max(1, math.prod(shape) // (num_warps * WARP_SIZE)))
            layout = default_layout(shape, num_warps, WARP_SIZE, vector)
            op.attrs["split"] = reduction_split(layout, op.attrs["axis"])


def _vector(value: Value) -> int:
    """Elements per thread along the last dim: 16 bytes of the load the values come from, if it is
    contiguous along that dim."""
    load = _source_load(value, set())
    if load is None or load.operands[0].type.is_scalar:
        return 1
    if _last_dim_step(load.operands[0]) != 1:
        return 1
    return max(1, 16 // load.result.type.dtype.itemsize)


def _source_load(value: Value, seen: set):
    """The first tile.load found walking back through elementwise ops and casts."""
    op = value.op
    if op is None or id(op) in seen:
        return None
    seen.add(id(op))
    if op.name == "tile.load":
        return op
    if not op.info.elementwise:
        return None
    for operand in op.operands:
        if not operand.type.is_scalar:
            found = _source_load(operand, seen)
            if found is not None:
                return found
    return None


def _last_dim_step(value: Value) -> int | None:
    """How much the value (an offset or pointer tile) grows from one element to the next along its last dim,
    in elements, when that is the same everywhere; None when unknown."""
    op = value.op
    if value.type.is_scalar or (value.type.shape and value.type.shape[-1] == 1):
        return 0
    if op is None:
        return None
    if op.name == "tile.arange":
        return 1
    if op.name == "arith.constant":
        return 0 if isinstance(op.attrs["value"], (int, float)) else None
    if op.name in _SAME_VALUES:
        source = op.operands[0]
        if op.name == "tile.expand_dims" and op.attrs["axis"] in (-1, value.type.rank - 1):
            return 0
        return _last_dim_step(source)
    if op.name in ("tile.addptr", "arith.add", "arith.sub"):
        steps = [_last_dim_step(v) for v in op.operands]
        if None in steps:
            return None
        return steps[0] - steps[1] if op.name == "arith.sub" else steps[0] + steps[1]
    if op.name == "arith.mul":
        (a, b), (step_a, step_b) = op.operands, [_last_dim_step(v) for v in op.operands]
        if step_a == 0 and step_b == 0:
            return 0
        factor_a, factor_b = _constant(a), _constant(b)
        if step_a is not None and factor_b is not None:
            return step_a * factor_b
        if step_b is not None and factor_a is not None:
            return step_b * factor_a
        return None
    if op.name == "arith.cast":
        return _last_dim_step(op.operands[0])
    return None


def _constant(value: Value) -> int | None:
    op = value.op
    while op is not None and op.name in _SAME_VALUES:
        value = op.operands[0]
        op = value.op
    if op is not None and op.name == "arith.constant" and isinstance(op.attrs["value"], int):
        return op.attrs["value"]
    return None
