"""More of triton.language, end to end: scans, sort, histogram, shapes, block pointers, descriptors, locks."""

import ml_dtypes
import numpy as np
import pytest

import dsl as tl
from jit import DeviceAssertionError, jit


@jit
def k_scan(x_ptr, o_ptr, B: tl.constexpr):
    r = tl.arange(0, B)
    x = tl.load(x_ptr + r)
    tl.store(o_ptr + r, tl.cumsum(x, axis=0))


@jit
def k_sort(x_ptr, o_ptr, B: tl.constexpr):
    r = tl.arange(0, B)
    tl.store(o_ptr + r, tl.sort(tl.load(x_ptr + r)))


@jit
def k_hist(x_ptr, o_ptr, B: tl.constexpr, NB: tl.constexpr):
    r = tl.arange(0, B)
    tl.store(o_ptr + tl.arange(0, NB), tl.histogram(tl.load(x_ptr + r), NB))


@jit
def k_joinsplit(x_ptr, o_ptr, B: tl.constexpr):
    r = tl.arange(0, B)
    x = tl.load(x_ptr + r)
    a, b = tl.split(tl.join(x, x * 2))
    tl.store(o_ptr + r, a + b)


@jit
def k_flip(x_ptr, o_ptr, B: tl.constexpr):
    r = tl.arange(0, B)
    tl.store(o_ptr + r, tl.flip(tl.load(x_ptr + r)))


@jit
def k_blockptr(x_ptr, o_ptr, M, N, BM: tl.constexpr, BN: tl.constexpr):
    p = tl.make_block_ptr(x_ptr, (M, N), (N, 1), (0, 0), (BM, BN), (1, 0))
    x = tl.load(p, boundary_check=(0, 1))
    q = tl.make_block_ptr(o_ptr, (M, N), (N, 1), (0, 0), (BM, BN), (1, 0))
    tl.store(q, x * 2, boundary_check=(0, 1))


@jit
def k_desc(x_ptr, o_ptr, M, N, BM: tl.constexpr, BN: tl.constexpr):
    d = tl.make_tensor_descriptor(x_ptr, [M, N], [N, 1], [BM, BN])
    e = tl.make_tensor_descriptor(o_ptr, [M, N], [N, 1], [BM, BN])
    e.store([0, 0], d.load([0, 0]) + 1)


@jit
def k_lock(lock_ptr, c_ptr):
    while tl.atomic_cas(lock_ptr, 0, 1) == 1:
        pass
    tl.store(c_ptr, tl.load(c_ptr) + 1)
    tl.debug_barrier()
    tl.atomic_xchg(lock_ptr, 0)


@jit
def k_print(x_ptr):
    print("value", tl.load(x_ptr))


@jit
def k_assert(x_ptr):
    tl.device_assert(tl.load(x_ptr) > 0, "must be positive")


@jit
def k_trans(x_ptr, o_ptr, B: tl.constexpr):
    r = tl.arange(0, B)
    x = tl.load(x_ptr + r[:, None] * B + r[None, :])
    tl.store(o_ptr + r[:, None] * B + r[None, :], tl.trans(x))


@jit
def k_gather(x_ptr, i_ptr, o_ptr, B: tl.constexpr):
    r = tl.arange(0, B)
    tl.store(o_ptr + r, tl.gather(tl.load(x_ptr + r), tl.load(i_ptr + r), 0))


@jit
def k_dot3(a_ptr, b_ptr, c_ptr, B: tl.constexpr):
    r = tl.arange(0, B)
    off = r[:, None, None] * B * B + r[None, :, None] * B + r[None, None, :]
    tl.store(c_ptr + off, tl.dot(tl.load(a_ptr + off), tl.load(b_ptr + off), input_precision="ieee"))


@jit
def k_i8dot(a_ptr, b_ptr, c_ptr, B: tl.constexpr):
    r = tl.arange(0, B)
    off = r[:, None] * B + r[None, :]
    tl.store(c_ptr + off, tl.dot(tl.load(a_ptr + off), tl.load(b_ptr + off)))


@jit
def k_fp8(x_ptr, o_ptr, B: tl.constexpr):
    r = tl.arange(0, B)
    tl.store(o_ptr + r, tl.load(x_ptr + r).to(tl.float8e4nv).to(tl.float32))


@jit
def k_reduce_fn(x_ptr, o_ptr, B: tl.constexpr):
    r = tl.arange(0, B)
    tl.store(o_ptr, tl.reduce(tl.load(x_ptr + r), 0, mul_fn))


@jit
def mul_fn(a, b):
    return a * b




def rand(rng, *shape):
    return (rng.random(shape) + 0.5).astype(np.float32)


def test_cumsum(rng):
    x, o = rand(rng, 16), np.zeros(16, np.float32)
    k_scan[(1,)](x, o, B=16)
    np.testing.assert_allclose(o, np.cumsum(x), rtol=1e-6)


def test_sort(rng):
    x, o = rand(rng, 16), np.zeros(16, np.float32)
    k_sort[(1,)](x, o, B=16)
    np.testing.assert_array_equal(o, np.sort(x))


def test_histogram(rng):
    xi, oi = rng.integers(0, 8, 16).astype(np.int32), np.zeros(8, np.int32)
    k_hist[(1,)](xi, oi, B=16, NB=8)
    np.testing.assert_array_equal(oi, np.bincount(xi, minlength=8))


def test_join_split_flip_trans_gather(rng):
    x, o = rand(rng, 16), np.zeros(16, np.float32)
    k_joinsplit[(1,)](x, o, B=16)
    np.testing.assert_allclose(o, 3 * x)
    k_flip[(1,)](x, o, B=16)
    np.testing.assert_array_equal(o, x[::-1])
    idx = rng.integers(0, 16, 16).astype(np.int32)
    k_gather[(1,)](x, idx, o, B=16)
    np.testing.assert_array_equal(o, x[idx])
    q, qo = rand(rng, 16, 16), np.zeros((16, 16), np.float32)
    k_trans[(1,)](q, qo, B=16)
    np.testing.assert_array_equal(qo, q.T)


def test_block_pointer_and_descriptor_pad_out_of_bounds(rng):
    m = rand(rng, 5, 7)
    out = np.zeros_like(m)
    k_blockptr[(1,)](m, out, 5, 7, BM=8, BN=8)
    np.testing.assert_array_equal(out, m * 2)
    out = np.zeros_like(m)
    k_desc[(1,)](m, out, 5, 7, BM=8, BN=8)
    np.testing.assert_array_equal(out, m + 1)


def test_spin_lock_serialises_programs():
    lock, counter = np.zeros(1, np.int32), np.zeros(1, np.float32)
    k_lock[(300,)](lock, counter)
    assert counter[0] == 300 and lock[0] == 0


def test_device_print(rng, capfd):
    x = rand(rng, 16)
    k_print[(2,)](x)
    out = capfd.readouterr().out
    assert out.count("value") == 2 and str(np.float64(x[0])) in out


def test_device_assert(rng):
    with pytest.raises(DeviceAssertionError, match="must be positive"):
        k_assert[(1,)](-rand(rng, 16))


def test_batched_and_int8_dot(rng):
    a, b, c = rand(rng, 16, 16, 16), rand(rng, 16, 16, 16), np.zeros((16, 16, 16), np.float32)
    k_dot3[(1,)](a, b, c, B=16)
    np.testing.assert_allclose(c, a.astype(np.float64) @ b, rtol=1e-5)
    a8, c8 = rng.integers(-100, 100, (16, 16)).astype(np.int8), np.zeros((16, 16), np.int32)
    k_i8dot[(1,)](a8, a8, c8, B=16)
    np.testing.assert_array_equal(c8, a8.astype(np.int32) @ a8.astype(np.int32))


def test_fp8_round_trip_and_custom_reduce(rng):
    x, o = rand(rng, 16) * 10, np.zeros(16, np.float32)
    k_fp8[(1,)](x, o, B=16)
    np.testing.assert_array_equal(o, x.astype(ml_dtypes.float8_e4m3fn).astype(np.float32))
    x = rand(rng, 16)
    k_reduce_fn[(1,)](x, o, B=16)
    np.testing.assert_allclose(o[0], np.prod(x.astype(np.float64)), rtol=1e-5)


@jit
def k_blockptr_matmul(a_ptr, b_ptr, c_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    a_blk = tl.make_block_ptr(a_ptr, (M, K), (K, 1), (0, 0), (BM, BK), (1, 0))
    b_blk = tl.make_block_ptr(b_ptr, (K, N), (N, 1), (0, 0), (BK, BN), (1, 0))
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    k = 0
    while k < K:
        acc += tl.dot(tl.load(a_blk, boundary_check=(0, 1)), tl.load(b_blk, boundary_check=(0, 1)),
                      input_precision="ieee")
        a_blk = tl.advance(a_blk, (0, BK))
        b_blk = b_blk.advance((BK, 0))
        k += BK
    c_blk = tl.make_block_ptr(c_ptr, (M, N), (N, 1), (0, 0), (BM, BN), (1, 0))
    tl.store(c_blk, acc, boundary_check=(0, 1))


def test_block_pointers_carried_through_a_loop(rng):
    M, N, K = 13, 21, 70
    a, b, c = rand(rng, M, K), rand(rng, K, N), np.zeros((M, N), np.float32)
    k_blockptr_matmul[(1,)](a, b, c, M, N, K, BM=16, BN=32, BK=16)
    np.testing.assert_allclose(c, a.astype(np.float64) @ b, rtol=1e-5)
