"""Records on every tile.reduce how a GPU splits its axis over threads, so that sums round as Triton's do.

Triton reduces in three stages (jit.layout.reduction_split): each thread folds its own elements in
register order, lanes combine by butterfly shuffles, then warps through shared memory. Floating-point
sums depend on that order. The split follows the operand's blocked layout: Triton's default for
`num_warps` warps of WARP_SIZE lanes, with `vector` elements per thread along the last dim when the
values come from a load, as Triton's coalescing pass vectorises loads and the reduction inherits the
load's layout. Like that pass, `vector` is the smallest of: 16 bytes, the run of consecutive addresses
along the last dim, the alignment the pointer is known to have, and the tile's elements per thread.
Contiguity and alignment come from the pointer's construction (a small version of Triton's AxisInfo:
aranges are contiguous, arguments specialised as multiples of 16 are aligned, other runtime ints are
not). Values not loaded get one element per thread. The pass sets `split = (per_thread, lanes, warps)`;
the code generator and the interpreter add in that order. tests/jit/test_gpu_numerics.py replays sums
recorded on an H200 and matches them bit for bit.
"""

from __future__ import annotations

import math

from dsl.ir.core import Function, Value
from dsl.ir.ops import OP, Trait, with_trait
from jit.layout import default_layout, reduction_split

WARP_SIZE = 32  # Triton's threads per warp on NVIDIA and MUSA GPUs alike
_ALIGNED = 16  # bytes: what Triton's specialisation knows of a pointer or int argument that is a multiple of 16
_UNBOUNDED = 1 << 30  # divisibility of 0
_REPEATS = with_trait(Trait.REPEATS)  # the last-dim step and divisibility pass through these


def assign_reduction_order(func: Function, num_warps: int, divisible: frozenset[str] = frozenset()) -> None:
    arguments = {value: name in divisible for name, value in zip(func.arg_names, func.body.args)}
    for op in func.walk():
        if op.name == OP.TILE_REDUCE and op.operands[0].type.shape:
            shape = op.operands[0].type.shape
            per_thread = max(1, math.prod(shape) // (num_warps * WARP_SIZE))
            vector = min(_vector(op.operands[0], arguments), per_thread)
            layout = default_layout(shape, num_warps, WARP_SIZE, vector)
            op.attrs["split"] = reduction_split(layout, op.attrs["axis"])


def _vector(value: Value, arguments: dict) -> int:
    """Elements per thread along the last dim of the load the values come from (1 if they are not loaded)."""
    load = _source_load(value, set())
    if load is None or load.operands[0].type.is_scalar:
        return 1
    itemsize = load.result.type.dtype.itemsize
    step, alignment = _axis_info(load.operands[0], arguments, itemsize)
    if step != 1:
        return 1
    return max(1, min(16 // itemsize, alignment // itemsize, load.result.type.shape[-1]))


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


def _axis_info(value: Value, arguments: dict, scale: int = 1) -> tuple[int | None, int]:
    """(step from one element to the next along the last dim, in elements, or None when unknown; the largest
    power of two known to divide every value where a run along that dim starts). `scale` multiplies the
    divisibility of integer offsets added to a pointer (their element size in bytes)."""
    op = value.op
    flat = value.type.is_scalar or value.type.shape[-1] == 1
    if op is None:  # a kernel argument, or a loop variable
        if value in arguments:
            return 0, (_ALIGNED if arguments[value] else (scale if value.type.dtype.is_ptr() else 1))
        return (0 if flat else None), 1
    name = op.name
    if name == OP.TILE_ARANGE:
        return (0 if flat else 1), _power_of_two(op.attrs["start"])
    if name == OP.ARITH_CONSTANT:
        constant = op.attrs["value"]
        return 0, (_power_of_two(constant) if isinstance(constant, int) else 1)
    if name in _REPEATS:
        step, div = _axis_info(op.operands[0], arguments, scale)
        if name == OP.TILE_EXPAND_DIMS and op.attrs["axis"] in (-1, value.type.rank - 1):
            step = 0
        return (0 if flat else step), div
    if name == OP.ARITH_CAST:
        return _axis_info(op.operands[0], arguments, scale)
    if name in (OP.TILE_ADDPTR, OP.ARITH_ADD, OP.ARITH_SUB):
        offset_scale = op.result.type.dtype.element_ty.itemsize if name == OP.TILE_ADDPTR else scale
        (step_a, div_a), (step_b, div_b) = (_axis_info(op.operands[0], arguments, scale),
                                            _axis_info(op.operands[1], arguments, offset_scale))
        if name == OP.TILE_ADDPTR:
            div_b *= offset_scale
        step = None if None in (step_a, step_b) else (step_a - step_b if name == OP.ARITH_SUB else step_a + step_b)
        return step, math.gcd(div_a, div_b)
    if name == OP.ARITH_MUL:
        (step_a, div_a), (step_b, div_b) = (_axis_info(v, arguments) for v in op.operands)
        factor_a, factor_b = _constant(op.operands[0]), _constant(op.operands[1])
        if step_a == 0 and step_b == 0:
            step = 0
        elif step_a is not None and factor_b is not None:
            step = step_a * factor_b
        elif step_b is not None and factor_a is not None:
            step = step_b * factor_a
        else:
            step = None
        return step, min(_UNBOUNDED, div_a * div_b)
    return (0 if flat else None), 1


def _power_of_two(n: int) -> int:
    return _UNBOUNDED if n == 0 else min(_UNBOUNDED, n & -n)


def _constant(value: Value) -> int | None:
    op = value.op
    while op is not None and op.name in _REPEATS:
        value = op.operands[0]
        op = value.op
    if op is not None and op.name == OP.ARITH_CONSTANT and isinstance(op.attrs["value"], int):
        return op.attrs["value"]
    return None
