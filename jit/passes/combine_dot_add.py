"""Rewrites `x + dot(a, b)` into `dot(a, b, acc=x)`, as Triton's combine pass does on GPUs.

The two forms round differently (the product is accumulated onto x instead of onto zero), so
doing what the GPU compiler does keeps our numbers equal to the GPU's.
"""

from dsl.ir.core import Block, Function, Value, uses
from dsl.ir.ops import OP
from jit.passes.rewrite import replace_uses


def combine_dot_add(func: Function) -> None:
    users = uses(func.body)
    mapping: dict[Value, Value] = {}
    _visit(func.body, users, mapping)
    replace_uses(func.body, mapping)


def _zero_dot(value: Value, users, block: Block):
    """The dot op producing `value` when it has a zero accumulator, this one user, and lives in `block`."""
    op = value.op
    if op is None or op.name != OP.TILE_DOT or op.parent is not block or len(users.get(value, [])) != 1:
        return None
    acc = op.operands[2].op
    if acc is None or acc.name != OP.ARITH_CONSTANT or acc.attrs["value"] != 0:
        return None
    return op


def _defined_before(value: Value, op, block: Block, position: dict) -> bool:
    """True when `value` is available at `op`: defined earlier in this block, or outside it."""
    definer = value.op
    if definer is None or definer.parent is not block:
        return True  # a block argument or an outer value: visible to the whole block
    return position[id(definer)] < position[id(op)]


def _visit(block: Block, users, mapping) -> None:
    position = {id(op): i for i, op in enumerate(block.ops)}
    removed = set()
    for op in block.ops:
        for region in op.regions:
            _visit(region, users, mapping)
        if op.name != OP.ARITH_ADD:
            continue
        lhs, rhs = op.operands
        for dot_value, other in ((rhs, lhs), (lhs, rhs)):
            dot = _zero_dot(dot_value, users, block)
            if dot is not None and other.type == dot_value.type and _defined_before(other, dot, block, position):
                dot.operands[2] = other
                mapping[op.result] = dot.result
                removed.add(id(op))
                break
    block.ops = [op for op in block.ops if id(op) not in removed]
