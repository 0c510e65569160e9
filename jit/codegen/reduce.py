"""tile.reduce and tile.scan with their combine regions inlined into vectorisable loops.

Reduce follows the op table's fixed tree order: while n > 1, x[i] = combine(x[i], x[i + h]) for
i < n - h with h = ceil(n / 2) (for a power of two, h = n / 2; an odd n leaves its middle element for
the next step). The first step reads the source (stored or fused) and writes a scratch buffer of half
the size; later steps work in place. Each step is one loop nest whose axis loop has no carried
dependence, so LLVM vectorises it without reassociating anything.
Scan is sequential along its axis (from the end when `reverse`), vectorised over the dims inside it.
"""

from __future__ import annotations

import llvmlite.ir as ir

from dsl.ir.core import Operation, TileType
from jit.codegen.llvm_types import I64
from jit.codegen.loops import counted_loop, loop_nest


def emit_reduce(lw, op: Operation) -> None:
    axis = op.attrs["axis"]
    sources = op.operands
    shape = sources[0].type.shape
    n = shape[axis]
    region = op.regions[0]
    b = lw.b
    outer, inner = shape[:axis], shape[axis + 1:]

    def at(idx: list[ir.Value], position: ir.Value) -> list[ir.Value]:
        return idx[:axis] + [position] + idx[axis + 1:]

    def plus(i: ir.Value, k: int) -> ir.Value:
        return b.add(i, ir.Constant(I64, k), flags=["nuw", "nsw"]) if k else i

    h = (n + 1) // 2
    scratch = [lw.new_buffer(TileType(s.type.dtype, outer + (max(h, 1),) + inner)) for s in sources]

    if n == 1:
        def first(idx):
            for buf, src in zip(scratch, sources):
                buf.store(b, idx, lw.element(src, idx))
        loop_nest(b, outer + (1,) + inner, first)
    else:
        def first_step(idx):
            left = [lw.element(src, idx) for src in sources]
            right = [lw.element(src, at(idx, plus(idx[axis], h))) for src in sources]
            for buf, value in zip(scratch, lw.inline_region(region, left + right)):
                buf.store(b, idx, value)
        loop_nest(b, outer + (n - h,) + inner, first_step)
        if n % 2:
            def middle(idx):
                for buf, src in zip(scratch, sources):
                    position = at(idx, ir.Constant(I64, h - 1))
                    buf.store(b, position, lw.element(src, position))
            loop_nest(b, outer + (1,) + inner, middle)

    steps = 0
    m = h
    while m > 1:
        steps, m = steps + 1, (m + 1) // 2

    def step(_: ir.Value, carried: list[ir.Value]) -> list[ir.Value]:
        """One halving, in place: x[i] = combine(x[i], x[i + half]) for i < m - half; m becomes half."""
        (m,) = carried
        half = b.lshr(b.add(m, ir.Constant(I64, 1)), ir.Constant(I64, 1))

        def pair(idx):
            left = [buf.load(b, idx) for buf in scratch]
            right = [buf.load(b, at(idx, b.add(idx[axis], half, flags=["nuw", "nsw"]))) for buf in scratch]
            for buf, value in zip(scratch, lw.inline_region(region, left + right)):
                buf.store(b, idx, value)

        loop_nest(b, outer + (b.sub(m, half),) + inner, pair)
        return [half]

    # later steps share one loop body with a run-time trip count: log2(n) copies would cost compile time
    counted_loop(b, steps, step, [ir.Constant(I64, h)], name="reduce.step", scalar=True)

    for buf, result in zip(scratch, op.results):
        view = buf.view(outer + inner, buf.strides[:axis] + buf.strides[axis + 1:], 0)
        lw.define(result, view, owned=True)


def emit_scan(lw, op: Operation) -> None:
    axis = op.attrs["axis"]
    reverse = bool(op.attrs["reverse"])
    region = op.regions[0]
    b = lw.b
    shape = op.operands[0].type.shape
    n = shape[axis]
    results = []
    for src in op.operands:
        buf = lw.new_buffer(src.type)
        lw.store_into(buf, src)
        results.append(buf)

    def step(idx):
        i = idx[axis]
        if reverse:
            pos = b.sub(ir.Constant(I64, n - 2), i, flags=["nsw"])
            prev = b.add(pos, ir.Constant(I64, 1), flags=["nsw"])
        else:
            prev = i
            pos = b.add(i, ir.Constant(I64, 1), flags=["nsw"])
        at_prev = idx[:axis] + [prev] + idx[axis + 1:]
        at_pos = idx[:axis] + [pos] + idx[axis + 1:]
        left = [buf.load(b, at_prev) for buf in results]
        right = [buf.load(b, at_pos) for buf in results]
        for buf, value in zip(results, lw.inline_region(region, left + right)):
            buf.store(b, at_pos, value)

    if n > 1:
        loop_nest(b, shape[:axis] + (n - 1,) + shape[axis + 1:], step)
    for buf, result in zip(results, op.results):
        lw.define(result, buf, owned=True)


EMITTERS = {"tile.reduce": emit_reduce, "tile.scan": emit_scan}
