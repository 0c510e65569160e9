"""Small helpers the passes share: replacing every use of a value."""

from dsl.ir.core import Block, Value


def replace_uses(block: Block, mapping: dict[Value, Value]) -> None:
    """Point every operand in `block` (recursively) that is a key of `mapping` at its replacement."""
    if not mapping:
        return
    for op in block.walk():
        op.operands = [mapping.get(v, v) for v in op.operands]
