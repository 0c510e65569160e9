"""Checks a function against the op table: arity, attributes, types, and that definitions dominate uses."""

from __future__ import annotations

from dsl.ir.core import Block, Function, Operation, Value
from dsl.ir.ops import OPS, VerifyError


def verify(func: Function) -> None:
    """Raise VerifyError at the first op that breaks a rule."""
    _verify_block(func.body, set(), top_level=True)


def _verify_block(block: Block, visible: set[Value], top_level: bool = False) -> None:
    visible = visible | set(block.args)
    for i, op in enumerate(block.ops):
        _verify_op(op, visible)
        if op.info.terminator and i != len(block.ops) - 1:
            raise VerifyError(f"{op.name} must be the last op of its block")
        for region in op.regions:
            _verify_block(region, visible)
        visible |= set(op.results)
    if top_level and block.terminator is not None:
        raise VerifyError("a kernel body ends without a terminator")


def _verify_op(op: Operation, visible: set[Value]) -> None:
    info = OPS.get(op.name)
    if info is None:
        raise VerifyError(f"unknown op {op.name!r}")
    if info.operands >= 0 and len(op.operands) != info.operands:
        raise VerifyError(f"{op.name} takes {info.operands} operands, got {len(op.operands)}")
    if info.results >= 0 and len(op.results) != info.results:
        raise VerifyError(f"{op.name} gives {info.results} results, got {len(op.results)}")
    if len(op.regions) != info.regions:
        raise VerifyError(f"{op.name} has {info.regions} regions, got {len(op.regions)}")
    missing = [a for a in info.attrs if a not in op.attrs]
    if missing:
        raise VerifyError(f"{op.name} is missing attributes {missing}")
    for operand in op.operands:
        if operand not in visible:
            raise VerifyError(f"{op.name} uses a value that is not defined before it")
    if info.verify is not None:
        info.verify(op)
