"""jit.codegen.floats against numpy / ml_dtypes: exhaustive decode, encode on ~2M chosen f32 values per format.

The encode inputs are every representable value of the format, every midpoint between neighbours (the
ties), their f32 neighbours, the overflow boundary, specials, and 2^20 random f32 bit patterns.
"""

from __future__ import annotations

import llvmlite.ir as ir
import ml_dtypes
import numpy as np
import pytest

from dsl import dtypes
from jit.codegen import floats

F32 = ir.FloatType()

FORMATS = {  # name -> (numpy dtype that rounds like the format, storage dtype, max finite)
    "fp16": (np.float16, np.uint16, 65504.0),
    "bf16": (ml_dtypes.bfloat16, np.uint16, float(ml_dtypes.finfo(ml_dtypes.bfloat16).max)),
    "fp8e4nv": (ml_dtypes.float8_e4m3fn, np.uint8, 448.0),
    "fp8e5": (ml_dtypes.float8_e5m2, np.uint8, 57344.0),
}


def _int_ty(fmt: str) -> ir.IntType:
    return ir.IntType(8 * np.dtype(FORMATS[fmt][1]).itemsize)


def _all_values(fmt: str) -> np.ndarray:
    """Every finite value of the format, sorted, as float32 (exact)."""
    np_t, store, _ = FORMATS[fmt]
    codes = np.arange(np.iinfo(store).max + 1, dtype=np.uint64).astype(store)
    vals = codes.view(np_t).astype(np.float32)
    return np.unique(vals[np.isfinite(vals)])


def _neighbours(v: np.ndarray, k: int = 2) -> list[np.ndarray]:
    out, up, down = [v], v.copy(), v.copy()
    for _ in range(k):
        up, down = np.nextafter(up, np.float32(np.inf)), np.nextafter(down, np.float32(-np.inf))
        out += [up, down]
    return out


def encode_inputs(fmt: str) -> np.ndarray:
    rng = np.random.default_rng(1234)
    vals = _all_values(fmt)
    wide = vals.astype(np.float64)
    mids = ((wide[:-1] + wide[1:]) / 2).astype(np.float32)  # exact: one bit more than the format
    top = wide[-1]
    ulp_top = top - wide[-2]
    over = np.array([top + ulp_top / 2, top + ulp_top, top + 1.5 * ulp_top, top * 2, 1e30, 3e38], np.float32)
    specials = np.array([0.0, np.inf, np.nan, 1e-45, 1e-40, 1.1754942e-38, 1.1754944e-38, 3.4028235e38],
                        np.float32)
    nans = np.array([0x7FC00000, 0x7F800001, 0x7FBFFFFF, 0x7FFFFFFF, 0x7F802000, 0x7FC00001], np.uint32).view(
        np.float32)
    parts = _neighbours(vals) + _neighbours(mids) + _neighbours(over) + [specials, nans]
    parts.append(rng.integers(0, 2**32, 2**20, dtype=np.uint64).astype(np.uint32).view(np.float32))
    parts.append((rng.standard_normal(2**18) * top / 4).astype(np.float32))
    x = np.concatenate(parts)
    return np.concatenate([x, -x])


def reference_codes(x: np.ndarray, fmt: str, rounding: str, saturate: bool) -> np.ndarray:
    np_t, store, top = FORMATS[fmt]
    with np.errstate(over="ignore", invalid="ignore"):
        codes = x.astype(np_t).view(store).copy()
    sign = np.array(1 << (8 * np.dtype(store).itemsize - 1), dtype=store)
    finite = np.isfinite(x)
    if rounding == "rtz":  # one code toward zero wherever round-to-nearest moved away from zero
        with np.errstate(invalid="ignore"):
            dec = codes.view(np_t).astype(np.float64)
            away = finite & ~(np.abs(dec) <= np.abs(x.astype(np.float64)))  # NaN (fp8e4nv overflow) too
        codes = np.where(away, codes - 1, codes).astype(store)
    if saturate:
        dec = codes.view(np_t).astype(np.float64)
        out = ~np.isfinite(dec) & ~np.isnan(x)
        max_code = np.array(top, np.float32).astype(np_t).view(store)
        codes = np.where(out, (codes & sign) | max_code, codes).astype(store)
    return codes


def assert_same_codes(got: np.ndarray, want: np.ndarray, fmt: str, x: np.ndarray) -> None:
    np_t, store, _ = FORMATS[fmt]
    sign = 1 << (8 * np.dtype(store).itemsize - 1)
    w_nan = np.isnan(want.view(np_t).astype(np.float32))
    canonical_nan = sign - 1  # a NaN input gives NVIDIA's: every bit but the sign (benchmarks/gpu/numerics_h200.json)
    g_nan = np.isnan(got.view(np_t).astype(np.float32))
    overflow_nan = w_nan & ~np.isnan(x)  # E4M3FN overflow in IEEE mode keeps the sign
    bad = np.where(np.isnan(x), got != canonical_nan,
                   np.where(overflow_nan, ~g_nan | ((got & sign) != (want & sign)), got != want))
    if bad.any():
        i = np.flatnonzero(bad)[:8]
        rows = [f"x={x[j]!r} ({x[j:j + 1].view(np.uint32)[0]:#010x}) got {got[j]:#x} want {want[j]:#x}" for j in i]
        pytest.fail(f"{bad.sum()} of {x.size} differ:\n" + "\n".join(rows))


@pytest.fixture(scope="module")
def inputs():
    return {fmt: encode_inputs(fmt) for fmt in FORMATS}


@pytest.mark.parametrize("fmt", list(FORMATS))
def test_decode_exhaustive(jit_map, fmt):
    np_t, store, _ = FORMATS[fmt]
    k = jit_map(lambda b, v: floats.decode(b, v, fmt), [_int_ty(fmt)], F32)
    codes = np.arange(np.iinfo(store).max + 1, dtype=np.uint64).astype(store)
    got = k(codes)
    want = codes.view(np_t).astype(np.float32)
    nan = np.isnan(want)
    assert np.array_equal(np.isnan(got), nan)
    assert np.array_equal(np.signbit(got[nan]), np.signbit(want[nan]))
    assert np.array_equal(got[~nan].view(np.uint32), want[~nan].view(np.uint32))  # -0 and subnormals too
    assert "call" not in k.asm


@pytest.mark.parametrize("fmt", list(FORMATS))
@pytest.mark.parametrize("rounding", ["rtne", "rtz"])
@pytest.mark.parametrize("saturate", [False, True, None])
def test_encode(jit_map, inputs, fmt, rounding, saturate):
    x = inputs[fmt]
    k = jit_map(lambda b, v: floats.encode(b, v, fmt, rounding, saturate), [F32], _int_ty(fmt))
    want_sat = (fmt.startswith("fp8")) if saturate is None else saturate
    assert_same_codes(k(x), reference_codes(x, fmt, rounding, want_sat), fmt, x)


@pytest.mark.parametrize("fmt", list(FORMATS))
@pytest.mark.parametrize("rounding", ["rtne", "rtz"])
@pytest.mark.parametrize("saturate", [False, None])
def test_round_to_matches_encode(jit_map, inputs, fmt, rounding, saturate):
    x = inputs[fmt]
    k = jit_map(lambda b, v: floats.round_to(b, v, fmt, rounding, saturate), [F32], F32)
    np_t = FORMATS[fmt][0]
    want_sat = (fmt.startswith("fp8")) if saturate is None else saturate
    want = reference_codes(x, fmt, rounding, want_sat).view(np_t).astype(np.float32)
    got = k(x)
    nan = np.isnan(want)
    assert np.array_equal(np.isnan(got), nan)
    diff = got[~nan].view(np.uint32) != want[~nan].view(np.uint32)
    assert not diff.any(), (x[~nan][diff][:5], got[~nan][diff][:5], want[~nan][diff][:5])


def test_saturation_values(jit_map):
    """The cvt.rn.satfinite rule spelled out: fp8 clamps overflow and inf to +-max, NaN stays NaN."""
    x = np.array([1e6, -1e6, np.inf, -np.inf, 464.0, 465.0, 60000.0, np.nan], np.float32)
    e4 = jit_map(lambda b, v: floats.round_to(b, v, "fp8e4nv"), [F32], F32)(x)
    e5 = jit_map(lambda b, v: floats.round_to(b, v, dtypes.float8e5), [F32], F32)(x)
    np.testing.assert_array_equal(e4[:7], [448, -448, 448, -448, 448, 448, 448])
    np.testing.assert_array_equal(e5[:7], [57344, -57344, 57344, -57344, 448, 448, 57344])
    assert np.isnan(e4[7]) and np.isnan(e5[7])
    h = jit_map(lambda b, v: floats.round_to(b, v, "fp16"), [F32], F32)(x)
    np.testing.assert_array_equal(h[:7], [np.inf, -np.inf, np.inf, -np.inf, 464, 465, 60000])


def test_fmt_spellings_and_errors():
    m = ir.Module()
    fn = ir.Function(m, ir.FunctionType(ir.VoidType(), [F32, ir.DoubleType(), ir.IntType(16)]), "f")
    b = ir.IRBuilder(fn.append_basic_block())
    x, d, h = fn.args
    for fmt in (dtypes.float16, "fp16", "f16"):
        assert floats.encode(b, x, fmt).type == ir.IntType(16)
    assert floats.round_to(b, x, "fp32") is x
    with pytest.raises(TypeError):
        floats.encode(b, d, "bf16")
    with pytest.raises(ValueError):
        floats.encode(b, x, "int8")
    with pytest.raises(ValueError):
        floats.encode(b, x, "bf16", rounding="rtp")
    with pytest.raises(TypeError):
        floats.decode(b, h, "fp8e5")


def test_tf32_truncate(jit_map):
    rng = np.random.default_rng(7)
    x = rng.integers(0, 2**32, 2**18, dtype=np.uint64).astype(np.uint32).view(np.float32)
    x = np.concatenate([x, np.array([0x7F800001, 0x7F800000, 0xFF801000, 0x3F800FFF], np.uint32).view(np.float32)])
    got = jit_map(lambda b, v: floats.tf32_truncate(b, v), [F32], F32)(x)
    nan = np.isnan(x)
    assert np.array_equal(got[nan].view(np.uint32), x[nan].view(np.uint32))
    assert np.array_equal(got[~nan].view(np.uint32), x[~nan].view(np.uint32) & 0xFFFFE000)


def test_vector_types_and_vectorised(jit_map):
    """The emitters accept LLVM vector types, and scalar loops of them compile to SIMD without calls."""
    v8 = ir.VectorType(F32, 8)
    k = jit_map(lambda b, v: floats.decode(b, floats.encode(b, v, "bf16"), "bf16"),
                [v8], ir.VectorType(F32, 8))
    x = np.random.default_rng(3).standard_normal(4096).astype(np.float32)
    np.testing.assert_array_equal(k(x), x.astype(ml_dtypes.bfloat16).astype(np.float32))
    for fmt in FORMATS:
        scalar = jit_map(lambda b, v, fmt=fmt: floats.encode(b, v, fmt), [F32], _int_ty(fmt))
        assert ("ymm" in scalar.asm or "zmm" in scalar.asm) and "call" not in scalar.asm, fmt  # AVX2 or AVX-512
