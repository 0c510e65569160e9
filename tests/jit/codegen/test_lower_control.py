"""scf.for (range semantics, carried scalars and tiles, yields that swap), scf.if with results, scf.while."""

from __future__ import annotations

import numpy as np
import pytest
from codegen_harness import KernelBuilder, compile_kernel, ptr, scalar, tile

from dsl import dtypes as T
from dsl.ir import Block, TileType


def build_for(kb, lb, ub, step, inits, body):
    """body(kb, iv, carried) -> yielded values; returns the loop's results."""
    region = Block([lb.type] + [v.type for v in inits])
    with kb.b.at(region):
        out = body(kb, region.args[0], region.args[1:])
        kb.b.create("scf.yield", out, [])
    return kb.b.create("scf.for", [lb, ub, step, *inits], [v.type for v in inits], {}, [region]).results


def build_if(kb, cond, then, otherwise, types):
    blocks = []
    for fn in (then, otherwise):
        block = Block([])
        with kb.b.at(block):
            kb.b.create("scf.yield", fn(kb), [])
        blocks.append(block)
    return kb.b.create("scf.if", [cond], types, {}, blocks).results


def range_kernel(dt):
    """out[0] = number of iterations, out[1] = sum of the induction variable, for range(lb, ub, step)."""
    kb = KernelBuilder("range", out=ptr(T.int64), lb=scalar(dt), ub=scalar(dt), step=scalar(dt))
    out, lb, ub, step = kb.args

    def body(kb, iv, carried):
        count, total = carried
        wide = kb.op("arith.cast", [iv], scalar(T.int64), rounding="rtne")
        return [kb.binary("add", count, kb.const(1, T.int64)), kb.binary("add", total, wide)]

    count, total = build_for(kb, lb, ub, step, [kb.const(0, T.int64), kb.const(0, T.int64)], body)
    kb.store(out, count)
    kb.store(kb.op("tile.addptr", [out, kb.const(1, T.int32)], out.type), total)
    return compile_kernel(kb.done())


@pytest.mark.parametrize("dt", [T.int32, T.int64, T.int8])
def test_for_follows_python_range(rng, dt):
    kernel = range_kernel(dt)
    lo, hi = (-100, 100) if dt.primitive_bitwidth > 8 else (-128, 127)
    cases = [(0, 10, 1), (10, 0, -1), (10, 0, -3), (0, 10, 3), (5, 5, 1), (5, 4, 1), (-7, 20, 4), (3, 9, 0),
             (hi - 5, hi, 2), (lo, lo + 4, 1), (hi, lo, -50)]
    cases += [tuple(int(v) for v in rng.integers(lo, hi, 2)) + (int(rng.choice([-7, -2, -1, 1, 3, 11])),)
              for _ in range(6)]
    out = np.zeros(2, np.int64)
    for lb, ub, step in cases:
        assert kernel(out, lb, ub, step).rc == 0
        expect = list(range(lb, ub, step)) if step else []
        assert out.tolist() == [len(expect), sum(expect)], (lb, ub, step)


def test_for_with_constant_bounds_and_unsigned_iv():
    kb = KernelBuilder("urange", out=ptr(T.uint32))
    (out,) = kb.args

    def body(kb, iv, carried):
        return [kb.binary("add", carried[0], iv)]

    (total,) = build_for(kb, kb.const(2**32 - 10, T.uint32), kb.const(2**32 - 1, T.uint32), kb.const(4, T.uint32),
                         [kb.const(0, T.uint32)], body)
    kb.store(out, total)
    kernel = compile_kernel(kb.done())
    out = np.zeros(1, np.uint32)
    assert kernel(out).rc == 0
    assert out[0] == sum(range(2**32 - 10, 2**32 - 1, 4)) % 2**32


def test_tile_carried_values_and_a_yield_that_swaps_them(rng):
    """a, b = x, y; for i in range(k): a, b = b, a + i  (tiles), then a + 2*b is stored."""
    kb = KernelBuilder("swap", x=ptr(T.float32), y=ptr(T.float32), out=ptr(T.float32), k=scalar(T.int32))
    x, y, out, k = kb.args
    offs = kb.arange(16)
    a0, b0 = kb.load(kb.addptr(x, offs)), kb.load(kb.addptr(y, offs))

    def body(kb, iv, carried):
        a, c = carried
        fi = kb.op("arith.cast", [iv], scalar(T.float32), rounding="rtne")
        return [c, kb.binary("add", a, kb.splat(fi, 16))]

    a, c = build_for(kb, kb.const(0, T.int32), k, kb.const(1, T.int32), [a0, b0], body)
    kb.store(kb.addptr(out, offs), kb.binary("add", a, kb.binary("mul", c, kb.const(2.0, T.float32, 16))))
    kernel = compile_kernel(kb.done())
    x, y = rng.standard_normal(16).astype(np.float32), rng.standard_normal(16).astype(np.float32)
    for steps in (0, 1, 5, 6):
        out = np.zeros(16, np.float32)
        assert kernel(x, y, out, steps).rc == 0
        a, c = x.copy(), y.copy()
        for i in range(steps):
            a, c = c, a + np.float32(i)
        np.testing.assert_array_equal(out, a + c * 2)


def test_nested_loops_accumulate_a_tile(rng):
    """acc[j] = sum over i < m, l < 3 of x[i*16 + j] * l, with the inner loop carrying a tile too."""
    kb = KernelBuilder("nest", x=ptr(T.float32), out=ptr(T.float32), m=scalar(T.int32))
    x, out, m = kb.args
    offs = kb.arange(16)

    def outer(kb, i, carried):
        row = kb.load(kb.addptr(kb.op("tile.addptr", [x, kb.binary("mul", i, kb.const(16, T.int32))], x.type), offs))

        def inner(kb, l, acc):
            fl = kb.op("arith.cast", [l], scalar(T.float32), rounding="rtne")
            return [kb.binary("add", acc[0], kb.binary("mul", row, kb.splat(fl, 16)))]

        return build_for(kb, kb.const(0, T.int32), kb.const(3, T.int32), kb.const(1, T.int32), carried, inner)

    (acc,) = build_for(kb, kb.const(0, T.int32), m, kb.const(1, T.int32), [kb.const(0.0, T.float32, 16)], outer)
    kb.store(kb.addptr(out, offs), acc)
    kernel = compile_kernel(kb.done())
    x = rng.standard_normal(5 * 16).astype(np.float32)
    out = np.zeros(16, np.float32)
    assert kernel(x, out, 5).rc == 0
    expect = np.zeros(16, np.float32)
    for i in range(5):
        for l in range(3):
            expect = expect + x[i * 16:(i + 1) * 16] * np.float32(l)
    np.testing.assert_array_equal(out, expect)


def test_if_with_scalar_and_tile_results(rng):
    kb = KernelBuilder("branch", x=ptr(T.int32), out=ptr(T.int32), flag=scalar(T.int32))
    x, out, flag = kb.args
    offs = kb.arange(8)
    v = kb.load(kb.addptr(x, offs))
    cond = kb.cmp("gt", flag, kb.const(0, T.int32))
    s, t = build_if(kb, cond,
                    lambda kb: [kb.const(10, T.int32), kb.binary("mul", v, kb.const(2, T.int32, 8))],
                    lambda kb: [flag, kb.binary("sub", kb.const(0, T.int32, 8), v)],
                    [TileType(T.int32), tile(T.int32, 8)])
    kb.store(kb.addptr(out, offs), kb.binary("add", t, kb.splat(s, 8)))
    kernel = compile_kernel(kb.done())
    x = rng.integers(-50, 50, 8).astype(np.int32)
    out = np.zeros(8, np.int32)
    assert kernel(x, out, 3).rc == 0
    np.testing.assert_array_equal(out, 2 * x + 10)
    assert kernel(x, out, -4).rc == 0
    np.testing.assert_array_equal(out, -x - 4)


def test_if_without_results_guards_a_store():
    kb = KernelBuilder("guard", out=ptr(T.int32), flag=scalar(T.int1))
    out, flag = kb.args
    then, other = Block([]), Block([])
    with kb.b.at(then):
        kb.store(out, kb.const(7, T.int32))
        kb.b.create("scf.yield", [], [])
    with kb.b.at(other):
        kb.b.create("scf.yield", [], [])
    kb.b.create("scf.if", [flag], [], {}, [then, other])
    kernel = compile_kernel(kb.done())
    out = np.zeros(1, np.int32)
    assert kernel(out, False).rc == 0 and out[0] == 0
    assert kernel(out, True).rc == 0 and out[0] == 7


def test_while_collatz_steps_with_a_tile_riding_along():
    """while n != 1: n = collatz(n); t = t * 2 (a tile); the step count and t are stored."""
    kb = KernelBuilder("collatz", out=ptr(T.int32), tout=ptr(T.int32), n0=scalar(T.int32))
    out, tout, n0 = kb.args
    types = [TileType(T.int32), TileType(T.int32), tile(T.int32, 4)]
    before = Block(types)
    with kb.b.at(before):
        n, steps, t = before.args
        kb.b.create("scf.condition", [kb.cmp("ne", n, kb.const(1, T.int32)), n, steps, t], [])
    after = Block(types)
    with kb.b.at(after):
        n, steps, t = after.args
        odd = kb.cmp("eq", kb.binary("and", n, kb.const(1, T.int32)), kb.const(1, T.int32))
        up = kb.binary("add", kb.binary("mul", n, kb.const(3, T.int32)), kb.const(1, T.int32))
        down = kb.binary("div", n, kb.const(2, T.int32))
        nxt = kb.op("arith.select", [odd, up, down], n.type)
        kb.b.create("scf.yield", [nxt, kb.binary("add", steps, kb.const(1, T.int32)),
                                  kb.binary("mul", t, kb.const(2, T.int32, 4))], [])
    inits = [n0, kb.const(0, T.int32), kb.arange(4)]
    _, steps, t = kb.b.create("scf.while", inits, types, {}, [before, after]).results
    kb.store(out, steps)
    kb.store(kb.addptr(tout, kb.arange(4)), t)
    kernel = compile_kernel(kb.done())
    out, tout = np.zeros(1, np.int32), np.zeros(4, np.int32)
    for start in (1, 6, 27):
        assert kernel(out, tout, start).rc == 0
        n, count = start, 0
        while n != 1:
            n, count = (3 * n + 1 if n % 2 else n // 2), count + 1
        assert out[0] == count
        np.testing.assert_array_equal(tout, np.arange(4, dtype=np.int32) * np.int32(2**count % 2**32))


def test_loop_carried_pointer_keeps_its_provenance(rng):
    """p = x; for i in range(k): p = p + 16 — the loads through p are checked against x."""
    kb = KernelBuilder("walk", x=ptr(T.float32), out=ptr(T.float32), k=scalar(T.int32))
    x, out, k = kb.args
    offs = kb.arange(16)

    def body(kb, i, carried):
        p, acc = carried
        v = kb.load(kb.addptr(p, offs))
        return [kb.op("tile.addptr", [p, kb.const(16, T.int32)], p.type), kb.binary("add", acc, v)]

    _, acc = build_for(kb, kb.const(0, T.int32), k, kb.const(1, T.int32), [x, kb.const(0.0, T.float32, 16)], body)
    kb.store(kb.addptr(out, offs), acc)
    kernel = compile_kernel(kb.done())
    assert kernel.sites[0].buffer == 0
    x = rng.standard_normal(64).astype(np.float32)
    out = np.zeros(16, np.float32)
    assert kernel(x, out, 4).rc == 0
    np.testing.assert_allclose(out, x.reshape(4, 16).sum(0), rtol=1e-6)
    result = kernel(x, out, 5)
    assert result.rc == 1 and result.error["offset"] == 64 and result.error["buffer"] == 0
