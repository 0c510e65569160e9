"""Data-moving shape ops: reshape, join, split, cat, gather, sort, histogram.

Where an op only reinterprets a stored tile (reshape of a row-major buffer, split), the result is a
view of the source buffer and nothing is copied.
"""

from __future__ import annotations

import math

import llvmlite.ir as ir

from dsl.ir.core import Operation
from dsl.ir.ops import OP
from jit.codegen.llvm_types import I1, I32, I64
from jit.codegen.loops import counted_loop, loop_nest


def emit_reshape(lw, op: Operation) -> None:
    (src,) = op.operands
    held = lw.buffers.get(src)
    if held is not None and held.contiguous:
        lw.define(op.result, held.reshaped(op.result.type.shape), owned=False)
        return
    buf = lw.new_buffer(src.type)
    lw.store_into(buf, src)
    lw.define(op.result, buf.reshaped(op.result.type.shape), owned=True)


def emit_join(lw, op: Operation) -> None:
    a, c = op.operands
    buf = lw.new_buffer(op.result.type)
    for half, value in enumerate((a, c)):
        lw.store_into(buf.view(a.type.shape, buf.strides[:-1], half), value)
    lw.define(op.result, buf, owned=True)


def emit_split(lw, op: Operation) -> None:
    (src,) = op.operands
    buf = lw.materialize(src)
    for half, result in enumerate(op.results):
        view = buf.view(src.type.shape[:-1], buf.strides[:-1], buf.offset + half * buf.strides[-1])
        lw.define(result, view, owned=False)


def emit_cat(lw, op: Operation) -> None:
    a, c = op.operands
    buf = lw.new_buffer(op.result.type)
    lw.store_into(buf.view(a.type.shape, buf.strides, 0), a)
    lw.store_into(buf.view(c.type.shape, buf.strides, a.type.shape[0] * buf.strides[0]), c)
    lw.define(op.result, buf, owned=True)


def emit_gather(lw, op: Operation) -> None:
    """result[i..] = src[i.. with index[i..] on axis]; indices are clamped into the axis (a stack buffer
    must never be read out of bounds)."""
    src, index = op.operands
    axis = op.attrs["axis"]
    held = lw.materialize(src)
    b = lw.b
    n = src.type.shape[axis]
    signed = index.type.dtype.is_int_signed()
    buf = lw.new_buffer(op.result.type)

    def elem(idx: list[ir.Value]) -> ir.Value:
        i = lw.element(index, idx)
        if i.type.width < 64:
            i = b.sext(i, I64) if signed else b.zext(i, I64)
        low = b.icmp_signed("<", i, ir.Constant(I64, 0)) if signed else ir.Constant(I1, 0)
        i = b.select(low, ir.Constant(I64, 0), i)
        high = b.icmp_unsigned(">", i, ir.Constant(I64, n - 1))
        i = b.select(high, ir.Constant(I64, n - 1), i)
        return held.load(b, idx[:axis] + [i] + idx[axis + 1:])

    lw.fill(buf, elem)
    lw.define(op.result, buf, owned=True)


def emit_sort(lw, op: Operation) -> None:
    """Sort along the last dim: a bitonic network for powers of two, odd-even transposition otherwise."""
    (src,) = op.operands
    descending = bool(op.attrs["descending"])
    dt = src.type.dtype
    b = lw.b
    buf = lw.new_buffer(src.type)
    lw.store_into(buf, src)
    *rows, n = src.type.shape

    def out_of_order(x: ir.Value, y: ir.Value) -> ir.Value:
        """x should come after y."""
        pred = "<" if descending else ">"
        if dt.is_floating():
            return b.fcmp_ordered(pred, x, y)
        return b.icmp_signed(pred, x, y) if dt.is_int_signed() else b.icmp_unsigned(pred, x, y)

    def compare_swap(row: list[ir.Value], i: ir.Value, j: ir.Value, flip: ir.Value | None) -> None:
        x, y = buf.load(b, row + [i]), buf.load(b, row + [j])
        swap = out_of_order(x, y)
        if flip is not None:
            swap = b.xor(swap, flip)
        buf.store(b, row + [i], b.select(swap, y, x))
        buf.store(b, row + [j], b.select(swap, x, y))

    def sort_row(row: list[ir.Value]) -> None:
        if n & (n - 1) == 0:
            size = 2
            while size <= n:
                stride = size // 2
                while stride >= 1:
                    def pair(p: ir.Value, _, size=size, stride=stride) -> None:
                        shift = ir.Constant(I64, int(math.log2(stride)))
                        low = b.and_(p, ir.Constant(I64, stride - 1))
                        i = b.add(b.shl(b.lshr(p, shift), b.add(shift, ir.Constant(I64, 1))), low)
                        flip = b.icmp_unsigned("!=", b.and_(i, ir.Constant(I64, size)), ir.Constant(I64, 0))
                        compare_swap(row, i, b.add(i, ir.Constant(I64, stride)), flip if size < n else None)
                    counted_loop(b, n // 2, pair, name="sort")
                    stride //= 2
                size *= 2
            return

        def round_(r: ir.Value, _) -> None:
            parity = b.and_(r, ir.Constant(I64, 1))

            def pair(p: ir.Value, _) -> None:
                i = b.add(b.mul(p, ir.Constant(I64, 2)), parity)
                with b.if_then(b.icmp_signed("<", b.add(i, ir.Constant(I64, 1)), ir.Constant(I64, n))):
                    compare_swap(row, i, b.add(i, ir.Constant(I64, 1)), None)
            counted_loop(b, n // 2, pair, name="sort")

        counted_loop(b, n, round_, name="sort.round")

    loop_nest(b, tuple(rows), sort_row)
    lw.define(op.result, buf, owned=True)


def emit_histogram(lw, op: Operation) -> None:
    """Counts of each value in [0, num_bins) among the masked-in elements; other values are ignored."""
    x, mask = op.operands
    bins = op.attrs["num_bins"]
    b = lw.b
    buf = lw.new_buffer(op.result.type)
    lw.fill(buf, lambda idx: ir.Constant(I32, 0))
    signed = x.type.dtype.is_int_signed()

    def count(idx: list[ir.Value]) -> None:
        v = lw.element(x, idx)
        v = v if v.type.width == 64 else (b.sext(v, I64) if signed else b.zext(v, I64))
        inside = b.icmp_unsigned("<", v, ir.Constant(I64, bins))  # negative values wrap above num_bins
        hit = b.and_(inside, lw.element(mask, idx))
        with b.if_then(hit):
            slot = b.gep(buf.ptr, [v], inbounds=True)
            b.store(b.add(b.load(slot), ir.Constant(I32, 1)), slot)

    loop_nest(b, x.type.shape, count)
    lw.define(op.result, buf, owned=True)


EMITTERS = {
    OP.TILE_RESHAPE: emit_reshape,
    OP.TILE_JOIN: emit_join,
    OP.TILE_SPLIT: emit_split,
    OP.TILE_CAT: emit_cat,
    OP.TILE_GATHER: emit_gather,
    OP.TILE_SORT: emit_sort,
    OP.TILE_HISTOGRAM: emit_histogram,
}
