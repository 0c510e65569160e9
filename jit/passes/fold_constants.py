"""Folds splats and broadcasts of constants into constant tiles, so codegen sees `arith.constant` masks."""

from dsl.ir.core import Block, Function, Operation, Value
from dsl.ir.ops import OP, Trait, with_trait
from jit.passes.rewrite import replace_uses

_SAME_VALUES = with_trait(Trait.SAME_VALUES)  # on a constant operand, a constant of the result's shape


def fold_constants(func: Function) -> None:
    mapping: dict[Value, Value] = {}
    _visit(func.body, mapping)
    replace_uses(func.body, mapping)


def _visit(block: Block, mapping: dict[Value, Value]) -> None:
    new_ops = []
    for op in block.ops:
        op.operands = [mapping.get(v, v) for v in op.operands]
        for region in op.regions:
            _visit(region, mapping)
        if op.name in _SAME_VALUES and op.operands[0].op is not None and op.operands[0].op.name == OP.ARITH_CONSTANT:
            value = op.operands[0].op.attrs["value"]
            folded = Operation(OP.ARITH_CONSTANT, [], [op.result.type], {"value": value}, loc=op.loc)
            folded.parent = block
            mapping[op.result] = folded.result
            new_ops.append(folded)
            continue
        new_ops.append(op)
    block.ops = new_ops
