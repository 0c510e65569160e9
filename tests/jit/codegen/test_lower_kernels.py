"""End-to-end lowering of whole kernels built by hand: vector add, row softmax, grids, threads, arguments."""

from __future__ import annotations

import numpy as np
import pytest
from codegen_harness import KernelBuilder, compile_kernel, ptr, scalar

from dsl import dtypes as T
from jit.codegen import CodegenOptions, lower


def vector_add(block: int = 256, dt: T.dtype = T.float32):
    kb = KernelBuilder("add", x=ptr(dt), y=ptr(dt), out=ptr(dt), n=scalar(T.int32))
    x, y, out, n = kb.args
    base = kb.binary("mul", kb.pid(), kb.const(block, T.int32))
    offs = kb.binary("add", kb.splat(base, block), kb.arange(block))
    mask = kb.cmp("lt", offs, kb.splat(n, block))
    total = kb.binary("add", kb.load(kb.addptr(x, offs), mask), kb.load(kb.addptr(y, offs), mask))
    kb.store(kb.addptr(out, offs), total, mask)
    return kb.done()


def row_softmax(block: int):
    kb = KernelBuilder("softmax", x=ptr(T.float32), out=ptr(T.float32), stride=scalar(T.int32),
                       n=scalar(T.int32))
    x, out, stride, n = kb.args
    row = kb.binary("mul", kb.pid(), stride)
    offs = kb.arange(block)
    mask = kb.cmp("lt", offs, kb.splat(n, block))
    values = kb.load(kb.addptr(kb.op("tile.addptr", [x, row], x.type), offs), mask, other=float("-inf"))
    (top,) = kb.reduce([values], 0, lambda k, lhs, rhs: [k.binary("max", lhs[0], rhs[0], propagate_nan=True)])
    num = kb.op("math.exp", [kb.binary("sub", values, kb.splat(top, block))], values.type)
    (total,) = kb.reduce([num], 0, lambda k, lhs, rhs: [k.binary("add", lhs[0], rhs[0])])
    kb.store(kb.addptr(kb.op("tile.addptr", [out, row], out.type), offs), kb.binary("div", num, kb.splat(total, block)),
             mask)
    return kb.done()


def softmax_reference(x: np.ndarray) -> np.ndarray:
    e = np.exp(x - x.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


@pytest.fixture(scope="module")
def add_kernel():
    return compile_kernel(vector_add())


@pytest.mark.parametrize("n", [1, 255, 256, 1000, 4099])
def test_vector_add_with_masked_tail(rng, add_kernel, n):
    x, y = rng.standard_normal(n).astype(np.float32), rng.standard_normal(n).astype(np.float32)
    out = np.full(n, np.nan, np.float32)
    result = add_kernel(x, y, out, n, grid=((n + 255) // 256,))
    assert result.rc == 0
    np.testing.assert_array_equal(out, x + y)


def test_vector_add_on_two_threads_with_small_chunks(rng, add_kernel):
    n = 100_003
    x, y = rng.standard_normal(n).astype(np.float32), rng.standard_normal(n).astype(np.float32)
    out = np.zeros(n, np.float32)
    assert add_kernel(x, y, out, n, grid=((n + 255) // 256,), threads=2, chunk=3).rc == 0
    np.testing.assert_array_equal(out, x + y)


def test_pid_order_permutes_programs_without_changing_results(rng, add_kernel):
    n = 256 * 37 - 5
    x, y = rng.standard_normal(n).astype(np.float32), rng.standard_normal(n).astype(np.float32)
    out = np.zeros(n, np.float32)
    order = rng.permutation(37)
    assert add_kernel(x, y, out, n, grid=(37,), pid_order=order).rc == 0
    np.testing.assert_array_equal(out, x + y)


@pytest.mark.parametrize("dt", [T.float16, T.bfloat16, T.int8, T.int64, T.float64])
def test_vector_add_other_dtypes(rng, dt):
    import ml_dtypes

    kernel = compile_kernel(vector_add(64, dt))
    n = 300
    np_dt = {"bf16": ml_dtypes.bfloat16}.get(dt.name, dt.to_numpy())
    if dt.is_floating():
        x, y = (rng.standard_normal(n).astype(np_dt) for _ in range(2))
        expect = x + y if dt.is_fp64() else (x.astype(np.float32) + y.astype(np.float32)).astype(np_dt)
    else:
        x, y = (rng.integers(-100, 100, n).astype(np_dt) for _ in range(2))
        expect = x + y
    out = np.zeros(n, np_dt)
    assert kernel(x, y, out, n, grid=(5,)).rc == 0
    np.testing.assert_array_equal(out.view(np.uint8), expect.view(np.uint8))


@pytest.mark.parametrize("cols", [1000, 1024, 37])
def test_row_softmax(rng, cols):
    block = 1 << (cols - 1).bit_length()
    kernel = compile_kernel(row_softmax(block))
    rows = 67
    x = rng.standard_normal((rows, cols)).astype(np.float32) * 4
    out = np.zeros_like(x)
    assert kernel(x, out, cols, cols, grid=(rows,)).rc == 0
    np.testing.assert_allclose(out, softmax_reference(x), rtol=2e-6, atol=1e-7)


def test_program_ids_and_grid_sizes_on_three_axes():
    kb = KernelBuilder("ids", out=ptr(T.int32))
    (out,) = kb.args
    ids = [kb.pid(a) for a in range(3)]
    sizes = [kb.op("tile.num_programs", [], scalar(T.int32), axis=a) for a in range(3)]
    linear = kb.binary("add", ids[0], kb.binary("mul", sizes[0], kb.binary("add", ids[1], kb.binary("mul", sizes[1],
                                                                                                   ids[2]))))
    slot = kb.binary("mul", linear, kb.const(6, T.int32))
    for i, v in enumerate(ids + sizes):
        p = kb.op("tile.addptr", [out, kb.binary("add", slot, kb.const(i, T.int32))], out.type)
        kb.store(p, v)
    kernel = compile_kernel(kb.done())
    grid = (3, 4, 5)
    out = np.full(60 * 6, -1, np.int32)
    assert kernel(out, grid=grid, threads=2, chunk=7).rc == 0
    rows = out.reshape(60, 6)
    z, y, x = np.meshgrid(range(5), range(4), range(3), indexing="ij")
    np.testing.assert_array_equal(rows[:, 0], x.ravel())
    np.testing.assert_array_equal(rows[:, 1], y.ravel())
    np.testing.assert_array_equal(rows[:, 2], z.ravel())
    assert (rows[:, 3:] == grid).all()


@pytest.mark.parametrize("dt, value", [(T.int8, -7), (T.uint8, 250), (T.int16, -30000), (T.int32, -2**31),
                                       (T.uint32, 2**32 - 1), (T.int64, -2**63 + 5), (T.uint64, 2**64 - 3),
                                       (T.float32, -1.25e-3), (T.float64, 3.141592653589793), (T.int1, True),
                                       (T.float16, 0.333251953125)])
def test_scalar_arguments_round_trip(dt, value):
    kb = KernelBuilder("arg", out=ptr(dt), v=scalar(dt))
    out, v = kb.args
    kb.store(out, v)
    kernel = compile_kernel(kb.done())
    out = np.zeros(1, dt.to_numpy())
    assert kernel(out, value).rc == 0
    assert out[0] == np.asarray(value).astype(dt.to_numpy()) if not dt.is_fp16() else out[0] == np.float16(value)


def test_lowering_is_cheap_and_text_is_deterministic():
    import time

    func = row_softmax(1024)
    first = lower(func, CodegenOptions())
    elapsed = []
    for _ in range(3):
        start = time.perf_counter()
        assert lower(func, CodegenOptions()).llvm_ir == first.llvm_ir
        elapsed.append(time.perf_counter() - start)
    assert min(elapsed) < 0.25  # ~20 ms on an idle machine; generous for loaded CI runners
    assert [s.kind for s in first.sites] == ["load", "store"]
    assert first.stack_bytes >= 3 * 1024 * 4  # at least the loaded row, the exponentials and a scratch
