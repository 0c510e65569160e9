"""Which pointer argument a pointer value derives from, found statically by walking its definitions.

A memory op whose pointer provably comes from argument buffer i is checked against that buffer alone
(and an error names it); when the walk reaches a pointer loaded from memory or made from an integer,
the check falls back to "inside some registered buffer".
"""

from __future__ import annotations

from dsl.ir.core import Block, Function, Value

_UNKNOWN = None
_TOP = object()  # no information yet (the start of the fixed-point iteration)

# ops whose pointer result derives from the listed operands
_THROUGH = {
    "tile.addptr": (0,), "tile.splat": (0,), "tile.broadcast": (0,), "tile.expand_dims": (0,),
    "tile.permute": (0,), "tile.reshape": (0,), "tile.flip": (0,), "tile.split": (0,), "tile.gather": (0,),
    "tile.join": (0, 1), "tile.cat": (0, 1), "arith.select": (1, 2),
}


class Provenance:
    """Maps pointer values to a buffer index (position among the pointer arguments) or None.

    Loop-carried pointers make the definitions cyclic, so the answer is a fixed point: every pointer
    value starts at "no information" and is lowered (to a buffer, then to unknown) until nothing changes.
    """

    def __init__(self, func: Function):
        self.buffer_of_arg: dict[Value, int] = {}
        for arg in func.args:
            if arg.type.dtype.is_ptr():
                self.buffer_of_arg[arg] = len(self.buffer_of_arg)
        values = [v for v in _all_values(func) if v.type.dtype.is_ptr()]
        self._state: dict[Value, object] = {v: _TOP for v in values}
        changed = True
        while changed:
            changed = False
            for v in values:
                new = self._transfer(v)
                if new is not self._state[v] and new != self._state[v]:
                    self._state[v] = new
                    changed = True

    def buffer(self, value: Value) -> int | None:
        result = self._state.get(value, _UNKNOWN)
        return None if result is _TOP else result  # type: ignore[return-value]

    def _get(self, value: Value):
        return self._state.get(value, _UNKNOWN)

    def _transfer(self, value: Value):
        if value in self.buffer_of_arg:
            return self.buffer_of_arg[value]
        op = value.op
        if op is None:
            return _meet([self._get(v) for v in _block_arg_sources(value)])
        if op.name in _THROUGH:
            return _meet([self._get(op.operands[i]) for i in _THROUGH[op.name]])
        if op.name == "arith.cast" and op.operands[0].type.dtype.is_ptr():
            return self._get(op.operands[0])
        if op.name in ("scf.for", "scf.while", "scf.if"):
            return _meet([self._get(v) for v in result_sources(value)])
        return _UNKNOWN


def _meet(results: list):
    known = [r for r in results if r is not _TOP]
    if not known:
        return _TOP if results else _UNKNOWN
    first = known[0]
    return first if all(r == first for r in known) else _UNKNOWN


def _all_values(func: Function) -> list[Value]:
    values = list(func.args)
    for op in func.walk():
        for region in op.regions:
            values.extend(region.args)
        values.extend(op.results)
    return values


def _block_arg_sources(arg: Value) -> list[Value]:
    """The values a region argument can take: inits and yields of its loop."""
    block = arg.owner
    assert isinstance(block, Block)
    op = block.parent
    if op is None:
        return []
    i = arg.index
    if op.name == "scf.for":
        if i == 0:
            return []  # the induction variable is an integer
        return [op.operands[2 + i], op.regions[0].terminator.operands[i - 1]]
    if op.name == "scf.while":
        before, after = op.regions
        if block is before:
            return [op.operands[i], after.terminator.operands[i]]
        return [before.terminator.operands[1 + i]]
    return []  # reduce/scan combine arguments are never pointers we check


def result_sources(result: Value) -> list[Value]:
    """The values a result of scf.for / scf.while / scf.if can take: its init and the yields of its regions."""
    op = result.op
    i = result.index
    if op.name == "scf.for":
        return [op.operands[3 + i], op.regions[0].terminator.operands[i]]
    if op.name == "scf.while":
        return [op.regions[0].terminator.operands[1 + i]]
    return [region.terminator.operands[i] for region in op.regions]  # scf.if


WRITES = ("tile.store", "tile.atomic", "tile.atomic_cas", "tile.atomic_store")


def written_buffers(func: Function) -> tuple[int, ...]:
    """The pointer arguments (by position among them) that a store or atomic of `func` can write; all of them
    when one writes through a pointer of unknown provenance. Launches refuse read-only arrays for these."""
    provenance = Provenance(func)
    written: set[int] = set()
    for op in func.walk():
        if op.name in WRITES:
            index = provenance.buffer(op.operands[0])
            if index is None:
                return tuple(range(len(provenance.buffer_of_arg)))
            written.add(index)
    return tuple(sorted(written))
