"""The IR interpreter matches the compiled code bit for bit on real kernels (interpret=True)."""

import ml_dtypes
import numpy as np
import pytest

import dsl as tl
from dsl.errors import OutOfBoundsError
from jit import cdiv, jit


def _same(a: np.ndarray, b: np.ndarray) -> bool:
    if a.dtype.kind == "f" or a.dtype.name in ("bfloat16",):
        fa, fb = a.astype(np.float64), b.astype(np.float64)
        both_nan = np.isnan(fa) & np.isnan(fb)
        return bool(np.all(both_nan | (a.view(f"u{a.itemsize}") == b.view(f"u{b.itemsize}"))))
    return bool(np.array_equal(a, b))


def _both(kernel, grid, make, **kw):
    """Run compiled and interpreted on copies of the same fresh inputs; return both argument lists."""
    args1 = make()
    args2 = [a.copy() if isinstance(a, np.ndarray) else a for a in args1]
    kernel[grid](*args1, **kw)
    kernel[grid](*args2, interpret=True, **kw)
    return args1, args2


@jit
def softmax_kernel(out_ptr, in_ptr, stride, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    x = tl.load(in_ptr + row * stride + offs, mask=offs < n_cols, other=-float("inf"))
    x = x - tl.max(x, axis=0)
    num = tl.exp(x)
    tl.store(out_ptr + row * stride + offs, num / tl.sum(num, axis=0), mask=offs < n_cols)


def test_softmax_matches_within_exp_bound():
    rng = np.random.default_rng(1)
    a1, a2 = _both(softmax_kernel, (5,), lambda: [np.zeros((5, 37), np.float32),
                                                  rng.standard_normal((5, 37)).astype(np.float32), 37, 37],
                   BLOCK=64)
    ref = np.exp(a1[1] - a1[1].max(1, keepdims=True))
    np.testing.assert_allclose(a2[0], ref / ref.sum(1, keepdims=True), rtol=1e-5)
    np.testing.assert_allclose(a1[0], a2[0], rtol=4e-7, atol=0)


@jit
def matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr,
                  PREC: tl.constexpr):
    pm, pn = tl.program_id(0), tl.program_id(1)
    rm = pm * BM + tl.arange(0, BM)
    rn = pn * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, K, BK):
        a = tl.load(a_ptr + rm[:, None] * K + (k + rk)[None, :], mask=(rm[:, None] < M) & ((k + rk)[None, :] < K),
                    other=0.0)
        b = tl.load(b_ptr + (k + rk)[:, None] * N + rn[None, :], mask=((k + rk)[:, None] < K) & (rn[None, :] < N),
                    other=0.0)
        acc += tl.dot(a, b, input_precision=PREC)
    tl.store(c_ptr + rm[:, None] * N + rn[None, :], acc.to(c_ptr.dtype.element_ty),
             mask=(rm[:, None] < M) & (rn[None, :] < N))


@pytest.mark.parametrize("dt,prec", [(np.float32, "tf32"), (ml_dtypes.bfloat16, "ieee")])
def test_matmul_bit_exact(dt, prec):
    rng = np.random.default_rng(2)
    M, N, K = 19, 21, 40
    a1, a2 = _both(matmul_kernel, (cdiv(M, 16), cdiv(N, 16)),
                   lambda: [rng.standard_normal((M, K)).astype(dt), rng.standard_normal((K, N)).astype(dt),
                            np.zeros((M, N), dt), M, N, K], BM=16, BN=16, BK=16, PREC=prec)
    assert _same(a1[2], a2[2])
    ref = a1[0].astype(np.float64) @ a1[1].astype(np.float64)
    np.testing.assert_allclose(a2[2].astype(np.float64), ref, rtol=2e-2, atol=2e-2)


@jit
def mixed_kernel(x_ptr, i_ptr, out_ptr, cnt_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m, other=0).to(tl.float32)
    i = tl.load(i_ptr + offs, mask=m, other=1)
    q = i // 3 + i % 5 - (i >> 2) + (i << 3) ^ (i & 7)
    s = tl.sort(x)
    c = tl.cumsum(i, axis=0)
    y = tl.where(x > 0.5, x * 3.0, tl.fma(x, x, 1.0)).to(tl.float16)
    j = 0
    while j < 3:
        y = (y * 1.5).to(tl.float16)
        j += 1
    if pid % 2 == 0:
        y = y + 1.0
    tl.store(out_ptr + offs, y.to(tl.float32) + s + c.to(tl.float32) + q.to(tl.float32), mask=m)
    tl.atomic_add(cnt_ptr + (i & 3), 1, mask=m)


def test_mixed_ops_bit_exact():
    rng = np.random.default_rng(3)
    n = 300
    a1, a2 = _both(mixed_kernel, (cdiv(n, 64),), lambda: [
        rng.standard_normal(n).astype(np.float16), rng.integers(-1000, 1000, n).astype(np.int32),
        np.zeros(n, np.float32), np.zeros(4, np.int32), n], BLOCK=64)
    assert _same(a1[2], a2[2])
    assert np.array_equal(a1[3], a2[3]) and a2[3].sum() == n


def test_interpreter_reports_out_of_bounds_with_line_and_tile_index():
    x = np.random.rand(100).astype(np.float32)
    with pytest.raises(OutOfBoundsError, match=r"line \d+.*outside buffer 'x_ptr' \(valid element offsets 0..99\)"):
        mixed_kernel[(2,)](x, np.ones(100, np.int32), np.zeros(100, np.float32), np.zeros(4, np.int32), 128,
                           BLOCK=64, interpret=True)


@jit
def _double(x):
    return x * 2


@jit
def eager_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n, other=0.0)
    if pid == 1:
        print("program 1 sum", tl.sum(x, axis=0))
    for _ in tl.range(0, 2):
        x = _double(x)
    tl.store(out_ptr + offs, x, mask=offs < n)


def test_eager_mode_runs_python_with_print_and_nested_functions(capsys):
    rng = np.random.default_rng(4)
    x = rng.standard_normal(100).astype(np.float32)
    out = np.zeros(100, np.float32)
    eager_kernel[(2,)](x, out, 100, BLOCK=64, interpret="eager")
    np.testing.assert_array_equal(out, x * 4)
    printed = capsys.readouterr().out
    assert "program 1 sum tensor(f32" in printed and printed.count("program 1") == 1


def test_eager_mode_matches_the_ir_interpreter_on_mixed_ops():
    rng = np.random.default_rng(5)
    n = 200
    make = [rng.standard_normal(n).astype(np.float16), rng.integers(-1000, 1000, n).astype(np.int32),
            np.zeros(n, np.float32), np.zeros(4, np.int32), n]
    other = [a.copy() if isinstance(a, np.ndarray) else a for a in make]
    mixed_kernel[(4,)](*make, BLOCK=64, interpret=True)
    mixed_kernel[(4,)](*other, BLOCK=64, interpret="eager")
    assert _same(make[2], other[2]) and np.array_equal(make[3], other[3])


def test_environment_variable_selects_the_interpreter(monkeypatch):
    monkeypatch.setenv("WAVETILE_INTERPRET", "1")
    x = np.random.default_rng(6).standard_normal(50).astype(np.float32)
    out = np.zeros(50, np.float32)
    assert eager_kernel[(1,)](x, out, 50, BLOCK=64) is None  # no CompiledKernel: nothing was compiled
    np.testing.assert_array_equal(out, x * 4)


def test_schedule_seed_permutes_interpreted_programs(monkeypatch):
    @jit
    def order_kernel(out_ptr, counter_ptr):
        slot = tl.atomic_add(counter_ptr, 1)
        tl.store(out_ptr + slot, tl.program_id(0))

    out, counter = np.zeros(16, np.int32), np.zeros(1, np.int32)
    order_kernel[(16,)](out, counter, interpret=True)
    assert out.tolist() == list(range(16))
    monkeypatch.setenv("WAVETILE_SCHEDULE_SEED", "7")
    out[:], counter[:] = 0, 0
    order_kernel[(16,)](out, counter, interpret=True)
    assert out.tolist() == np.random.default_rng(7).permutation(16).tolist()


@jit
def _cos_kernel(x_ptr, out_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.cos(tl.load(x_ptr + offs)))


def test_cos_of_huge_arguments_is_nan_in_both():
    """Found by the soak (seed 201026): the compiled sin/cos give NaN past |x| = 2^48 (no Payne-Hanek
    reduction, documented in jit/mathlib.py); the interpreter runs the same algorithm."""
    x = np.array([1e18, -3e15, 2.0**47, 0.5, 1e3, -7.0, 1e14, 3.0], np.float32)
    a1, a2 = _both(_cos_kernel, (1,), lambda: [x.copy(), np.zeros(8, np.float32)], BLOCK=8)
    assert np.isnan(a1[1][:2]).all() and np.isnan(a2[1][:2]).all()
    assert not np.isnan(a2[1][2:]).any()
    np.testing.assert_array_equal(a1[1][3:], a2[1][3:])


@jit
def _warps_race_kernel(out_ptr, BLOCK: tl.constexpr):
    # every element stores its warp-dependent value to one address: a race between warps
    r = tl.arange(0, BLOCK)
    tl.store(out_ptr + r * 0, r.to(tl.float32))


def test_schedule_seed_interleaves_warps_in_the_interpreter(monkeypatch):
    seen = set()
    for seed in range(6):
        monkeypatch.setenv("WAVETILE_SCHEDULE_SEED", str(seed))
        out = np.zeros(1, np.float32)
        _warps_race_kernel[(1,)](out, BLOCK=256, interpret=True, num_warps=4)
        seen.add(float(out[0]))
    assert len(seen) > 1  # which warp's write lands last depends on the seed
    monkeypatch.setenv("WAVETILE_SCHEDULE_SEED", "3")
    again = [np.zeros(1, np.float32) for _ in range(2)]
    for o in again:
        _warps_race_kernel[(1,)](o, BLOCK=256, interpret=True, num_warps=4)
    assert again[0][0] == again[1][0]  # and is reproducible for one seed
