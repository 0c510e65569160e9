"""tile.reduce (the op table's fixed tree order, bit for bit) and tile.scan, on several axes and shapes."""

from __future__ import annotations

import numpy as np
import pytest
from codegen_harness import KernelBuilder, compile_kernel, ptr, tile
from test_lower_control import build_for

from dsl import dtypes as T


def load_tile(kb, p, shape):
    """A row-major tile of `shape` from p[0 : prod(shape)]."""
    n = int(np.prod(shape))
    flat = kb.load(kb.addptr(p, kb.arange(n)))
    return kb.op("tile.reshape", [flat], tile(flat.type.dtype, *shape)) if len(shape) > 1 else flat


def store_tile(kb, p, value):
    n = value.type.numel
    flat = kb.op("tile.reshape", [value], tile(value.type.dtype, n)) if value.type.rank != 1 else value
    if value.type.rank == 0:
        kb.store(p, value)
        return
    kb.store(kb.addptr(p, kb.arange(n)), flat)


def tree_reduce(x: np.ndarray, axis: int, combine) -> np.ndarray:
    """The op table's order: while n > 1: h = ceil(n/2); x[i] = combine(x[i], x[i+h]) for i < n - h."""
    x = np.moveaxis(x, axis, 0).copy()
    n = x.shape[0]
    while n > 1:
        h = (n + 1) // 2
        x[: n - h] = combine(x[: n - h], x[h:n])
        n = h
    return x[0]


def add(kb, lhs, rhs):
    return [kb.binary("add", lhs[0], rhs[0])]


@pytest.mark.parametrize("shape, axis", [((1024,), 0), ((37,), 0), ((8, 5), 1), ((6, 16), 0), ((4, 6, 8), 1),
                                         ((3, 1), 1)])
def test_sum_follows_the_tree_order_exactly(rng, shape, axis):
    kb = KernelBuilder("sum", x=ptr(T.float32), out=ptr(T.float32))
    x, out = kb.args
    values = load_tile(kb, x, shape)
    doubled = kb.binary("mul", values, kb.const(2.0, T.float32, *shape))  # fused into the reduction
    (total,) = kb.reduce([doubled], axis, add)
    store_tile(kb, out, total)
    kernel = compile_kernel(kb.done())
    data = rng.standard_normal(shape).astype(np.float32)
    result_shape = shape[:axis] + shape[axis + 1:]
    out = np.zeros(max(1, int(np.prod(result_shape))), np.float32)
    assert kernel(data, out).rc == 0
    expect = tree_reduce(data * np.float32(2), axis, np.add)
    np.testing.assert_array_equal(out.reshape(result_shape), expect)


def test_max_with_nan_and_integer_min(rng):
    kb = KernelBuilder("max", x=ptr(T.float32), y=ptr(T.int16), out=ptr(T.float32), iout=ptr(T.int16))
    x, y, out, iout = kb.args
    (m,) = kb.reduce([load_tile(kb, x, (4, 32))], 1,
                     lambda k, l, r: [k.binary("max", l[0], r[0], propagate_nan=True)])
    (im,) = kb.reduce([load_tile(kb, y, (64,))], 0, lambda k, l, r: [k.binary("min", l[0], r[0], propagate_nan=False)])
    store_tile(kb, out, m)
    store_tile(kb, iout, im)
    kernel = compile_kernel(kb.done())
    data = rng.standard_normal((4, 32)).astype(np.float32)
    data[2, 7] = np.nan
    ints = rng.integers(-30000, 30000, 64).astype(np.int16)
    out, iout = np.zeros(4, np.float32), np.zeros(1, np.int16)
    assert kernel(data, ints, out, iout).rc == 0
    np.testing.assert_array_equal(out, np.max(data, axis=1))
    assert iout[0] == ints.min()


def test_argmax_as_a_two_operand_reduce(rng):
    def combine(kb, lhs, rhs):
        (v1, i1), (v2, i2) = lhs, rhs
        better = kb.cmp("gt", v1, v2)
        tie = kb.binary("and", kb.cmp("eq", v1, v2), kb.cmp("lt", i1, i2))
        take = kb.binary("or", better, tie)
        return [kb.op("arith.select", [take, v1, v2], v1.type), kb.op("arith.select", [take, i1, i2], i1.type)]

    kb = KernelBuilder("argmax", x=ptr(T.float32), out=ptr(T.int32))
    x, out = kb.args
    values = load_tile(kb, x, (8, 128))
    index = kb.op("tile.broadcast", [kb.op("tile.expand_dims", [kb.arange(128)], tile(T.int32, 1, 128), axis=0)],
                  tile(T.int32, 8, 128))
    _, where = kb.reduce([values, index], 1, combine)
    store_tile(kb, out, where)
    kernel = compile_kernel(kb.done())
    data = rng.integers(0, 50, (8, 128)).astype(np.float32)  # ties: the first index wins
    out = np.zeros(8, np.int32)
    assert kernel(data, out).rc == 0
    np.testing.assert_array_equal(out, np.argmax(data, axis=1))


def test_reduction_inside_a_loop_reuses_its_scratch(rng):
    kb = KernelBuilder("rows", x=ptr(T.float32), out=ptr(T.float32))
    x, out = kb.args

    def body(kb, i, carried):
        row = kb.load(kb.addptr(kb.op("tile.addptr", [x, kb.binary("mul", i, kb.const(64, T.int32))], x.type),
                                kb.arange(64)))
        (s,) = kb.reduce([row], 0, add)
        return [kb.binary("add", carried[0], s)]

    (total,) = build_for(kb, kb.const(0, T.int32), kb.const(5, T.int32), kb.const(1, T.int32),
                         [kb.const(0.0, T.float32)], body)
    kb.store(out, total)
    kernel = compile_kernel(kb.done())
    data = rng.standard_normal((5, 64)).astype(np.float32)
    out = np.zeros(1, np.float32)
    assert kernel(data, out).rc == 0
    expect = np.float32(0)
    for row in data:
        expect = expect + tree_reduce(row, 0, np.add)
    assert out[0] == expect


def sequential_scan(x: np.ndarray, axis: int, reverse: bool, combine) -> np.ndarray:
    x = np.moveaxis(x, axis, 0).copy()
    order = range(x.shape[0] - 2, -1, -1) if reverse else range(1, x.shape[0])
    for i in order:
        prev = i + 1 if reverse else i - 1
        x[i] = combine(x[prev], x[i])
    return np.moveaxis(x, 0, axis)


@pytest.mark.parametrize("shape, axis, reverse", [((100,), 0, False), ((100,), 0, True), ((6, 33), 1, False),
                                                  ((6, 33), 0, True), ((2, 3, 16), 1, False)])
def test_cumulative_sum(rng, shape, axis, reverse):
    kb = KernelBuilder("scan", x=ptr(T.float32), out=ptr(T.float32))
    x, out = kb.args
    (s,) = kb.scan([load_tile(kb, x, shape)], axis, add, reverse=reverse)
    store_tile(kb, out, s)
    kernel = compile_kernel(kb.done())
    data = rng.standard_normal(shape).astype(np.float32)
    out = np.zeros(data.size, np.float32)
    assert kernel(data, out).rc == 0
    np.testing.assert_array_equal(out.reshape(shape), sequential_scan(data, axis, reverse, np.add))


def test_two_operand_scan_running_max_with_position(rng):
    def combine(kb, lhs, rhs):
        (v1, i1), (v2, i2) = lhs, rhs
        take = kb.cmp("gt", v1, v2)
        return [kb.op("arith.select", [take, v1, v2], v1.type), kb.op("arith.select", [take, i1, i2], i1.type)]

    kb = KernelBuilder("scan2", x=ptr(T.int32), out=ptr(T.int32), where=ptr(T.int32))
    x, out, where = kb.args
    values = load_tile(kb, x, (64,))
    v, i = kb.scan([values, kb.arange(64)], 0, combine)
    store_tile(kb, out, v)
    store_tile(kb, where, i)
    kernel = compile_kernel(kb.done())
    data = rng.integers(-100, 100, 64).astype(np.int32)
    out, where = np.zeros(64, np.int32), np.zeros(64, np.int32)
    assert kernel(data, out, where).rc == 0
    np.testing.assert_array_equal(out, np.maximum.accumulate(data))
    np.testing.assert_array_equal(data[where], out)
