"""Carries a loop's pointer tiles as scalar bases, for speed on the CPU.

Every matmul's K loop carries `ptrs = base + offsets` and advances it by a uniform step
(`a_ptrs += BLOCK_K`). Carried as a tile, each iteration materialises BLOCK_M x BLOCK_K 64-bit
addresses, loads gather through them, and the bounds check takes min/max over them. Carried as its
scalar base, with the loop-invariant offsets re-applied at the top of the body, the tile is again a
fused `base + offsets` expression: loads vectorise and the check is a min/max of 32-bit offsets.
The addresses are the same, bit for bit.

Instrumented builds skip this pass: on a GPU the tile increment stays (each thread adds to its own
pointers), and the simulator counts what the GPU would execute.
"""

from __future__ import annotations

from dsl.ir.core import Block, Function, Operation, TileType, Value
from dsl.ir.ops import OP, Trait, with_trait
from jit.passes.rewrite import replace_uses

REINDEX = with_trait(Trait.REINDEX)


def carry_pointer_bases(func: Function) -> None:
    loops = [op for op in func.walk() if op.name == OP.SCF_FOR]  # outer loops first
    for loop in loops:
        for slot in range(len(loop.results)):
            _carry_base(func, loop, slot)


def _carry_base(func: Function, loop: Operation, slot: int) -> None:
    body = loop.regions[0]
    init = loop.operands[3 + slot]
    arg = body.args[1 + slot]
    if init.type.is_scalar or not init.type.dtype.is_ptr():
        return
    chain = _pointer_chain(init)
    steps = _uniform_steps(body.terminator.operands[slot], arg)
    if chain is None or steps is None:
        return
    base = chain[0].operands[0]
    scalar = TileType(base.type.dtype)
    new_arg = Value(scalar, body, 1 + slot, arg.name_hint)
    new_result = Value(scalar, loop, slot, loop.results[slot].name_hint)
    body.args[1 + slot] = new_arg
    old_result, loop.results[slot] = loop.results[slot], new_result
    loop.operands[3 + slot] = base

    rebuilt, clones = _rebuild(chain, new_arg, body)
    body.ops[:0] = clones
    replace_uses(body, {arg: rebuilt})

    terminator = body.ops.pop()
    advanced = new_arg
    for step, loc in steps:
        advanced = _append(body, Operation(OP.TILE_ADDPTR, [advanced, step], [scalar], loc=loc)).result
    terminator.operands[slot] = advanced
    body.ops.append(terminator)

    parent = loop.parent
    after, clones = _rebuild(chain, new_result, parent)
    at = parent.ops.index(loop) + 1
    parent.ops[at:at] = clones
    replace_uses(func.body, {old_result: after})


def _pointer_chain(value: Value) -> list[Operation] | None:
    """The ops from `splat(scalar pointer)` up to `value`, if it is built only by offsetting and re-indexing."""
    chain = []
    while True:
        op = value.op
        if op is None:
            return None
        chain.append(op)
        if op.name == OP.TILE_SPLAT:
            return chain[::-1]
        if op.name != OP.TILE_ADDPTR and op.name not in REINDEX:
            return None
        value = op.operands[0]


def _uniform_steps(value: Value, arg: Value) -> list[tuple[Value, object]] | None:
    """The scalar offsets (and source locations) of `value = arg + s1 + s2 ...`, each the same for every lane."""
    steps = []
    while value is not arg:
        op = value.op
        if op is None or op.name != OP.TILE_ADDPTR:
            return None
        step = _scalar_of(op.operands[1])
        if step is None:
            return None
        steps.append((step, op.loc))
        value = op.operands[0]
    return steps[::-1]


def _scalar_of(offset: Value) -> Value | None:
    """The scalar every lane of `offset` holds: a splat's operand, or a new constant for a uniform constant."""
    op = offset.op
    if op is None:
        return None
    if op.name == OP.TILE_SPLAT:
        return op.operands[0]
    if op.name == OP.ARITH_CONSTANT and isinstance(op.attrs["value"], int):
        return Operation(OP.ARITH_CONSTANT, [], [TileType(offset.type.dtype)], {"value": op.attrs["value"]},
                         loc=op.loc).result
    return None


def _rebuild(chain: list[Operation], base: Value, block: Block) -> tuple[Value, list[Operation]]:
    """Clones of `chain` rooted at the scalar `base`: the pointer tile again, and the ops that make it."""
    clones, value = [], base
    for op in chain:
        operands = [value] + op.operands[1:]
        clone = Operation(op.name, operands, [op.result.type], op.attrs, loc=op.loc)
        clone.parent = block
        clones.append(clone)
        value = clone.result
    return value, clones


def _append(block: Block, op: Operation) -> Operation:
    """Append `op` after first placing any scalar constant among its operands that has no block yet."""
    for operand in op.operands:
        definer = operand.op
        if definer is not None and definer.parent is None:
            block.append(definer)
    return block.append(op)
