"""jit.codegen.mathlib (jit.mathlib's algorithms as LLVM IR): ulp error against wider references on
~10^6 inputs per function, special values, and the property that matters to the code generator: loops
of these emitters vectorise with no calls.

References: numpy float64 for f32 results, numpy longdouble (x87 80-bit, libm's *l functions) for f64
results, mpmath for f64 erf. Errors are counted in ulps between our result and the reference rounded
to the result type (a tie-rounding slip in that double rounding can cost at most one extra ulp).
"""

from __future__ import annotations

import math
import time
import zlib

import llvmlite.ir as ir
import numpy as np
import pytest

from jit.codegen import mathlib

F32, F64 = ir.FloatType(), ir.DoubleType()

# max ulp allowed: (f32, f64); equal to the documented bounds in mathlib's docstring
BOUNDS = {
    "exp": (1, 1), "exp2": (1, 1), "log": (1, 1), "log2": (1, 1), "sin": (1, 1),
    "cos": (1, 1), "tanh": (1, 2), "erf": (1, 2), "sqrt": (0, 0), "rsqrt": (1, 1), "cbrt": (1, 1),
}
# where the random-uniform inputs go (besides random bit patterns, log-uniform magnitudes, specials)
RANGES = {
    "exp": (-110, 100), "exp2": (-160, 140), "log": (0, 10), "log2": (0, 10),
    "sin": (-50, 50), "cos": (-50, 50), "tanh": (-12, 12), "erf": (-7, 7),
    "sqrt": (0, 100), "rsqrt": (0, 100), "cbrt": (-1000, 1000),
}
TRIG_RANGE = {np.float32: 2.0**48, np.float64: 2.0**40}  # where sin/cos promise their bound, NaN beyond


def _ref(name: str, x: np.ndarray) -> np.ndarray:
    with np.errstate(all="ignore"):
        if name == "erf":
            return np.array([math.erf(v) for v in x.astype(np.float64)])
        if name == "rsqrt":
            return 1 / np.sqrt(x)
        return getattr(np, name)(x)


def ulp_distance(y: np.ndarray, ref: np.ndarray) -> np.ndarray:
    """|y - round(ref)| in ulps of y's type, counting across zero and into inf; NaN vs NaN is 0."""
    with np.errstate(over="ignore", invalid="ignore"):
        r = ref.astype(y.dtype)
    it = np.int32 if y.dtype == np.float32 else np.int64

    def ordinal(a):
        i = a.view(it).astype(np.int64)
        return np.where(i < 0, np.iinfo(it).min - i, i)

    d = np.abs(ordinal(y) - ordinal(r)).astype(np.float64)
    both_nan = np.isnan(r) & np.isnan(y)
    d[both_nan] = 0
    d[np.isnan(r) != np.isnan(y)] = np.inf
    return d


def _inputs(name: str, dt, n: int = 1 << 20) -> np.ndarray:
    rng = np.random.default_rng(zlib.crc32(f"{name}/{dt.__name__}".encode()))
    lo, hi = RANGES[name]
    ut = np.uint32 if dt == np.float32 else np.uint64
    bits = rng.integers(0, np.iinfo(ut).max, n // 4, dtype=ut, endpoint=True).view(dt)
    uniform = rng.uniform(lo, hi, n // 2).astype(dt)
    mags = np.exp(rng.uniform(-100, 100, n // 4)) * rng.choice([-1, 1], n // 4)
    finfo = np.finfo(dt)
    specials = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1.0, -1.0, 0.5, 2.0, finfo.max, -finfo.max,
                         finfo.tiny, finfo.smallest_subnormal, -finfo.smallest_subnormal, finfo.eps], dtype=dt)
    with np.errstate(over="ignore"):
        x = np.concatenate([bits, uniform, mags.astype(dt), specials])
    if name in ("log", "log2", "sqrt", "rsqrt"):
        x = np.concatenate([x, np.abs(x[: n // 2])])  # mostly positive
    return x


def _kernel(jit_map, name: str, ty: ir.Type):
    return jit_map(lambda b, x: mathlib.UNARY[name](b, x), [ty], ty, key=(name, str(ty)))


@pytest.mark.parametrize("dt", [np.float32, np.float64], ids=["f32", "f64"])
@pytest.mark.parametrize("name", list(BOUNDS))
def test_unary_accuracy(jit_map, name, dt):
    ty = F32 if dt == np.float32 else F64
    k = _kernel(jit_map, name, ty)
    assert "call" not in k.asm, f"{name} on {ty} calls a function"
    x = _inputs(name, dt)
    if dt == np.float64 and name == "erf":
        x = x[::32]  # the reference below is mpmath, one element at a time
    y = k(x)
    if dt == np.float32:
        ref = _ref(name, x.astype(np.float64))
    elif name == "erf":
        mpmath = pytest.importorskip("mpmath")
        ref = np.array([float(mpmath.erf(mpmath.mpf(v))) if np.isfinite(v) else np.sign(v) if v == v else v
                        for v in x.tolist()])
    elif name == "sqrt":
        ref = np.sqrt(x)  # IEEE, already correctly rounded (a longdouble detour would double-round)
    else:
        ref = _ref(name, x.astype(np.longdouble))
    d = ulp_distance(y, ref)
    if name in ("sin", "cos"):
        far = ~(np.abs(x) <= TRIG_RANGE[dt])
        assert np.isnan(y[far]).all()
        d[far] = 0
    bound = BOUNDS[name][dt == np.float64]
    worst = int(np.argmax(d))
    assert d[worst] <= bound, f"{name}({x[worst]!r}) = {y[worst]!r}, want {ref[worst]!r}: {d[worst]} ulp"


SPECIALS = {  # x -> expected, for both types
    "exp": [(np.nan, np.nan), (np.inf, np.inf), (-np.inf, 0.0), (0.0, 1.0), (-0.0, 1.0), (1000.0, np.inf),
            (-1000.0, 0.0)],
    "exp2": [(np.nan, np.nan), (np.inf, np.inf), (-np.inf, 0.0), (10.0, 1024.0), (-1.0, 0.5), (-149.0, 2.0**-149),
             (1.0e4, np.inf)],
    "log": [(0.0, -np.inf), (-0.0, -np.inf), (-1.0, np.nan), (np.inf, np.inf), (-np.inf, np.nan),
            (np.nan, np.nan), (1.0, 0.0)],
    "log2": [(0.0, -np.inf), (-2.0, np.nan), (np.inf, np.inf), (np.nan, np.nan), (1.0, 0.0), (1024.0, 10.0),
             (2.0**-140, -140.0)],
    "sin": [(0.0, 0.0), (-0.0, -0.0), (np.inf, np.nan), (-np.inf, np.nan), (np.nan, np.nan)],
    "cos": [(0.0, 1.0), (-0.0, 1.0), (np.inf, np.nan), (np.nan, np.nan)],
    "tanh": [(0.0, 0.0), (-0.0, -0.0), (np.inf, 1.0), (-np.inf, -1.0), (50.0, 1.0), (-50.0, -1.0),
             (np.nan, np.nan)],
    "erf": [(0.0, 0.0), (-0.0, -0.0), (np.inf, 1.0), (-np.inf, -1.0), (10.0, 1.0), (-10.0, -1.0),
            (np.nan, np.nan)],
    "sqrt": [(0.0, 0.0), (-0.0, -0.0), (-1.0, np.nan), (np.inf, np.inf), (4.0, 2.0)],
    "rsqrt": [(0.0, np.inf), (-0.0, -np.inf), (-1.0, np.nan), (np.inf, 0.0), (4.0, 0.5)],
    "cbrt": [(0.0, 0.0), (-0.0, -0.0), (np.inf, np.inf), (-np.inf, -np.inf), (np.nan, np.nan), (8.0, 2.0),
             (-27.0, -3.0), (0.125, 0.5), (2.0**-147, 2.0**-49), (2.0**120, 2.0**40)],
}


@pytest.mark.parametrize("dt", [np.float32, np.float64], ids=["f32", "f64"])
@pytest.mark.parametrize("name", list(SPECIALS))
def test_special_values(jit_map, name, dt):
    x, want = (np.array(v, dtype=dt) for v in zip(*SPECIALS[name]))
    got = _kernel(jit_map, name, F32 if dt == np.float32 else F64)(x)
    same = (got == want) & (np.signbit(got) == np.signbit(want)) | (np.isnan(got) & np.isnan(want))
    assert same.all(), list(zip(x[~same], got[~same], want[~same]))


def test_subnormal_results_and_inputs(jit_map):
    k = _kernel(jit_map, "exp", F32)
    x = np.linspace(-103.9, -87.4, 100001, dtype=np.float32)  # results in the f32 subnormal range
    assert ulp_distance(k(x), np.exp(x.astype(np.float64))).max() <= 1
    sub = np.arange(1, 1 << 23, 97, dtype=np.uint32).view(np.float32)  # subnormal inputs to log
    for name in ("log", "log2"):
        d = ulp_distance(_kernel(jit_map, name, F32)(sub), _ref(name, sub.astype(np.float64)))
        assert d.max() <= 1, name


def _pow_inputs(dt, n: int = 1 << 19):
    rng = np.random.default_rng(11)
    x = np.exp(rng.uniform(-20, 20, n)) * rng.choice([-1.0, 1.0], n)
    y = np.where(rng.random(n) < 0.5, rng.uniform(-30, 30, n), rng.integers(-40, 40, n))
    near_one = 1 + rng.uniform(-1e-3, 1e-3, n // 4)  # x near 1, big y: the log must be accurate
    big_y = rng.uniform(-4e4, 4e4, n // 4)
    x, y = np.concatenate([x, near_one]), np.concatenate([y, big_y])
    return x.astype(dt), y.astype(dt)


@pytest.mark.parametrize("dt", [np.float32, np.float64], ids=["f32", "f64"])
def test_pow_accuracy(jit_map, dt):
    ty = F32 if dt == np.float32 else F64
    k = jit_map(lambda b, x, y: mathlib.pow(b, x, y), [ty, ty], ty, key=("pow", str(ty)))
    assert "call" not in k.asm
    x, y = _pow_inputs(dt)
    wide = np.float64 if dt == np.float32 else np.longdouble
    with np.errstate(all="ignore"):
        ref = np.power(x.astype(wide), y.astype(wide))
    d = ulp_distance(k(x, y), ref)
    worst = int(np.argmax(d))
    assert d[worst] <= (1 if dt == np.float32 else 2), (x[worst], y[worst], d[worst])


@pytest.mark.parametrize("dt", [np.float32, np.float64], ids=["f32", "f64"])
def test_pow_special_cases(jit_map, dt):
    """Every pair from a grid of special operands behaves like C99 pow (numpy's float64 power)."""
    ty = F32 if dt == np.float32 else F64
    k = jit_map(lambda b, x, y: mathlib.pow(b, x, y), [ty, ty], ty, key=("pow", str(ty)))
    vals = [0.0, -0.0, 1.0, -1.0, 0.5, -0.5, 2.0, -2.0, 3.0, -3.0, 2.5, -2.5, np.inf, -np.inf, np.nan, 1e-30,
            -7.0, 1e30]
    x, y = (a.ravel().astype(dt) for a in np.meshgrid(vals, vals))
    with np.errstate(all="ignore"):
        want = np.power(x.astype(np.float64), y.astype(np.float64)).astype(dt)
    got = k(x, y)
    same = (got == want) & (np.signbit(got) == np.signbit(want)) | (np.isnan(got) & np.isnan(want))
    same |= ulp_distance(got, want) <= 1  # finite, non-special results: accuracy is tested above
    assert same.all(), list(zip(x[~same], y[~same], got[~same], want[~same]))


def test_vector_types(jit_map):
    """Emitters take LLVM vector values too (intrinsic overloads like llvm.fma.v8f32)."""
    v8 = ir.VectorType(F32, 8)
    x = np.linspace(-20, 20, 1024, dtype=np.float32)
    for name in ("exp", "sin", "log", "tanh"):
        k = jit_map(lambda b, v, name=name: mathlib.UNARY[name](b, v), [v8], v8)
        want = _kernel(jit_map, name, F32)(x)
        np.testing.assert_array_equal(k(x), want)
    v4 = ir.VectorType(F64, 4)
    k = jit_map(lambda b, u, v: mathlib.pow(b, u, v), [v4, v4], v4)
    x64 = np.abs(x).astype(np.float64)
    np.testing.assert_allclose(k(x64, np.full(1024, 0.5)), np.sqrt(x64), rtol=1e-15)


def test_supports():
    assert mathlib.supports(F32) and mathlib.supports(F64) and mathlib.supports(ir.VectorType(F64, 2))
    assert not mathlib.supports(ir.HalfType()) and not mathlib.supports(ir.IntType(32))


def test_exp_loop_is_vectorised_and_fast(jit_map):
    """The reason this module exists: llvm.exp.f32 would be a scalar expf call per element."""
    k = _kernel(jit_map, "exp", F32)
    assert "ymm" in k.asm or "zmm" in k.asm
    assert "expf" not in k.asm and "call" not in k.asm
    x = np.random.default_rng(0).uniform(-80, 80, 1 << 20).astype(np.float32)

    def best(fn):
        times = []
        for _ in range(5):
            t0 = time.perf_counter()
            fn(x)
            times.append(time.perf_counter() - t0)
        return min(times)

    ours, numpy_exp = best(k), best(np.exp)
    print(f"\n1M f32 exp: ours {ours * 1e3:.2f} ms, numpy {numpy_exp * 1e3:.2f} ms")
    assert ours < 5 * numpy_exp + 2e-3  # loose: catches a scalar libm fallback, not noise
