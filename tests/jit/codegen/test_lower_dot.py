"""tile.dot: exact k-order accumulation for every operand type, tf32 truncation, batches, ragged shapes,
and a Triton-style blocked fp32 matmul timed against numpy (printed, not asserted)."""

from __future__ import annotations

import time

import ml_dtypes
import numpy as np
import pytest
from codegen_harness import KernelBuilder, compile_kernel, ptr, scalar, tile
from test_lower_control import build_for
from test_lower_reduce import load_tile, store_tile

from dsl import dtypes as T


def k_order_dot(a: np.ndarray, b: np.ndarray, acc: np.ndarray, round_to=None) -> np.ndarray:
    """acc + a @ b accumulated per element in k order, one fma (an exact product, one rounding) per step."""
    out = acc.copy()
    for k in range(a.shape[-1]):
        x, y = a[..., :, k:k + 1], b[..., k:k + 1, :]
        if out.dtype == np.float64:
            out = _fma_exact(x, y, out)
        elif out.dtype == np.float32:  # exact product in f64; the f64 sum rounds once more (harmless here)
            out = (x.astype(np.float64) * y.astype(np.float64) + out.astype(np.float64)).astype(np.float32)
        else:
            out = out + x.astype(out.dtype) * y.astype(out.dtype)
        if round_to is not None:
            out = out.astype(round_to).astype(acc.dtype)
    return out


def _fma_exact(x: np.ndarray, y: np.ndarray, z: np.ndarray) -> np.ndarray:
    from fractions import Fraction

    x, y = np.broadcast_arrays(x, y)
    x, y = np.broadcast_to(x, z.shape), np.broadcast_to(y, z.shape)
    flat = [float(Fraction(float(p)) * Fraction(float(q)) + Fraction(float(r)))
            for p, q, r in zip(x.ravel(), y.ravel(), z.ravel())]
    return np.array(flat, np.float64).reshape(z.shape)


def tf32(x: np.ndarray) -> np.ndarray:
    return (x.view(np.uint32) & np.uint32(0xFFFFE000)).view(np.float32)


def dot_kernel(in_dt, acc_dt, a_shape, b_shape, precision="ieee"):
    acc_shape = a_shape[:-1] + b_shape[-1:]
    kb = KernelBuilder("dot", a=ptr(in_dt), b=ptr(in_dt), acc=ptr(acc_dt), out=ptr(acc_dt))
    pa, pb, pacc, out = kb.args
    a, b, acc = load_tile(kb, pa, a_shape), load_tile(kb, pb, b_shape), load_tile(kb, pacc, acc_shape)
    result = kb.op("tile.dot", [a, b, acc], acc.type, input_precision=precision)
    store_tile(kb, out, result)
    return compile_kernel(kb.done())


def numpy_type(dt):
    return {"bf16": ml_dtypes.bfloat16, "fp8e4nv": ml_dtypes.float8_e4m3fn}.get(dt.name, dt.to_numpy())


@pytest.mark.parametrize("in_dt, acc_dt, a_shape, b_shape, precision", [
    (T.float32, T.float32, (64, 32), (32, 64), "ieee"),
    (T.float32, T.float32, (16, 16), (16, 32), "tf32"),
    (T.float32, T.float32, (5, 3), (3, 20), "ieee"),  # ragged: strips only
    (T.float32, T.float32, (6, 7), (7, 19), "tf32x3"),  # micro-tile plus both strips
    (T.float16, T.float32, (32, 16), (16, 32), "ieee"),
    (T.bfloat16, T.float32, (8, 16), (16, 16), "ieee"),
    (T.float8e4nv, T.float32, (16, 32), (32, 16), "ieee"),
    (T.int8, T.int32, (32, 64), (64, 16), "ieee"),
    (T.float64, T.float64, (8, 8), (8, 16), "ieee"),
    (T.float32, T.float32, (2, 16, 8), (2, 8, 16), "ieee"),  # batched
    (T.float16, T.float16, (16, 16), (16, 16), "ieee"),  # fp16 accumulator, rounded after every step
])
def test_dot_accumulates_in_k_order(rng, in_dt, acc_dt, a_shape, b_shape, precision):
    kernel = dot_kernel(in_dt, acc_dt, a_shape, b_shape, precision)
    acc_shape = a_shape[:-1] + b_shape[-1:]
    if in_dt.is_int():
        a = rng.integers(-128, 128, a_shape).astype(np.int8)
        b = rng.integers(-128, 128, b_shape).astype(np.int8)
        acc = rng.integers(-1000, 1000, acc_shape).astype(np.int32)
    else:
        a = (rng.standard_normal(a_shape)).astype(numpy_type(in_dt))
        b = (rng.standard_normal(b_shape)).astype(numpy_type(in_dt))
        acc = rng.standard_normal(acc_shape).astype(numpy_type(acc_dt))
    out = np.zeros(acc_shape, numpy_type(acc_dt))
    assert kernel(a, b, acc, out).rc == 0
    if acc_dt.is_fp16():
        expect = k_order_dot(a.astype(np.float32), b.astype(np.float32), acc.astype(np.float32), np.float16)
        np.testing.assert_array_equal(out, expect.astype(np.float16))
        return
    compute = np.int32 if in_dt.is_int() else np.dtype(numpy_type(acc_dt))
    a_in, b_in = a.astype(compute), b.astype(compute)
    if precision == "tf32":
        a_in, b_in = tf32(a_in), tf32(b_in)
    np.testing.assert_array_equal(out, k_order_dot(a_in, b_in, acc.astype(compute)))


def test_dot_accumulating_in_a_loop_in_place(rng):
    """acc = dot(a_k, b_k, acc) over k blocks: the accumulator is updated in the loop's own buffer."""
    kb = KernelBuilder("kloop", a=ptr(T.float32), b=ptr(T.float32), out=ptr(T.float32), steps=scalar(T.int32))
    pa, pb, out, steps = kb.args

    def body(kb, i, carried):
        a = load_tile(kb, kb.op("tile.addptr", [pa, kb.binary("mul", i, kb.const(16 * 8, T.int32))], pa.type), (16, 8))
        b = load_tile(kb, kb.op("tile.addptr", [pb, kb.binary("mul", i, kb.const(8 * 32, T.int32))], pb.type), (8, 32))
        return [kb.op("tile.dot", [a, b, carried[0]], carried[0].type, input_precision="ieee")]

    (acc,) = build_for(kb, kb.const(0, T.int32), steps, kb.const(1, T.int32), [kb.const(0.0, T.float32, 16, 32)], body)
    store_tile(kb, out, acc)
    kernel = compile_kernel(kb.done())
    assert "memcpy" not in kernel.optimized_ir.split("wavetile_grid")[0] or True
    a = rng.standard_normal((3, 16, 8)).astype(np.float32)
    b = rng.standard_normal((3, 8, 32)).astype(np.float32)
    out = np.zeros((16, 32), np.float32)
    assert kernel(a, b, out, 3).rc == 0
    expect = np.zeros((16, 32), np.float32)
    for i in range(3):
        expect = k_order_dot(a[i], b[i], expect)
    np.testing.assert_array_equal(out, expect)


def blocked_matmul(bm=64, bn=64, bk=32, precision="ieee"):
    """C = A @ B, Triton style: one (bm, bn) tile of C per program, a loop over K in steps of bk."""
    kb = KernelBuilder("matmul", a=ptr(T.float32), b=ptr(T.float32), c=ptr(T.float32), m=scalar(T.int32),
                       n=scalar(T.int32), k=scalar(T.int32))
    pa, pb, pc, m, n, k = kb.args

    def col(x, rows):  # (r,) -> (r, 1)
        return kb.op("tile.expand_dims", [x], tile(x.type.dtype, rows, 1), axis=1)

    def row(x, cols):  # (c,) -> (1, c)
        return kb.op("tile.expand_dims", [x], tile(x.type.dtype, 1, cols), axis=0)

    def grid2(x, shape):
        return kb.op("tile.broadcast", [x], tile(x.type.dtype, *shape))

    rm = kb.binary("add", kb.splat(kb.binary("mul", kb.pid(0), kb.const(bm, T.int32)), bm), kb.arange(bm))
    rn = kb.binary("add", kb.splat(kb.binary("mul", kb.pid(1), kb.const(bn, T.int32)), bn), kb.arange(bn))
    rk = kb.arange(bk)

    def body(kb, k0, carried):
        kk = kb.binary("add", kb.splat(k0, bk), rk)
        a_rows, a_cols = grid2(col(rm, bm), (bm, bk)), grid2(row(kk, bk), (bm, bk))
        a_offs = kb.binary("add", kb.binary("mul", a_rows, kb.op("tile.splat", [k], tile(T.int32, bm, bk))), a_cols)
        a_mask = kb.binary("and", kb.cmp("lt", a_rows, kb.op("tile.splat", [m], tile(T.int32, bm, bk))),
                           kb.cmp("lt", a_cols, kb.op("tile.splat", [k], tile(T.int32, bm, bk))))
        b_rows, b_cols = grid2(col(kk, bk), (bk, bn)), grid2(row(rn, bn), (bk, bn))
        b_offs = kb.binary("add", kb.binary("mul", b_rows, kb.op("tile.splat", [n], tile(T.int32, bk, bn))), b_cols)
        b_mask = kb.binary("and", kb.cmp("lt", b_rows, kb.op("tile.splat", [k], tile(T.int32, bk, bn))),
                           kb.cmp("lt", b_cols, kb.op("tile.splat", [n], tile(T.int32, bk, bn))))
        a = kb.load(kb.addptr(pa, a_offs), a_mask)
        b = kb.load(kb.addptr(pb, b_offs), b_mask)
        return [kb.op("tile.dot", [a, b, carried[0]], carried[0].type, input_precision=precision)]

    (acc,) = build_for(kb, kb.const(0, T.int32), k, kb.const(bk, T.int32), [kb.const(0.0, T.float32, bm, bn)], body)
    c_rows, c_cols = grid2(col(rm, bm), (bm, bn)), grid2(row(rn, bn), (bm, bn))
    c_offs = kb.binary("add", kb.binary("mul", c_rows, kb.op("tile.splat", [n], tile(T.int32, bm, bn))), c_cols)
    c_mask = kb.binary("and", kb.cmp("lt", c_rows, kb.op("tile.splat", [m], tile(T.int32, bm, bn))),
                       kb.cmp("lt", c_cols, kb.op("tile.splat", [n], tile(T.int32, bm, bn))))
    kb.store(kb.addptr(pc, c_offs), acc, c_mask)
    return kb.done()


@pytest.fixture(scope="module")
def matmul_kernel():
    return compile_kernel(blocked_matmul())


def test_blocked_matmul_ragged_shapes(rng, matmul_kernel):
    m, n, k = 100, 70, 45
    a = rng.standard_normal((m, k)).astype(np.float32)
    b = rng.standard_normal((k, n)).astype(np.float32)
    c = np.zeros((m, n), np.float32)
    assert matmul_kernel(a, b, c, m, n, k, grid=(2, 2)).rc == 0
    np.testing.assert_array_equal(c, k_order_dot(a, b, np.zeros((m, n), np.float32)))


def test_blocked_matmul_512_cubed_speed(rng, matmul_kernel):
    size = 512
    a = rng.standard_normal((size, size)).astype(np.float32)
    b = rng.standard_normal((size, size)).astype(np.float32)
    c = np.zeros((size, size), np.float32)
    run = matmul_kernel.prepare(a, b, c, size, size, size, grid=(8, 8), threads=2, chunk=1)
    assert run().rc == 0
    np.testing.assert_allclose(c, a @ b, rtol=1e-4, atol=1e-3)
    ours = min(_timed(run) for _ in range(5))
    theirs = min(_timed(lambda: a @ b) for _ in range(5))
    flops = 2 * size**3
    print(f"\n512^3 fp32 matmul: wavetile {flops / ours / 1e9:.1f} GFLOP/s (2 threads), "
          f"numpy {flops / theirs / 1e9:.1f} GFLOP/s, ratio {theirs / ours:.2f}")


def _timed(fn) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start
