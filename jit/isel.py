"""Ops a GPU's instruction selection merges into another instruction, so the profiler counts none of their own.

Two merges NVIDIA's compiler makes as a rule, on which integer-heavy kernels (Philox random numbers, hashes) live:
- a bitwise and / or / xor whose only use is another bitwise op: the pair is one three-input LOP3;
- an integer multiply of the same two operands as an umulhi: the low and high halves of one IMAD.WIDE.
"""

from __future__ import annotations

from dsl.ir.core import Block, Operation, Value
from dsl.ir.ops import OP

_LOGIC = frozenset({OP.ARITH_AND, OP.ARITH_OR, OP.ARITH_XOR})


def merged_ops(body: Block, users: dict[Value, list[Operation]]) -> set[Operation]:
    """The ops of `body` (recursively) whose work is done by an instruction counted for another op."""
    merged: set[Operation] = set()
    for op in body.walk():  # program order: whether an op absorbed one of its operands is known before its user
        if _is_logic(op):
            # a LOP3 takes three inputs: the op absorbs one two-input logic op, the first of its operands that is one
            for value in op.operands:
                inner = value.op
                if (_is_logic(inner) and inner.parent is op.parent and len(users.get(value, [])) == 1
                        and not any(v.op in merged for v in inner.operands)):
                    merged.add(inner)
                    break
        elif op.name == OP.ARITH_UMULHI:
            pair = set(op.operands)
            merged.update(user for user in users.get(op.operands[0], []) if user.name == OP.ARITH_MUL
                          and user.parent is op.parent and set(user.operands) == pair)
    return merged


def _is_logic(op: Operation | None) -> bool:
    return op is not None and op.name in _LOGIC and op.result.type.dtype.is_int()
