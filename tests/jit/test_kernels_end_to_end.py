"""Kernels written in the DSL, compiled and run, against numpy on fresh random inputs."""

import numpy as np
import pytest

import dsl as tl
from jit import OutOfBoundsError, cdiv, jit


def randn(rng, *shape, dtype=np.float32):
    return (rng.standard_normal(shape) + 0.1).astype(dtype)


@jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) + tl.load(y_ptr + offs, mask=mask), mask=mask)


@pytest.mark.parametrize("n", [1, 7, 128, 1000, 4099])
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32, np.int64, np.float16])
def test_vector_add(rng, n, dtype):
    x, y = randn(rng, n, dtype=np.float64), randn(rng, n, dtype=np.float64)
    if np.dtype(dtype).kind == "i":
        x, y = (x * 1000).astype(dtype), (y * 1000).astype(dtype)
    else:
        x, y = x.astype(dtype), y.astype(dtype)
    out = np.full_like(x, 7)
    add_kernel[(cdiv(n, 128),)](x, y, out, n, BLOCK=128)
    np.testing.assert_array_equal(out, x + y)


@jit
def softmax_kernel(out_ptr, in_ptr, stride, n_rows, n_cols, BLOCK: tl.constexpr):
    for row in tl.range(tl.program_id(0), n_rows, tl.num_programs(0)):
        cols = tl.arange(0, BLOCK)
        x = tl.load(in_ptr + row * stride + cols, mask=cols < n_cols, other=-float("inf"))
        num = tl.exp(x - tl.max(x, axis=0))
        tl.store(out_ptr + row * stride + cols, num / tl.sum(num, axis=0), mask=cols < n_cols)


@pytest.mark.parametrize("shape", [(1, 1), (5, 33), (64, 1000)])
def test_softmax(rng, shape):
    x = randn(rng, *shape) * 5
    out = np.empty_like(x)
    softmax_kernel[(4,)](out, x, shape[1], *shape, BLOCK=tl_next_pow2(shape[1]))
    z = np.exp(x.astype(np.float64) - x.max(1, keepdims=True))
    np.testing.assert_allclose(out, z / z.sum(1, keepdims=True), rtol=1e-5, atol=1e-7)


def tl_next_pow2(n):
    from jit import next_power_of_2

    return next_power_of_2(n)


@jit
def reduce_kernel(x_ptr, sum_ptr, max_ptr, min_ptr, arg_ptr, M, N, BM: tl.constexpr, BN: tl.constexpr,
                  AXIS: tl.constexpr):
    rm = tl.arange(0, BM)
    rn = tl.arange(0, BN)
    mask = (rm[:, None] < M) & (rn[None, :] < N)
    x = tl.load(x_ptr + rm[:, None] * N + rn[None, :], mask=mask, other=0.0)
    s = tl.sum(x, axis=AXIS)
    xm = tl.where(mask, x, -float("inf"))
    mx = tl.max(xm, axis=AXIS)
    mn = tl.min(tl.where(mask, x, float("inf")), axis=AXIS)
    am = tl.argmax(xm, axis=AXIS)
    r = tl.arange(0, BN if AXIS == 0 else BM)
    tl.store(sum_ptr + r, s)
    tl.store(max_ptr + r, mx)
    tl.store(min_ptr + r, mn)
    tl.store(arg_ptr + r, am)


@pytest.mark.parametrize("axis", [0, 1])
def test_reductions(rng, axis):
    M, N, BM, BN = 13, 29, 16, 32
    x = randn(rng, M, N)
    n_out = BN if axis == 0 else BM
    outs = [np.zeros(n_out, np.float32) for _ in range(3)] + [np.zeros(n_out, np.int32)]
    reduce_kernel[(1,)](x, *outs, M, N, BM=BM, BN=BN, AXIS=axis)
    valid = N if axis == 0 else M
    np.testing.assert_allclose(outs[0][:valid], x.sum(axis), rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(outs[1][:valid], x.max(axis))
    np.testing.assert_array_equal(outs[2][:valid], x.min(axis))
    np.testing.assert_array_equal(outs[3][:valid], x.argmax(axis))


@jit
def matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr,
                  PRECISION: tl.constexpr):
    pid_m, pid_n = tl.program_id(0), tl.program_id(1)
    rm = pid_m * BM + tl.arange(0, BM)
    rn = pid_n * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, K, BK):
        a = tl.load(a_ptr + rm[:, None] * K + (k + rk)[None, :], mask=(rm[:, None] < M) & ((k + rk)[None, :] < K),
                    other=0.0)
        b = tl.load(b_ptr + (k + rk)[:, None] * N + rn[None, :], mask=((k + rk)[:, None] < K) & (rn[None, :] < N),
                    other=0.0)
        acc += tl.dot(a, b, input_precision=PRECISION)
    tl.store(c_ptr + rm[:, None] * N + rn[None, :], acc, mask=(rm[:, None] < M) & (rn[None, :] < N))


@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_matmul_masked_tails(rng, dtype):
    M, N, K = 37, 50, 70
    a, b = randn(rng, M, K).astype(dtype), randn(rng, K, N).astype(dtype)
    c = np.zeros((M, N), np.float32)
    matmul_kernel[(cdiv(M, 16), cdiv(N, 32))](a, b, c, M, N, K, BM=16, BN=32, BK=16, PRECISION="ieee")
    np.testing.assert_allclose(c, a.astype(np.float64) @ b.astype(np.float64), rtol=1e-4, atol=1e-4)


def test_matmul_tf32_drops_low_mantissa_bits(rng):
    M = N = K = 16
    a, b = randn(rng, M, K), randn(rng, K, N)
    c = np.zeros((M, N), np.float32)
    matmul_kernel[(1, 1)](a, b, c, M, N, K, BM=16, BN=16, BK=16, PRECISION="tf32")
    trunc = lambda x: (x.view(np.uint32) & np.uint32(0xFFFFE000)).view(np.float32).astype(np.float64)
    np.testing.assert_allclose(c, trunc(a) @ trunc(b), rtol=1e-5, atol=1e-5)
    assert not np.allclose(c, a.astype(np.float64) @ b.astype(np.float64), rtol=1e-6, atol=1e-6)


@jit
def int_ops_kernel(a_ptr, b_ptr, div_ptr, mod_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    m = offs < n
    a = tl.load(a_ptr + offs, mask=m)
    b = tl.load(b_ptr + offs, mask=m, other=1)
    tl.store(div_ptr + offs, a // b, mask=m)
    tl.store(mod_ptr + offs, a % b, mask=m)


def test_integer_division_truncates_like_c(rng):
    a = rng.integers(-1000, 1000, 100).astype(np.int32)
    b = rng.integers(-30, 30, 100).astype(np.int32)
    b[b == 0] = 7
    d, r = np.zeros_like(a), np.zeros_like(a)
    int_ops_kernel[(1,)](a, b, d, r, 100, BLOCK=128)
    np.testing.assert_array_equal(d, np.trunc(a / b).astype(np.int32))
    np.testing.assert_array_equal(r, a - np.trunc(a / b).astype(np.int32) * b)


@jit
def cast_kernel(x_ptr, h_ptr, b_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m)
    tl.store(h_ptr + offs, x.to(tl.float16), mask=m)
    tl.store(b_ptr + offs, x.to(tl.bfloat16), mask=m)


def test_narrow_float_casts_round_to_nearest_even(rng):
    ml_dtypes = pytest.importorskip("ml_dtypes")
    n = 5000
    x = (randn(rng, n) * np.exp(rng.uniform(-12, 12, n))).astype(np.float32)
    h = np.zeros(n, np.float16)
    b = np.zeros(n, ml_dtypes.bfloat16)
    cast_kernel[(cdiv(n, 256),)](x, h, b, n, BLOCK=256)
    np.testing.assert_array_equal(h, x.astype(np.float16))
    np.testing.assert_array_equal(b.view(np.uint16), x.astype(ml_dtypes.bfloat16).view(np.uint16))


@jit
def atomic_count_kernel(counter_ptr, hist_ptr, x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m, other=0)
    tl.atomic_add(hist_ptr + x, 1, mask=m)
    tl.atomic_add(counter_ptr, tl.sum(m.to(tl.int32), axis=0))


def test_atomics_from_many_programs(rng):
    n = 10_000
    x = rng.integers(0, 17, n).astype(np.int32)
    hist = np.zeros(17, np.int32)
    counter = np.zeros(1, np.int32)
    atomic_count_kernel[(cdiv(n, 64),)](counter, hist, x, n, BLOCK=64)
    assert counter[0] == n
    np.testing.assert_array_equal(hist, np.bincount(x, minlength=17))


@jit
def helper_pair(x, y):
    return x + y, x * y


@jit
def control_flow_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    if pid * BLOCK >= n:
        return
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m, other=0.0)
    acc = tl.zeros((BLOCK,), dtype=tl.float32)
    i = 0
    while i < 3:
        s, p = helper_pair(acc, x)
        acc = s + p
        i += 1
    if pid % 2 == 0:
        acc = acc * 2.0
    else:
        acc = acc - 1.0
    tl.store(out_ptr + offs, acc, mask=m)


def test_control_flow_and_inlined_calls(rng):
    n, block = 300, 32
    x = randn(rng, n)
    out = np.zeros(n, np.float32)
    control_flow_kernel[(cdiv(n, block) + 2,)](x, out, n, BLOCK=block)
    acc = np.zeros(n, np.float32)
    for _ in range(3):
        acc = (acc + x) + (acc * x)
    pid = np.arange(n) // block
    expected = np.where(pid % 2 == 0, acc * 2, acc - 1)
    np.testing.assert_allclose(out, expected, rtol=1e-6)


@jit
def oob_load_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.load(x_ptr + offs + 1), mask=offs < n)


@jit
def oob_store_kernel(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(x_ptr + offs, 1.0, mask=offs <= n)


@jit
def oob_atomic_kernel(x_ptr, n):
    tl.atomic_add(x_ptr + n, 1.0)


def test_out_of_bounds_load_is_reported(rng):
    x, out = randn(rng, 100), np.zeros(100, np.float32)
    with pytest.raises(OutOfBoundsError) as info:
        oob_load_kernel[(4,)](x, out, 100, BLOCK=32)
    text = str(info.value)
    assert "oob_load_kernel" in text and "x_ptr" in text and "load" in text
    assert "100" in text  # the offending offset, one past the end


def test_out_of_bounds_store_and_atomic_are_reported(rng):
    x = randn(rng, 100)
    with pytest.raises(OutOfBoundsError, match="x_ptr"):
        oob_store_kernel[(4,)](x, 100, BLOCK=32)
    with pytest.raises(OutOfBoundsError, match="atomic"):
        oob_atomic_kernel[(1,)](x, 100)


@jit
def rand_kernel(out_ptr, seed, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.randint(seed, offs), mask=offs < n)


def philox_reference(seed, offsets, rounds=10):
    M = 0xFFFFFFFF
    c0 = offsets.astype(np.uint64)
    c1 = np.zeros_like(c0)
    c2 = np.zeros_like(c0)
    c3 = np.zeros_like(c0)
    k0, k1 = np.uint64(seed & M), np.uint64((seed >> 32) & M)
    A, B = np.uint64(0xD2511F53), np.uint64(0xCD9E8D57)
    for _ in range(rounds):
        p0, p1 = B * c2, A * c0
        c0, c1, c2, c3 = ((p0 >> 32) ^ c1 ^ k0) & M, p0 & M, ((p1 >> 32) ^ c3 ^ k1) & M, p1 & M
        k0 = (k0 + np.uint64(0x9E3779B9)) & M
        k1 = (k1 + np.uint64(0xBB67AE85)) & M
    return c0.astype(np.uint32)


def test_philox_matches_reference_stream(rng):
    n = 1000
    out = np.zeros(n, np.uint32)
    seed = int(rng.integers(1, 2**31))
    rand_kernel[(cdiv(n, 128),)](out, seed, n, BLOCK=128)
    np.testing.assert_array_equal(out, philox_reference(seed, np.arange(n)))
