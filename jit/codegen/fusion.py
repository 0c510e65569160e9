"""Fusion analysis: which tile values are never stored, because their consumer computes them inline.

A pure elementwise op or index remap whose single use is in the same block, by an op that reads its
operands element by element, is fused. Constants, splats and aranges are always fused, and so is
cheap integer/pointer arithmetic on them (index and mask expressions): recomputing keeps addresses
affine in the loop variable, which is what lets LLVM vectorise loads and stores.

A load is fused into its consumer chain when nothing between the load and the op that finally stores
the chain's result can write memory; when that op is a store, the store checks at run time that it
does not overlap what the fused loads read (memory.py), since lanes then load and store interleaved.
"""

from __future__ import annotations

from dsl.ir.core import Block, Function, Operation, Value
from dsl.ir.ops import OPS

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
CONSUMERS = FUSABLE | {"tile.load", "tile.store", "tile.atomic", "tile.atomic_cas", "tile.atomic_load",
                       "tile.atomic_store", "tile.atomic_poll", "tile.reduce", "tile.scan",
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
    fused |= _fusable_loads(func, users, fused)
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




MEMORY_WRITERS = frozenset({"tile.store", "tile.atomic", "tile.atomic_cas", "tile.atomic_store"})
# a load may end up inside these; ops that read an element more than once (broadcasts, reductions)
# would repeat the load, so they stop a load's fusion
LOAD_CONSUMERS = frozenset(name for name, info in OPS.items() if info.elementwise) | {"tile.store"}


def _fusable_loads(func: Function, users: dict[Value, list[Operation]], fused: set[Value]) -> set[Value]:
    loads = set()
    for block in _blocks(func.body):
        position = {op: i for i, op in enumerate(block.ops)}
        for i, op in enumerate(block.ops):
            if op.name != "tile.load" or op.attrs.get("volatile") or op.result.type.is_scalar:
                continue
            sink = _sink(op.result, users, fused)
            if sink is None or sink.parent is not block:
                continue
            between = block.ops[i + 1:position[sink]]
            if not any(_writes_memory(other) for other in between):
                loads.add(op.result)
    return loads


def _sink(value: Value, users: dict[Value, list[Operation]], fused: set[Value]) -> Operation | None:
    """The op that evaluates a would-be-fused load: follow single users through fused values."""
    while True:
        mine = users.get(value, [])
        if len(mine) != 1 or mine[0].name not in LOAD_CONSUMERS:
            return None
        user = mine[0]
        if not user.results or user.result not in fused:
            return user
        value = user.result


def _writes_memory(op: Operation) -> bool:
    return any(inner.name in MEMORY_WRITERS for inner in op.walk())


def _blocks(block: Block):
    yield block
    for op in block.ops:
        for region in op.regions:
            yield from _blocks(region)
