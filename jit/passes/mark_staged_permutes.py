"""Marks each tile.permute whose result only feeds tl.dot operands (through casts) as `staged`.

A GPU stages a dot's A and B tiles in shared memory in the layout its MMAs read, whichever dim of the
loaded tile is contiguous, so a transpose on the way there is a view of the staged tile (Triton lowers
attention's tl.trans(k) to a memdesc_trans), not a trip of its own through shared memory. The profiler and
the shared-memory estimate skip a staged permute; the dot's staging, and the transposes a K-major-only type
needs, are costed with the dot (jit.profiler._dot). Nsight Compute on the H200 agrees: attention's shared
wavefronts are those of staging K and V, not twice K's (simulator/data/h200_ncu.jsonl).
"""

from __future__ import annotations

from dsl.ir.core import Function, uses
from dsl.ir.ops import OP
from jit.mma_layout import only_dot_operands


def mark_staged_permutes(func: Function) -> None:
    users = uses(func.body)
    for op in func.walk():
        if op.name == OP.TILE_PERMUTE and only_dot_operands(op.results[0], users):
            op.attrs["staged"] = True
