"""Marks each tile.permute whose result only feeds tl.dot operands (through casts) as `staged`.

A GPU stages a dot's A and B tiles in shared memory in the layout its MMAs read, whichever dim of the
loaded tile is contiguous, so a transpose on the way there is a view of the staged tile (Triton lowers
attention's tl.trans(k) to a memdesc_trans), not a trip of its own through shared memory. The profiler and
the shared-memory estimate skip a staged permute; the dot's staging, and the transposes a K-major-only type
needs, are costed with the dot (jit.profiler._dot). Nsight Compute on the H200 agrees: attention's shared
wavefronts are those of staging K and V, not twice K's (simulator/data/h200_ncu.jsonl).
"""

from __future__ import annotations

from dsl.ir.core import Function, Operation, Value, uses
from dsl.ir.ops import OP

_CASTS = frozenset({OP.ARITH_CAST, OP.ARITH_BITCAST, OP.TILE_PERMUTE})


def mark_staged_permutes(func: Function) -> None:
    users = uses(func.body)
    for op in func.walk():
        if op.name == OP.TILE_PERMUTE and _feeds_only_dot_operands(op.results[0], users):
            op.attrs["staged"] = True


def _feeds_only_dot_operands(value: Value, users: dict[Value, list[Operation]]) -> bool:
    consumers = users.get(value, [])
    return bool(consumers) and all(
        user.name == OP.TILE_DOT and value in user.operands[:2] and value is not user.operands[2]
        or user.name in _CASTS and _feeds_only_dot_operands(user.results[0], users)
        for user in consumers)
