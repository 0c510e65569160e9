"""Global memory: bounds and alignment errors (the right record, never a crash), unknown-provenance
pointers, masks, and atomics that really are atomic across threads."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest
from codegen_harness import KernelBuilder, compile_kernel, ptr, scalar, tile

from dsl import dtypes as T
from jit import abi
from jit.codegen.fusion import fused_values, users

BLOCK = 64


def offsets(kb, start=None, block=BLOCK):
    """pid * BLOCK + arange(BLOCK) (+ start)."""
    base = kb.binary("mul", kb.pid(), kb.const(block, T.int32))
    if start is not None:
        base = kb.binary("add", base, start)
    return kb.binary("add", kb.splat(base, block), kb.arange(block))


def copy_kernel(masked: bool, checks: bool = True):
    """out[offs] = x[offs + shift] (masked by offs < n when `masked`)."""
    kb = KernelBuilder("copy", x=ptr(T.float32), out=ptr(T.float32), n=scalar(T.int32), shift=scalar(T.int32))
    x, out, n, shift = kb.args
    offs = offsets(kb)
    mask = kb.cmp("lt", offs, kb.splat(n, BLOCK)) if masked else None
    src = kb.addptr(x, kb.binary("add", offs, kb.splat(shift, BLOCK)))
    kb.store(kb.addptr(out, offs), kb.load(src, mask), mask)
    return compile_kernel(kb.done(), checks=checks)


@pytest.fixture(scope="module")
def copy_masked():
    return copy_kernel(True)


def test_in_bounds_copy_with_shift(rng, copy_masked):
    x = rng.standard_normal(200).astype(np.float32)
    out = np.zeros(150, np.float32)
    assert copy_masked(x, out, 150, 50, grid=(3,)).rc == 0
    np.testing.assert_array_equal(out, x[50:])


def test_out_of_bounds_load_reports_site_program_offset_and_lane(rng, copy_masked):
    x = rng.standard_normal(200).astype(np.float32)
    out = np.zeros(150, np.float32)
    result = copy_masked(x, out, 150, 51, grid=(3,))
    assert result.rc == abi.OUT_OF_BOUNDS
    err = result.error
    assert err["code"] == abi.OUT_OF_BOUNDS
    assert copy_masked.sites[err["site"]].kind == "load" and copy_masked.sites[err["site"]].buffer == 0
    assert (err["pid_x"], err["buffer"]) == (2, 0)
    assert err["offset"] == 200  # element 149 + 51: the first element past x's end
    assert err["lane"] == 149 - 128


def test_negative_offsets_are_reported_as_negative(rng, copy_masked):
    x = rng.standard_normal(200).astype(np.float32)
    out = np.zeros(150, np.float32)
    result = copy_masked(x, out, 150, -3, grid=(3,))
    assert result.rc == abi.OUT_OF_BOUNDS
    assert (result.error["pid_x"], result.error["offset"], result.error["lane"]) == (0, -3, 0)


def test_out_of_bounds_store_is_caught_before_writing(rng):
    kernel = copy_kernel(False)
    x = rng.standard_normal(256).astype(np.float32)
    out = np.zeros(100, np.float32)
    result = kernel(x, out, 0, 0, grid=(4,))
    assert result.rc == abi.OUT_OF_BOUNDS
    site = kernel.sites[result.error["site"]]
    assert site.kind == "store" and site.buffer == 1
    assert result.error["offset"] == 100 and result.error["lane"] == 100 - 64
    np.testing.assert_array_equal(out[:64], x[:64])  # program 0 ran; program 1 failed before its store


def test_masked_off_lanes_may_point_anywhere(rng, copy_masked):
    x = rng.standard_normal(64).astype(np.float32)
    out = np.zeros(64, np.float32)
    assert copy_masked(x, out, 64, 0, grid=(50,)).rc == 0  # programs 1..49 have no active lane
    np.testing.assert_array_equal(out, x)


def test_checks_can_be_switched_off_at_run_time_and_compile_time(rng):
    x = rng.standard_normal(200).astype(np.float32)
    out = np.zeros(150, np.float32)
    assert copy_kernel(True)(x, out, 150, 10, grid=(3,), checks=0).rc == 0
    unchecked = copy_kernel(True, checks=False)
    assert unchecked(x, out, 150, 10, grid=(3,)).rc == 0
    assert "wavetile_fail" not in unchecked.lowered.llvm_ir


def test_misaligned_pointer_is_an_error(rng):
    kb = KernelBuilder("mis", x=ptr(T.float32), out=ptr(T.float32), bytes_off=scalar(T.int64))
    x, out, bytes_off = kb.args
    raw = kb.binary("add", kb.op("arith.cast", [x], scalar(T.int64), rounding="rtne"), bytes_off)
    moved = kb.op("arith.cast", [raw], x.type, rounding="rtne")
    offs = kb.arange(16)
    kb.store(kb.addptr(out, offs), kb.load(kb.addptr(moved, offs)))
    kernel = compile_kernel(kb.done())
    x = rng.standard_normal(64).astype(np.float32)
    out = np.zeros(16, np.float32)
    assert kernel(x, out, 8, extra_buffers=()).rc == 0
    np.testing.assert_array_equal(out, x[2:18])
    result = kernel(x, out, 6)
    assert result.rc == abi.MISALIGNED and result.error["buffer"] == 0 and result.error["lane"] == 0


def pointer_table_kernel():
    """Loads a pointer from a table (unknown provenance) and reads 32 floats through it."""
    kb = KernelBuilder("gather", table=ptr(T.pointer_type(T.float32)), out=ptr(T.float32), start=scalar(T.int32))
    table, out, start = kb.args
    row = kb.load(kb.op("tile.addptr", [table, kb.pid()], table.type))
    offs = kb.binary("add", kb.splat(start, 32), kb.arange(32))
    values = kb.load(kb.addptr(row, offs))
    out_offs = kb.binary("add", kb.splat(kb.binary("mul", kb.pid(), kb.const(32, T.int32)), 32), kb.arange(32))
    kb.store(kb.addptr(out, out_offs), values)
    return compile_kernel(kb.done())


def test_pointers_loaded_from_memory_are_checked_against_all_buffers(rng):
    kernel = pointer_table_kernel()
    a = rng.standard_normal(40).astype(np.float32)
    b = rng.standard_normal(100).astype(np.float32)
    table = np.array([a.ctypes.data, b.ctypes.data], dtype=np.uint64)
    out = np.zeros(64, np.float32)
    assert kernel(table, out, 5, grid=(2,), extra_buffers=[a, b]).rc == 0
    np.testing.assert_array_equal(out, np.concatenate([a[5:37], b[5:37]]))
    assert kernel.sites[1].buffer is None
    result = kernel(table, out, 9, grid=(2,), extra_buffers=[a, b])  # a[9:41] runs past a's 40 elements
    assert result.rc == abi.OUT_OF_BOUNDS
    assert result.error["buffer"] == -1 and result.error["lane"] == 31
    assert result.error["offset"] == a.ctypes.data + 40 * 4  # no buffer matched: the raw address


def test_wild_pointer_never_crashes_the_process():
    kernel = pointer_table_kernel()
    table = np.array([16, 0], dtype=np.uint64)
    out = np.zeros(64, np.float32)
    result = kernel(table, out, 0, grid=(2,))
    assert result.rc == abi.OUT_OF_BOUNDS and result.error["offset"] == 16


def test_scalar_load_and_store(rng):
    kb = KernelBuilder("scalar", x=ptr(T.int64), out=ptr(T.int64), i=scalar(T.int32))
    x, out, i = kb.args
    v = kb.load(kb.op("tile.addptr", [x, i], x.type))
    kb.store(out, kb.binary("mul", v, kb.const(3, T.int64)))
    kernel = compile_kernel(kb.done())
    x = rng.integers(-1000, 1000, 10)
    out = np.zeros(1, np.int64)
    assert kernel(x, out, 7).rc == 0 and out[0] == 3 * x[7]
    result = kernel(x, out, 10)
    assert result.rc == abi.OUT_OF_BOUNDS and result.error["offset"] == 10 and result.error["lane"] == 0


def test_two_dimensional_tile_load_with_strides_and_other(rng):
    rows, cols, stride = 8, 16, 21
    kb = KernelBuilder("load2d", x=ptr(T.float16), out=ptr(T.float32), n_rows=scalar(T.int32))
    x, out, n_rows = kb.args
    r = kb.op("tile.expand_dims", [kb.arange(rows)], tile(T.int32, rows, 1), axis=1)
    c = kb.op("tile.expand_dims", [kb.arange(cols)], tile(T.int32, 1, cols), axis=0)
    r2 = kb.op("tile.broadcast", [r], tile(T.int32, rows, cols))
    c2 = kb.op("tile.broadcast", [c], tile(T.int32, rows, cols))
    offs = kb.binary("add", kb.binary("mul", r2, kb.const(stride, T.int32, rows, cols)), c2)
    mask = kb.cmp("lt", r2, kb.op("tile.splat", [n_rows], tile(T.int32, rows, cols)))
    values = kb.load(kb.addptr(x, offs), mask, other=-2.5)
    wide = kb.op("arith.cast", [values], tile(T.float32, rows, cols), rounding="rtne")
    kb.store(kb.addptr(out, kb.binary("add", kb.binary("mul", r2, kb.const(cols, T.int32, rows, cols)), c2)), wide)
    kernel = compile_kernel(kb.done())
    x = rng.standard_normal(5 * stride).astype(np.float16)
    out = np.zeros((rows, cols), np.float32)
    assert kernel(x, out, 5).rc == 0
    expect = np.full((rows, cols), -2.5, np.float32)
    expect[:5] = x.reshape(5, stride)[:, :cols]
    np.testing.assert_array_equal(out, expect)


# ----------------------------------------------------------------------------------------------------
# atomics


def atomic_kernel(kind: str, dt: T.dtype, sem: str = "acq_rel", block: int = 32):
    """old = atomic_<kind>(target + idx[offs], values[offs], offs < n); olds[offs] = old."""
    kb = KernelBuilder("atomic", target=ptr(dt), idx=ptr(T.int32), values=ptr(dt), olds=ptr(dt),
                       n=scalar(T.int32))
    target, idx, values, olds, n = kb.args
    offs = offsets(kb, block=block)
    mask = kb.cmp("lt", offs, kb.splat(n, block))
    where = kb.load(kb.addptr(idx, offs), mask)
    value = kb.load(kb.addptr(values, offs), mask)
    old = kb.op("tile.atomic", [kb.addptr(target, where), value, mask], value.type, kind=kind, sem=sem, scope="gpu")
    kb.store(kb.addptr(olds, offs), old, mask)
    return compile_kernel(kb.done())


@pytest.mark.parametrize("kind, dt", [("add", T.int32), ("add", T.float32), ("max", T.int32), ("min", T.int64),
                                      ("max", T.uint32), ("min", T.float64), ("and", T.int32), ("or", T.uint64),
                                      ("xor", T.int32), ("add", T.float16), ("add", T.bfloat16)])
def test_atomics_from_two_threads_are_exact(rng, kind, dt):
    kernel = atomic_kernel(kind, dt)
    n, bins = 3001, 7
    np_dt = {"bf16": ml_dtypes.bfloat16}.get(dt.name, dt.to_numpy())
    idx = rng.integers(0, bins, n).astype(np.int32)
    if dt.is_floating():
        values = rng.integers(-8, 8, n).astype(np_dt)  # small integers: every order gives the same sum
    else:
        values = rng.integers(0 if not dt.is_int_signed() else -1000, 1000, n).astype(np_dt)
    start = {"and": -1, "min": 10**6}.get(kind, 0)
    target = np.full(bins, start, np_dt)
    olds = np.zeros(n, np_dt)
    assert kernel(target, idx, values, olds, n, grid=((n + 31) // 32,), threads=2, chunk=1).rc == 0
    reduce = {"add": np.add, "max": np.maximum, "min": np.minimum, "and": np.bitwise_and, "or": np.bitwise_or,
              "xor": np.bitwise_xor}[kind]
    expect = np.full(bins, start, np_dt)
    reduce.at(expect, idx, values)
    np.testing.assert_array_equal(target, expect)
    if kind == "add" and not dt.is_floating():  # the old values are the prefix sums in some order
        assert set(olds.tolist()) <= set(range(-10**7, 10**7))


def test_atomic_xchg_and_relaxed_add_return_old_values():
    kernel = atomic_kernel("xchg", T.int32, block=8)
    target = np.array([100], np.int32)
    idx = np.zeros(5, np.int32)
    values = np.arange(1, 6, dtype=np.int32)
    olds = np.zeros(5, np.int32)
    assert kernel(target, idx, values, olds, 5).rc == 0
    assert olds.tolist() == [100, 1, 2, 3, 4] and target[0] == 5  # lanes in element order
    kernel = atomic_kernel("add", T.int32, sem="relaxed", block=8)
    target[0] = 0
    assert kernel(target, idx, values, olds, 5).rc == 0
    assert olds.tolist() == [0, 1, 3, 6, 10] and target[0] == 15


def test_atomic_out_of_bounds():
    kernel = atomic_kernel("add", T.int32)
    target = np.zeros(4, np.int32)
    idx = np.array([0, 1, 4, 2], np.int32)
    result = kernel(target, idx, np.ones(4, np.int32), np.zeros(4, np.int32), 4)
    assert result.rc == abi.OUT_OF_BOUNDS
    assert kernel.sites[result.error["site"]].kind == "atomic"
    assert (result.error["offset"], result.error["lane"], result.error["buffer"]) == (4, 2, 0)
    assert target.tolist() == [0, 0, 0, 0]


def test_atomic_cas_lock_counter_from_two_threads():
    """A spin lock built from atomic_cas protects a non-atomic read-modify-write."""
    kb = KernelBuilder("cas", lock=ptr(T.int32), counter=ptr(T.int32))
    lock, counter = kb.args
    before = kb.b.block
    from dsl.ir import Block

    cond_block = Block([])
    with kb.b.at(cond_block):
        old = kb.op("tile.atomic_cas", [lock, kb.const(0, T.int32), kb.const(1, T.int32)], scalar(T.int32),
                    sem="acq_rel", scope="gpu")
        busy = kb.cmp("ne", old, kb.const(0, T.int32))
        kb.b.create("scf.condition", [busy], [])
    body = Block([])
    with kb.b.at(body):
        kb.b.create("scf.yield", [], [])
    kb.b.create("scf.while", [], [], {}, [cond_block, body])
    assert kb.b.block is before
    value = kb.load(counter)
    kb.store(counter, kb.binary("add", value, kb.const(1, T.int32)))
    kb.op("tile.atomic", [lock, kb.const(0, T.int32), kb.const(True, T.int1)], scalar(T.int32), kind="xchg",
          sem="acq_rel", scope="gpu")
    kernel = compile_kernel(kb.done())
    lock, counter = np.zeros(1, np.int32), np.zeros(1, np.int32)
    assert kernel(lock, counter, grid=(2000,), threads=2, chunk=1).rc == 0
    assert counter[0] == 2000 and lock[0] == 0


def test_atomic_cas_on_floats_compares_bits():
    kb = KernelBuilder("fcas", target=ptr(T.float32), olds=ptr(T.float32))
    target, olds = kb.args
    offs = kb.arange(4)
    old = kb.op("tile.atomic_cas", [kb.addptr(target, offs), kb.const(1.5, T.float32, 4), kb.const(-2.0, T.float32, 4)],
                tile(T.float32, 4), sem="acq_rel", scope="gpu")
    kb.store(kb.addptr(olds, offs), old)
    kernel = compile_kernel(kb.done())
    target = np.array([1.5, 0.5, 1.5, -0.0], np.float32)
    olds = np.zeros(4, np.float32)
    assert kernel(target, olds).rc == 0
    assert target.tolist() == [-2.0, 0.5, -2.0, -0.0] and olds.tolist() == [1.5, 0.5, 1.5, -0.0]


# ----------------------------------------------------------------------------------------------------
# loads fused into their consumer keep tile semantics


def test_fused_load_into_overlapping_store_reads_before_writing(rng):
    """x[offs + 1] = x[offs] * 2 in one program: every lane must see the old x."""
    kb = KernelBuilder("shift", x=ptr(T.float32))
    (x,) = kb.args
    offs = kb.arange(BLOCK)
    doubled = kb.binary("mul", kb.load(kb.addptr(x, offs)), kb.const(2.0, T.float32, BLOCK))
    kb.store(kb.addptr(x, kb.binary("add", offs, kb.const(1, T.int32, BLOCK))), doubled)
    kernel = compile_kernel(kb.done())
    loads = [op.result for op in kernel.func.walk() if op.name == "tile.load"]
    assert set(loads) <= fused_values(kernel.func, users(kernel.func))  # the load runs in the store's loop
    data = rng.standard_normal(BLOCK + 1).astype(np.float32)
    expect = data.copy()
    expect[1:] = data[:-1] * 2
    assert kernel(data).rc == 0
    np.testing.assert_array_equal(data, expect)


def test_fused_load_in_place_and_disjoint(rng):
    kb = KernelBuilder("scale", x=ptr(T.float32), out=ptr(T.float32), n=scalar(T.int32))
    x, out, n = kb.args
    offs = offsets(kb)
    mask = kb.cmp("lt", offs, kb.splat(n, BLOCK))
    kb.store(kb.addptr(out, offs), kb.binary("add", kb.load(kb.addptr(x, offs), mask), kb.const(1.0, T.float32, BLOCK)),
             mask)
    kernel = compile_kernel(kb.done())
    data = rng.standard_normal(150).astype(np.float32)
    out = np.zeros(150, np.float32)
    assert kernel(data, out, 150, grid=(3,)).rc == 0
    np.testing.assert_array_equal(out, data + 1)
    expect = data + 1
    assert kernel(data, data, 150, grid=(3,)).rc == 0  # the same array as input and output
    np.testing.assert_array_equal(data, expect)


def test_store_between_a_load_and_its_use_is_respected(rng):
    kb = KernelBuilder("order", x=ptr(T.int32), out=ptr(T.int32))
    x, out = kb.args
    offs = kb.arange(16)
    old = kb.load(kb.addptr(x, offs))
    kb.store(kb.addptr(x, offs), kb.const(0, T.int32, 16))
    kb.store(kb.addptr(out, offs), kb.binary("add", old, kb.const(1, T.int32, 16)))
    kernel = compile_kernel(kb.done())
    data = rng.integers(1, 100, 16).astype(np.int32)
    expect = data + 1
    out = np.zeros(16, np.int32)
    assert kernel(data, out).rc == 0
    np.testing.assert_array_equal(out, expect)
    assert not data.any()


def test_scatter_through_loaded_indices_with_a_different_load_mask(rng):
    kb = KernelBuilder("scatter", idx=ptr(T.int32), v=ptr(T.float32), out=ptr(T.float32), n=scalar(T.int32))
    idx, v, out, n = kb.args
    offs = kb.arange(32)
    half = kb.cmp("lt", offs, kb.const(20, T.int32, 32))
    where = kb.load(kb.addptr(idx, offs))
    value = kb.load(kb.addptr(v, offs), half, other=-1.0)
    kb.store(kb.addptr(out, where), value, kb.cmp("lt", offs, kb.splat(n, 32)))
    kernel = compile_kernel(kb.done())
    perm = rng.permutation(32).astype(np.int32)
    values = rng.standard_normal(32).astype(np.float32)
    out = np.zeros(32, np.float32)
    assert kernel(perm, values, out, 30).rc == 0
    expect = np.zeros(32, np.float32)
    expect[perm[:30]] = np.where(np.arange(30) < 20, values[:30], -1.0)
    np.testing.assert_array_equal(out, expect)
    perm[5] = 40
    result = kernel(perm, values, out, 30)
    assert result.rc == abi.OUT_OF_BOUNDS and result.error["lane"] == 5 and result.error["buffer"] == 2
