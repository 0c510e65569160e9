"""Records on every tile.load, tile.store and float atomic add the elements one thread moves per instruction, as
Triton's coalescing pass picks them from its AxisInfo analysis.

The width is the smallest of: 16 bytes, the run of consecutive addresses along the last dim, the alignment the
pointer is known to have, and the run of elements the mask is known to keep equal. What is known comes from how
pointer and mask are built (a small version of Triton's AxisInfo): aranges are contiguous, arguments specialised as
multiples of 16 are aligned and other runtime ints are not, and `offsets < bound` holds equal over runs as long as
both the offsets' start and the bound are known to divide. So a row of 1,000 fp16 values is read one element per
instruction (the stride and the bound are not multiples of 16), where a row of 1,024 is read eight at a time.
The pass sets `size_per_thread` (the layout's run along the last dim: the pointer's alone), `vector` (one
instruction's: also the mask's) and `strided` where the last dim is not known to be contiguous; the reduction order
(jit.passes.assign_reduction_order) reads the first, the profiler's memory counts both, the register and shared
memory estimates (jit.gpu_resources) all three. A strided access also gets `fastest_dim`, the dim Triton lays out
fastest instead (one the analysis proves contiguous, else dim 0: its coalescing pass breaks the tie in dim order),
with `fastest_per_thread` and `fastest_vector`, the same two widths along that dim: a matmul's B tile whose columns
wrap at an N not a multiple of 16 (`% N`) is read down its K rows, one element a lane.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from dsl.ir.core import Block, Function, Value
from dsl.ir.ops import OP, Trait, with_trait

_ALIGNED = 16  # bytes: what Triton's specialisation knows of a pointer or int argument that is a multiple of 16
_UNBOUNDED = 1 << 30  # divisibility of 0
_REPEATS = with_trait(Trait.REPEATS)  # the last-dim step and divisibility pass through these
_OFFSETS_FIRST = frozenset({"lt", "ge"})
_BOUND_FIRST = frozenset({"gt", "le"})
_LOGIC = frozenset({OP.ARITH_AND, OP.ARITH_OR})


def assign_vector_widths(func: Function, divisible: frozenset[str] = frozenset()) -> None:
    facts = _Facts({value: name in divisible for name, value in zip(func.arg_names, func.body.args)})
    for op in func.walk():
        if (op.name in (OP.TILE_LOAD, OP.TILE_STORE) or _float_add(op)) and not op.operands[0].type.is_scalar:
            op.attrs["size_per_thread"], op.attrs["vector"], fastest = _widths(op, facts)
            if fastest is not None:  # the widths say nothing of a run along another dim
                op.attrs["strided"] = True
                op.attrs["fastest_dim"], op.attrs["fastest_per_thread"], op.attrs["fastest_vector"] = fastest


def _float_add(op) -> bool:
    """An atomic add of floats: Triton widens these like stores (Hopper adds up to four fp32 a lane); other atomics
    stay one element a lane."""
    return op.name == OP.TILE_ATOMIC and op.attrs.get("kind") == "add" and op.results[0].type.dtype.is_floating()


@dataclass
class _Facts:
    """What the analysis knows of a kernel: which arguments are specialised as multiples of 16, and the loop-carried
    values it is working out (met again through their own update, they count as their initial value)."""

    arguments: dict
    visiting: set = field(default_factory=set)


def _widths(op, facts: _Facts) -> tuple[int, int, tuple[int, int, int] | None]:
    """(elements a thread holds along the last dim, elements one instruction moves, and where the last dim is not
    known to be contiguous the dim laid out fastest instead with the same two along it). Triton lays the tile out
    by the pointer alone (its coalescing pass) and narrows each instruction to what the mask keeps equal when it
    lowers the access, so a thread holding 4 fp32 values past an unaligned bound reads them with 4 instructions."""
    pointer, mask = op.operands[0], op.operands[1 if op.name == OP.TILE_LOAD else 2]  # load (ptr, mask, other)
    shape = pointer.type.shape
    for dim in range(-1, -len(shape) - 1, -1):  # the last dim first, then the others from the innermost
        step, alignment = _axis_info(pointer, facts, pointer.type.dtype.element_ty.itemsize, dim)
        if step == 1 and (dim == -1 or shape[dim] > 1):
            per_thread, vector = _run(pointer, mask, facts, dim, alignment)
            return (per_thread, vector, None) if dim == -1 else (1, 1, (len(shape) + dim, per_thread, vector))
    return 1, 1, (0, 1, 1)


def _run(pointer: Value, mask: Value, facts: _Facts, dim: int, alignment: int) -> tuple[int, int]:
    """(elements a thread holds along `dim`, elements one instruction moves) for a pointer contiguous along it."""
    itemsize = pointer.type.dtype.element_ty.itemsize
    per_thread = max(1, min(16 // itemsize, alignment // itemsize, pointer.type.shape[dim]))
    return per_thread, max(1, min(per_thread, _constancy(mask, facts, dim)))


def _constancy(mask: Value, facts: _Facts, dim: int = -1) -> int:
    """How many consecutive elements along `dim` (counted from the last) the mask is known to keep equal."""
    op = mask.op
    if mask.type.is_scalar or mask.type.shape[dim] == 1 or op is None:
        return _UNBOUNDED
    if op.attrs.get("max_constancy", 1) > 1:
        return op.attrs["max_constancy"]
    if op.name == OP.ARITH_CONSTANT:
        return _UNBOUNDED
    if op.name in _REPEATS:
        inner = _operand_dim(op, mask, dim)
        return _UNBOUNDED if inner is None else _constancy(op.operands[0], facts, inner)
    if op.name in _LOGIC:
        return math.gcd(*(_constancy(v, facts, dim) for v in op.operands))
    if op.name == OP.ARITH_CMP:
        (step_a, div_a), (step_b, div_b) = (_axis_info(v, facts, 1, dim) for v in op.operands)
        if step_a == 0 and step_b == 0:
            return _UNBOUNDED
        # offsets running from a multiple of d against a bound that is one: equal over runs of d (Triton knows this
        # of `offsets < bound` and `offsets >= bound`, and of `bound > offsets` and `bound <= offsets`)
        predicate = op.attrs["predicate"]
        if (predicate in _OFFSETS_FIRST and (step_a, step_b) == (1, 0)) or \
                (predicate in _BOUND_FIRST and (step_a, step_b) == (0, 1)):
            return math.gcd(div_a, div_b)
    return 1


def _axis_info(value: Value, facts: _Facts, scale: int = 1, dim: int = -1) -> tuple[int | None, int]:
    """(step from one element to the next along `dim` (counted from the last: -1 is the last), in elements, or None
    when unknown; the largest power of two known to divide every value where a run along that dim starts). `scale`
    multiplies the divisibility of integer offsets added to a pointer (their element size in bytes). What the
    kernel asserts (tl.multiple_of, tl.max_contiguous on the op that made the value) is known too."""
    step, div = _derived(value, facts, scale, dim)
    op = value.op
    if op is not None and "multiple_of" in op.attrs:
        div = max(div, _power_of_two(op.attrs["multiple_of"]))  # elements of an int, bytes of a pointer
    if op is not None and op.attrs.get("max_contiguous", 1) > 1 and not value.type.is_scalar:
        step = 1
    return step, div


def _operand_dim(op, value: Value, dim: int) -> int | None:
    """The dim of a broadcast, splat or expand_dims's operand that `dim` of its result repeats (counted from the
    last), or None where the result's dim is the one expand_dims makes."""
    if op.name != OP.TILE_EXPAND_DIMS:
        return dim
    axis = op.attrs["axis"] - (value.type.rank if op.attrs["axis"] >= 0 else 0)
    return None if dim == axis else dim if dim > axis else dim + 1


def _derived(value: Value, facts: _Facts, scale: int, dim: int) -> tuple[int | None, int]:
    op = value.op
    flat = value.type.is_scalar or value.type.shape[dim] == 1
    if op is None:  # a kernel argument, or a loop variable
        if value in facts.arguments:
            return 0, (_ALIGNED if facts.arguments[value] else (scale if value.type.dtype.is_ptr() else 1))
        loop = value.owner.parent if isinstance(value.owner, Block) else None
        if loop is None or loop.name != OP.SCF_FOR:
            return (0 if flat else None), 1
        if value.index == 0:  # the induction variable
            start, step = (_axis_info(v, facts)[1] for v in (loop.operands[0], loop.operands[2]))  # scalars
            return 0, math.gcd(start, step)
        initial = loop.operands[2 + value.index]  # scf.for(start, end, step, initial values...)
        if value in facts.visiting:
            return _axis_info(initial, facts, scale, dim)
        facts.visiting.add(value)
        (step_a, div_a), (step_b, div_b) = (
            _axis_info(initial, facts, scale, dim),
            _axis_info(value.owner.terminator.operands[value.index - 1], facts, scale, dim))
        facts.visiting.discard(value)
        return (step_a if step_a == step_b else None), math.gcd(div_a, div_b)
    name = op.name
    if name == OP.TILE_ARANGE:
        return (0 if flat else 1), _power_of_two(op.attrs["start"])
    if name == OP.ARITH_CONSTANT:
        constant = op.attrs["value"]
        return 0, (_power_of_two(constant) if isinstance(constant, int) else 1)
    if name in _REPEATS:
        inner = _operand_dim(op, value, dim)
        if inner is None:
            # a new dim: values that ran along the operand's last one no longer start runs of known alignment
            step, div = _axis_info(op.operands[0], facts, scale)
            return 0, (div if step == 0 else 1)
        step, div = _axis_info(op.operands[0], facts, scale, inner)
        return (0 if flat else step), div
    if name == OP.ARITH_CAST:
        return _axis_info(op.operands[0], facts, scale, dim)
    if name in (OP.TILE_ADDPTR, OP.ARITH_ADD, OP.ARITH_SUB):
        offset_scale = op.result.type.dtype.element_ty.itemsize if name == OP.TILE_ADDPTR else scale
        (step_a, div_a), (step_b, div_b) = (_axis_info(op.operands[0], facts, scale, dim),
                                            _axis_info(op.operands[1], facts, offset_scale, dim))
        if name == OP.TILE_ADDPTR:
            div_b *= offset_scale
        step = None if None in (step_a, step_b) else (step_a - step_b if name == OP.ARITH_SUB else step_a + step_b)
        return step, math.gcd(div_a, div_b)
    if name == OP.ARITH_REM:
        # a contiguous run wraps at a bound known to divide: still runs of the common divisor; at a bound not known
        # to (an int argument that is not a multiple of 16) runs of one, which Triton calls not contiguous at all
        (step_a, div_a), (step_b, div_b) = (_axis_info(v, facts, 1, dim) for v in op.operands)
        known = step_b == 0 and (step_a == 0 or step_a == 1 and div_b > 1)
        return (step_a if known else (0 if flat else None)), (math.gcd(div_a, div_b) if known else 1)
    if name == OP.ARITH_DIV and not value.type.dtype.is_floating():
        # Triton's AxisInfo: a value equal along the dim divided by a power of two keeps its divisibility shifted
        (step_a, div_a), (step_b, _) = (_axis_info(v, facts, 1, dim) for v in op.operands)
        divisor = known_int(op.operands[1])
        if divisor == 1:
            return step_a, div_a
        if step_a == 0 and divisor is not None and divisor > 0 and divisor & (divisor - 1) == 0:
            return 0, max(1, div_a // divisor)
        return (0 if flat or step_a == step_b == 0 else None), 1
    if name == OP.ARITH_MUL:
        (step_a, div_a), (step_b, div_b) = (_axis_info(v, facts, 1, dim) for v in op.operands)
        factor_a, factor_b = known_int(op.operands[0]), known_int(op.operands[1])
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


def known_int(value: Value) -> int | None:
    """The int a value is known to hold: a constant, through broadcasts, casts and loop-carried values the loop
    yields back unchanged (a block pointer carries its strides through the loop it advances in)."""
    while True:
        op = value.op
        if op is not None and (op.name in _REPEATS or op.name == OP.ARITH_CAST):
            value = op.operands[0]
        elif op is None and _invariant(value):
            value = value.owner.parent.operands[2 + value.index]  # scf.for(start, end, step, initial values...)
        else:
            break
    if op is not None and op.name == OP.ARITH_CONSTANT and isinstance(op.attrs["value"], int):
        return op.attrs["value"]
    return None


def _invariant(value: Value) -> bool:
    """Whether a value is a loop-carried one that every iteration yields back as it came."""
    loop = value.owner.parent if isinstance(value.owner, Block) else None
    return (loop is not None and loop.name == OP.SCF_FOR and value.index > 0
            and value.owner.terminator.operands[value.index - 1] is value)
