"""What a GPU build of a kernel would allocate per program: shared memory and registers.

Read off the kernel's ops (the profiler's probe records, or its tile IR for registers), so both the profiler
and a compiled kernel's Triton-style `n_regs` / `metadata.shared` use one estimate.
"""

from __future__ import annotations

import math

from dsl.dtypes import parse_ir_type
from dsl.ir.ops import OP, Trait, with_trait
from jit import shared_model

_COMBINES = with_trait(Trait.COMBINES)  # reductions and scans


def shared_bytes(probes, live, spec, num_warps, num_stages, padding) -> int:
    """Shared memory one program allocates: pipelined dot operands plus the largest scratch."""
    dots, scratch = 0, 0
    for p in live:
        info = probes[p]
        if info["op"] == OP.TILE_DOT:
            (a_shape, a_type), (b_shape, _), _ = info["operands"]
            *batch, m, k = a_shape
            itemsize = max(1, parse_ir_type(a_type).itemsize)
            _, _, nbytes = shared_model.dot(m, b_shape[-1], k, itemsize, num_warps, spec.warp_size,
                                            math.prod(batch) if batch else 1)
            dots = max(dots, max(1, num_stages) * nbytes)
        elif info["op"] == OP.TILE_PERMUTE and shared_model.moves_fastest_dim(tuple(info["attrs"]["order"])):
            src = info["operands"][0]
            itemsize = max(1, parse_ir_type(src[1]).itemsize)
            rows = math.prod(src[0][:-1]) if len(src[0]) > 1 else 1
            scratch = max(scratch, rows * (src[0][-1] + padding) * itemsize)
        elif info["op"] in _COMBINES:
            shape = tuple(info["operands"][0][0])
            itemsize = max(1, parse_ir_type(info["operands"][0][1]).itemsize)
            scratch = max(scratch, shared_model.cross_warp(shape, int(info["attrs"]["axis"]), itemsize, num_warps,
                                                           spec.warp_size)[2])
    return dots + scratch


_LOOPS = (OP.SCF_FOR, OP.SCF_WHILE)


def kernel_register_bytes(kernel) -> int:
    """register_bytes of a compiled kernel's tile IR, computed once per kernel."""
    found = kernel.metadata.get("register_bytes")
    if found is None:
        from dsl.ir import parse_function

        found = kernel.metadata["register_bytes"] = register_bytes(parse_function(kernel.asm["ir"]))
    return found


def register_bytes(func) -> int:
    """Bytes of tile values one program keeps in registers at most: a liveness sweep over the tile IR in
    program order. A value lives from its definition to its last use; one used inside a loop but defined
    before it lives through the whole loop (every iteration reads it), and a loop's carried values live
    through its body. Floating-point values count their bytes (fp16 packs two to a register), pointer tiles
    a quarter of their 8 bytes (Triton keeps a base and recomputes offsets per vector), integer indices and
    masks nothing (recomputed where used): the weights that fit Triton's register counts best
    (simulator/data/h200_compile_facts.jsonl, calibration configs; simulator.estimate_registers scales it)."""
    order: dict[int, int] = {}  # id(op) -> position in program order
    spans: dict[int, tuple[int, int]] = {}  # id(op with regions) -> (its position, its body's last)
    loops: dict[int, list] = {}  # id(op) -> the loops that enclose it, outermost first

    def visit(ops, enclosing: list) -> None:
        for op in ops:
            order[id(op)] = len(order)
            loops[id(op)] = enclosing
            if op.regions:
                inner = enclosing + [op] if op.name in _LOOPS else enclosing
                for region in op.regions:
                    visit(region.ops, inner)
                spans[id(op)] = (order[id(op)], len(order) - 1)

    visit(func.body.ops, [])
    ranges: dict[int, list] = {}  # id(value) -> [value, first, last]
    for op in func.walk():
        done = spans[id(op)][1] if op.regions else order[id(op)]
        for result in op.results:
            ranges[id(result)] = [result, done, done]
        for region in op.regions:
            for arg in region.args:  # carried values and induction variables: the whole body
                ranges[id(arg)] = [arg, *spans[id(op)]]
    for op in func.walk():
        at = order[id(op)]
        for value in op.operands:
            entry = ranges.get(id(value))
            if entry is None:
                continue
            last = at
            for loop in loops[id(op)]:  # a use inside a loop the value was defined before
                first, end = spans[id(loop)]
                if entry[1] < first:
                    last = max(last, end)
                    break
            entry[2] = max(entry[2], last)
    events = []
    for value, first, last in ranges.values():
        size = _register_weight(value.type)
        if size:
            events += [(first, size), (last + 1, -size)]
    live = most = 0.0
    for _, change in sorted(events):
        live += change
        most = max(most, live)
    return int(most)


def _register_weight(type_) -> float:
    if not type_.shape:
        return 0.0
    dtype = type_.dtype
    if dtype.is_ptr():
        return 2.0 * math.prod(type_.shape)
    return float(math.prod(type_.shape) * dtype.itemsize) if dtype.is_floating() else 0.0
