"""What a GPU build of a kernel would allocate per program: shared memory and registers.

Read off the kernel's ops (the profiler's probe records), so both the profiler and a compiled kernel's
Triton-style `n_regs` / `metadata.shared` use one estimate.
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


def live_bytes(probes, live) -> int:
    """Bytes of tile values one op keeps in registers at most: a register-pressure proxy.

    An op holds its operands and results; a tl.dot holds its accumulator once (the result overwrites
    it) and its A operand, while B is read from shared memory (both tensor-core lowerings do so). A pointer
    tile costs one register per element: the GPU keeps a scalar base and 32-bit offsets."""
    most = 0
    for p in live:
        info = probes[p]
        held = info["operands"] + info["results"]
        if info["op"] == OP.TILE_DOT:
            held = [info["operands"][0], info["results"][0]]
        total = 0
        for shape, type_text in held:
            if shape:
                dtype = parse_ir_type(type_text)
                total += math.prod(shape) * (4 if dtype.is_ptr() else max(1, dtype.itemsize))  # i32 offsets
        most = max(most, total)
    return most


_LOOPS = (OP.SCF_FOR, OP.SCF_WHILE)


def peak_live_bytes(func) -> int:
    """Most bytes of tile values live at once in one program: a liveness sweep over the tile IR in program
    order. A value lives from its definition to its last use; one used inside a loop but defined before it
    lives through the whole loop (every iteration reads it), and a loop's carried values live through its
    body. Pointer and 64-bit tiles take 8 bytes per element, masks 1; fp16 values pack two to a register.
    This is what a register allocator must fit, before the compiler rematerialises anything."""
    order: dict[int, int] = {}  # id(op) -> position in program order
    spans: dict[int, tuple[int, int]] = {}  # id(loop op) -> (first, last) position of its body
    parents: dict[int, list] = {}  # id(op) -> loops that enclose it, outermost first

    def visit(ops, loops: list) -> None:
        for op in ops:
            order[id(op)] = len(order)
            parents[id(op)] = loops
            if op.regions:
                inner = loops + [op] if op.name in _LOOPS else loops
                for region in op.regions:
                    visit(region.ops, inner)
                spans[id(op)] = (order[id(op)], len(order) - 1)

    visit(func.body.ops, [])
    ranges: dict[int, list] = {}  # id(value) -> [value, first, last]

    def define(value, at: int) -> None:
        ranges[id(value)] = [value, at, at]

    for op in func.walk():
        at = order[id(op)]
        for result in op.results:
            define(result, spans.get(id(op), (at, at))[1] if op.regions else at)
        for region in op.regions:
            for arg in region.args:
                ranges[id(arg)] = [arg, *spans[id(op)]]  # carried values: the whole body
    for op in func.walk():
        at = order[id(op)]
        for value in op.operands:
            entry = ranges.get(id(value))
            if entry is None:
                continue
            last = at
            for loop in parents[id(op)]:  # a use inside a loop the value was defined outside of
                first, end = spans[id(loop)]
                if entry[1] < first:
                    last = max(last, end)
                    break
            entry[2] = max(entry[2], last)
    events = []
    for value, first, last in ranges.values():
        size = _tile_bytes(value.type)
        if size:
            events += [(first, size), (last + 1, -size)]
    live = most = 0
    for _, change in sorted(events):
        live += change
        most = max(most, live)
    return most


def _tile_bytes(type_) -> int:
    if not type_.shape:
        return 0
    dtype = type_.dtype
    size = 8 if dtype.is_ptr() else 1 if dtype.is_bool() else max(1, dtype.itemsize)
    return math.prod(type_.shape) * size
