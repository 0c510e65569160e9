"""Triton's fp8e4b15 / fp8e4b8 / fp8e5b16: conversions against a reference built from the formats' definitions."""

import numpy as np
import pytest

import dsl as tl
from jit import jit

# (exponent bits, mantissa bits, bias, fnuz): fnuz formats have no -0 and 0x80 is their only NaN;
# fp8e4b15 is E4M3FN-style: no inf, 0x7f / 0xff NaN
FORMATS = {"fp8e4b15": (tl.float8e4b15, 4, 3, 15, False), "fp8e4b8": (tl.float8e4b8, 4, 3, 8, True),
           "fp8e5b16": (tl.float8e5b16, 5, 2, 16, True)}


def code_values(exp_bits: int, man_bits: int, bias: int, fnuz: bool) -> np.ndarray:
    """The value of every code 0..255 (NaN where the code is NaN), from the format's definition."""
    out = np.empty(256)
    for code in range(256):
        sign = -1.0 if code & 0x80 else 1.0
        exp, man = (code >> man_bits) & ((1 << exp_bits) - 1), code & ((1 << man_bits) - 1)
        if exp == 0:
            value = man / (1 << man_bits) * 2.0 ** (1 - bias)
        else:
            value = (1 + man / (1 << man_bits)) * 2.0 ** (exp - bias)
        nan = code == 0x80 if fnuz else (code & 0x7F) == 0x7F
        out[code] = np.nan if nan else sign * value
    return out


def reference_encode(x: np.ndarray, table: np.ndarray, fnuz: bool) -> np.ndarray:
    """Nearest code (ties to the even code), saturating at the largest finite value, NaN to the canonical NaN."""
    finite = np.flatnonzero(np.isfinite(table))
    if fnuz:
        finite = finite[finite != 0x80]
    vals = table[finite]
    out = np.empty(x.shape, np.uint8)
    top = np.nanmax(table)
    for i, v in enumerate(x.astype(np.float64)):
        if np.isnan(v):
            out[i] = 0x80 if fnuz else 0x7F
            continue
        v = min(max(v, -top), top)
        dist = np.abs(vals - v)
        best = finite[dist == dist.min()]
        if len(best) > 1:  # a tie between two codes: the even one (ties to even)
            best = [c for c in best if c % 2 == 0] or best
        code = int(best[0])
        if table[code] == 0:  # a zero keeps the input's sign, except in FNUZ formats (no -0)
            code = 0x80 if (not fnuz and np.signbit(v)) else 0
        out[i] = code
    return out


@jit
def _encode_kernel(x_ptr, out_ptr, n, FMT: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, x.to(FMT).to(tl.uint8, bitcast=True), mask=mask)


@jit
def _decode_kernel(code_ptr, out_ptr, n, FMT: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    code = tl.load(code_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, code.to(FMT, bitcast=True).to(tl.float32), mask=mask)


def _inputs(table: np.ndarray, seed: int) -> np.ndarray:
    """Every code's value, the midpoints between neighbours (ties), random values across the range and
    beyond it, zeros, infinities and NaN."""
    rng = np.random.default_rng(seed)
    finite = np.unique(table[np.isfinite(table)])
    mids = (finite[1:] + finite[:-1]) / 2
    top = finite.max()
    randoms = rng.uniform(-1.5 * top, 1.5 * top, 300) * rng.choice([1, 1e-3, 1e-6], 300)
    specials = [0.0, -0.0, np.inf, -np.inf, np.nan, 4 * top, -4 * top]
    return np.concatenate([finite, mids, randoms, specials]).astype(np.float32)


@pytest.mark.parametrize("interpret", [False, True], ids=["compiled", "interpreted"])
@pytest.mark.parametrize("name", sorted(FORMATS))
def test_fp8_round_trip_matches_format_definition(name, interpret):
    fmt, exp_bits, man_bits, bias, fnuz = FORMATS[name]
    table = code_values(exp_bits, man_bits, bias, fnuz)
    x = _inputs(table, seed=len(name))
    codes = np.zeros(x.size, np.uint8)
    _encode_kernel[(-(-x.size // 128),)](x, codes, x.size, FMT=fmt, BLOCK=128, interpret=interpret)
    np.testing.assert_array_equal(codes, reference_encode(x, table, fnuz))

    all_codes = np.arange(256, dtype=np.uint8)
    values = np.zeros(256, np.float32)
    _decode_kernel[(2,)](all_codes, values, 256, FMT=fmt, BLOCK=128, interpret=interpret)
    np.testing.assert_array_equal(values, table.astype(np.float32))


def test_fp8_dtype_attributes_follow_triton():
    assert (tl.float8e4b15.exponent_bias, tl.float8e4b8.exponent_bias, tl.float8e5b16.exponent_bias) == (15, 8, 16)
    assert tl.float8e4nv.exponent_bias == 7 and tl.float16.fp_mantissa_width == 10
    assert tl.dtype("fp8e4b15") is tl.float8e4b15 and tl.str_to_ty("fp8e5b16") is tl.float8e5b16
    assert repr(tl.float16) == "triton.language.fp16"
