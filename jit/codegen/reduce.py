"""tile.reduce and tile.scan with their combine regions inlined into vectorisable loops.

Reduce adds in a GPU's order when the op carries `split = (per_thread, lanes, warps)` (set by
jit.passes.assign_reduction_order): every thread folds its registers in order (jit.layout.reduction_order),
then the threads' partials halve, x[t] = combine(x[t], x[t + T/2]), which is the lanes' butterfly and then
the warps'. Without it, a plain tree: while n > 1, x[i] = combine(x[i], x[i + h]) for i < n - h with
h = ceil(n / 2) (an odd n leaves its middle element for the next step). Each step is one loop nest whose
axis loop has no carried dependence, so LLVM vectorises it without reassociating anything.
Scan is sequential along its axis (from the end when `reverse`), vectorised over the dims inside it.
"""

from __future__ import annotations

import llvmlite.ir as ir

from dsl.ir.core import Operation, TileType
from dsl.ir.ops import OP
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
        return _at(idx, axis, position)

    def constant(k: int) -> ir.Value:
        return ir.Constant(I64, k)

    split = op.attrs.get("split")
    if split is not None and n % (split[0] * split[1] * split[2]) == 0 and n > 1:
        per_thread, lanes, warps = split
        threads = lanes * warps
        registers = n // threads
        scratch = [lw.new_buffer(TileType(s.type.dtype, outer + (threads,) + inner)) for s in sources]

        def position(t: ir.Value, r: ir.Value) -> ir.Value:
            """jit.layout.reduction_order: ((repeat * warps + warp) * lanes + lane) * per_thread + j."""
            lane, warp = b.udiv(t, constant(warps)), b.urem(t, constant(warps))
            repeat, j = b.udiv(r, constant(per_thread)), b.urem(r, constant(per_thread))
            slot = b.add(b.mul(b.add(b.mul(repeat, constant(warps)), warp), constant(lanes)), lane)
            return b.add(b.mul(slot, constant(per_thread)), j)

        def first_register(idx):
            for buf, src in zip(scratch, sources):
                buf.store(b, idx, lw.element(src, at(idx, position(idx[axis], constant(0)))))

        loop_nest(b, outer + (threads,) + inner, first_register)

        def fold(i: ir.Value, _carried) -> None:
            """Each thread adds its next register: r = i + 1, in register order."""
            r = b.add(i, constant(1))

            def lane_step(idx):
                left = [buf.load(b, idx) for buf in scratch]
                right = [lw.element(src, at(idx, position(idx[axis], r))) for src in sources]
                for buf, value in zip(scratch, lw.inline_region(region, left + right)):
                    buf.store(b, idx, value)

            loop_nest(b, outer + (threads,) + inner, lane_step)

        counted_loop(b, registers - 1, fold, name="reduce.fold", scalar=True)  # (unrolled copies cost compile time)
        _halve(lw, op, scratch, axis, threads)
        return
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
            right = [lw.element(src, at(idx, b.add(idx[axis], constant(h), flags=["nuw", "nsw"])))
                     for src in sources]
            for buf, value in zip(scratch, lw.inline_region(region, left + right)):
                buf.store(b, idx, value)
        loop_nest(b, outer + (n - h,) + inner, first_step)
        if n % 2:
            def middle(idx):
                for buf, src in zip(scratch, sources):
                    position = at(idx, constant(h - 1))
                    buf.store(b, position, lw.element(src, position))
            loop_nest(b, outer + (1,) + inner, middle)
    _halve(lw, op, scratch, axis, h)


def _halve(lw, op: Operation, scratch: list, axis: int, m: int) -> None:
    """Halve the m partial results in place until one is left, x[i] = combine(x[i], x[i + half]) with
    half = ceil(m / 2), and define the op's results from it."""
    b = lw.b
    shape = op.operands[0].type.shape
    outer, inner = shape[:axis], shape[axis + 1:]
    region = op.regions[0]
    steps = 0
    while m > 1:
        steps, m = steps + 1, (m + 1) // 2

    def step(_: ir.Value, carried: list[ir.Value]) -> list[ir.Value]:
        """One halving, in place: x[i] = combine(x[i], x[i + half]) for i < m - half; m becomes half."""
        (m,) = carried
        half = b.lshr(b.add(m, ir.Constant(I64, 1)), ir.Constant(I64, 1))

        def pair(idx):
            left = [buf.load(b, idx) for buf in scratch]
            right = [buf.load(b, _at(idx, axis, b.add(idx[axis], half, flags=["nuw", "nsw"]))) for buf in scratch]
            for buf, value in zip(scratch, lw.inline_region(region, left + right)):
                buf.store(b, idx, value)

        loop_nest(b, outer + (b.sub(m, half),) + inner, pair)
        return [half]

    # the steps share one loop body with a run-time trip count: log2(n) copies would cost compile time
    counted_loop(b, steps, step, [ir.Constant(I64, scratch[0].shape[axis])], name="reduce.step", scalar=True)

    for buf, result in zip(scratch, op.results):
        view = buf.view(outer + inner, buf.strides[:axis] + buf.strides[axis + 1:], 0)
        lw.define(result, view, owned=True)


def _at(idx: list[ir.Value], axis: int, position: ir.Value) -> list[ir.Value]:
    """The index `idx` moved to `position` along `axis`."""
    return idx[:axis] + [position] + idx[axis + 1:]


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
        at_prev, at_pos = _at(idx, axis, prev), _at(idx, axis, pos)
        left = [buf.load(b, at_prev) for buf in results]
        right = [buf.load(b, at_pos) for buf in results]
        for buf, value in zip(results, lw.inline_region(region, left + right)):
            buf.store(b, at_pos, value)

    if n > 1:
        loop_nest(b, shape[:axis] + (n - 1,) + shape[axis + 1:], step)
    for buf, result in zip(results, op.results):
        lw.define(result, buf, owned=True)


EMITTERS = {OP.TILE_REDUCE: emit_reduce, OP.TILE_SCAN: emit_scan}
