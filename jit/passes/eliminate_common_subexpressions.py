"""Merges identical pure ops so that fusion sees one producer (e.g. repeated broadcasts of one index)."""

import struct

from dsl.ir.core import Block, Function, Value
from jit.passes.rewrite import replace_uses


def eliminate_common_subexpressions(func: Function) -> None:
    mapping: dict[Value, Value] = {}
    _visit(func.body, {}, mapping)
    replace_uses(func.body, mapping)


def _visit(block: Block, seen: dict, mapping: dict[Value, Value]) -> None:
    seen = dict(seen)  # values of enclosing blocks are visible here, not the other way round
    kept = []
    for op in block.ops:
        op.operands = [mapping.get(v, v) for v in op.operands]
        for region in op.regions:
            _visit(region, seen, mapping)
        if op.info.pure and not op.regions and op.results:
            key = (op.name, tuple(id(v) for v in op.operands), _freeze(op.attrs),
                   tuple(r.type for r in op.results))
            previous = seen.get(key)
            if previous is not None:
                mapping.update(zip(op.results, previous.results))
                continue
            seen[key] = op
        kept.append(op)
    block.ops = kept


def _freeze(attrs: dict) -> tuple:
    """Attributes as a key; floats by their bits, so 0.0 and -0.0 (or two NaN payloads) stay apart."""
    def f(v):
        if isinstance(v, float):
            return ("float", struct.pack("<d", v))
        if isinstance(v, (list, tuple)):
            return tuple(f(x) for x in v)
        return (type(v).__name__, v)
    return tuple(sorted((k, f(v)) for k, v in attrs.items()))
