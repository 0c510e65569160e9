"""jit.mathlib runs the same on every executor: compiled, interpreted (interpret=True) and eager
(interpret="eager") kernels give the same bits for every math function `tl` exposes, on all fp32
special values, random bit patterns and random values in each function's working range. Every
function of jit.mathlib is run, called as `tl.extra.libdevice.<name>` (which has every unary math op).
(Accuracy against references is tests/jit/codegen/test_mathlib.py's job.)"""

from __future__ import annotations

import zlib

import numpy as np
import pytest

import dsl as tl
from dsl import libdevice
from jit import jit, mathlib

N_RANDOM = 1 << 14
BLOCK = 1024


@jit
def unary_kernel(x_ptr, out_ptr, n, FN: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, FN(tl.load(x_ptr + offs, mask=mask)), mask=mask)


@jit
def pow_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.math.pow(tl.load(x_ptr + offs, mask=mask), tl.load(y_ptr + offs, mask=mask)),
             mask=mask)


def special_values(dt) -> np.ndarray:
    """±0, ±inf, NaN, denormals, the normal limits, values around exp's overflow and underflow, the
    rounding boundaries of sin/cos's reduction, multiples of pi and pi/2, and their neighbours."""
    fi = np.finfo(dt)
    base = [0.0, 1.0, 0.5, 2.0, 3.0, 10.0, 100.0, np.inf, np.nan, fi.max, fi.tiny, fi.smallest_subnormal,
            fi.smallest_subnormal * 3, fi.tiny / 2, fi.tiny * (1 - fi.eps), fi.eps, fi.eps / 2, 1e-30, 1e30,
            88.0, 88.72283, 88.7229, 89.0, 103.97, 104.0, 126.0, 127.0, 128.0, 149.0, 150.0, 709.78, 710.0,
            745.1, 746.0, 3.95, 6.0, 0.625, 0.75, 2.475, 3.375, 20.0, 2.0**21, 2.0**24, 2.0**40, 2.0**48,
            2.0**48 * 1.5, 2.0**63, 0.7071067811865476, 1.4142135623730951]
    base += [k * np.pi / 2 for k in range(1, 41)] + [k * np.pi * 1e4 for k in (1, 3, 7)]
    values = np.array(base, dtype=np.float64).astype(dt)
    with np.errstate(over="ignore"):
        neighbours = np.concatenate([np.nextafter(values, dt(np.inf)), np.nextafter(values, dt(-np.inf))])
    values = np.concatenate([values, neighbours])
    return np.concatenate([values, -values]).astype(dt)


# where the uniform inputs go: every function of jit.mathlib needs an entry (a KeyError says so)
RANGES = {"exp": (-110, 100), "exp2": (-160, 140), "log": (0, 10), "log2": (0, 10), "sin": (-50, 50),
          "cos": (-50, 50), "tanh": (-12, 12), "erf": (-7, 7), "sqrt": (0, 100), "rsqrt": (0, 100),
          "cbrt": (-1000, 1000)}


def inputs(name: str, dt, rng: np.random.Generator) -> np.ndarray:
    ut = np.uint32 if dt == np.float32 else np.uint64
    bits = rng.integers(0, np.iinfo(ut).max, N_RANDOM, dtype=ut, endpoint=True).view(dt)
    lo, hi = RANGES[name]
    uniform = rng.uniform(lo, hi, N_RANDOM).astype(dt)
    with np.errstate(over="ignore"):
        magnitudes = (np.exp(rng.uniform(-90, 90, N_RANDOM)) * rng.choice([-1, 1], N_RANDOM)).astype(dt)
    return np.concatenate([special_values(dt), bits, uniform, magnitudes, np.abs(uniform)])


def same_bits(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Elementwise: the same bit pattern, or both NaN (a NaN's payload is not part of the contract)."""
    it = np.int32 if a.dtype == np.float32 else np.int64
    return (a.view(it) == b.view(it)) | (np.isnan(a) & np.isnan(b))


def run_all(kernel, *args, **meta) -> dict[str, np.ndarray]:
    n = args[0].size
    results = {}
    for mode in ("compiled", "interpret", "eager"):
        out = np.full(n, 7, args[0].dtype)
        interpret = {"compiled": False, "interpret": True, "eager": "eager"}[mode]
        kernel[(-(-n // BLOCK),)](*[a.copy() for a in args], out, n, BLOCK=BLOCK, interpret=interpret, **meta)
        results[mode] = out
    return results


def assert_same(results: dict[str, np.ndarray], *args: np.ndarray, what: str, seed: int) -> None:
    compiled = results["compiled"]
    for mode in ("interpret", "eager"):
        bad = np.flatnonzero(~same_bits(results[mode], compiled))
        if bad.size:
            k = bad[0]
            point = ", ".join(repr(a[k]) for a in args)
            raise AssertionError(f"{what}: {mode} differs from compiled on {bad.size} of {compiled.size} "
                                 f"elements (seed {seed}), first at {what}({point}): {mode} "
                                 f"{results[mode][k]!r}, compiled {compiled[k]!r}")


@pytest.mark.parametrize("dt", [np.float32, np.float64], ids=["fp32", "fp64"])
@pytest.mark.parametrize("name", sorted(mathlib.UNARY))
def test_unary_is_bit_exact_across_executors(name, dt):
    seed = zlib.crc32(f"{name}/{np.dtype(dt).name}".encode())
    x = inputs(name, dt, np.random.default_rng(seed))
    results = run_all(unary_kernel, x, FN=getattr(libdevice, name))
    assert_same(results, x, what=name, seed=seed)
    assert np.isnan(results["compiled"]).mean() < 0.9  # the inputs exercise more than NaN paths


@pytest.mark.parametrize("dt", [np.float32, np.float64], ids=["fp32", "fp64"])
def test_pow_is_bit_exact_across_executors(dt):
    seed = 2000 + (0 if dt == np.float32 else 1)
    rng = np.random.default_rng(seed)
    specials = special_values(dt)
    sx, sy = (a.ravel() for a in np.meshgrid(specials[::3], specials[::3]))
    x = np.concatenate([sx, rng.uniform(-10, 10, N_RANDOM).astype(dt), rng.uniform(0, 4, N_RANDOM).astype(dt)])
    y = np.concatenate([sy, np.round(rng.uniform(-8, 8, N_RANDOM)).astype(dt),
                        rng.uniform(-40, 40, N_RANDOM).astype(dt)])
    assert_same(run_all(pow_kernel, x, y), x, y, what="pow", seed=seed)
