"""Removes pure ops whose results nobody uses (the frontend emits some speculatively)."""

from dsl.ir.core import Block, Function, uses


def eliminate_dead_code(func: Function) -> None:
    while _sweep(func.body, set(uses(func.body))):
        pass


def _sweep(block: Block, used: set) -> bool:
    removed = False
    kept = []
    for op in block.ops:
        for region in op.regions:
            removed |= _sweep(region, used)
        if op.info.pure and op.results and not any(r in used for r in op.results):
            removed = True
            continue
        kept.append(op)
    block.ops = kept
    return removed
