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
