"""arith.cast and arith.bitcast between every class of dtype, with the op table's edge rules: saturating
float -> int with NaN -> 0, x != 0 for int1, rtz rounding, fp8 saturation, no double rounding."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest
from codegen_harness import compile_kernel, map_function, numpy_storage, run_map

from dsl import dtypes as T

N = 200


def cast_kernel(src: T.dtype, dsts: list[T.dtype], rounding: str = "rtne", bitcast: bool = False):
    def emit(kb, v):
        if bitcast:
            return [kb.op("arith.bitcast", v, v[0].type.with_dtype(d)) for d in dsts]
        return [kb.op("arith.cast", v, v[0].type.with_dtype(d), rounding=rounding) for d in dsts]

    return compile_kernel(map_function([src], list(dsts), emit))


def float_edges(rng, dt: np.dtype) -> np.ndarray:
    values = rng.standard_normal(N) * 10.0 ** rng.integers(-3, 12, N)
    values[:8] = [np.nan, np.inf, -np.inf, 0.0, -0.0, 1e30, -1e30, 0.5]
    with np.errstate(over="ignore"):
        return values.astype(dt)


def test_int_to_int_truncates_or_extends_by_source_signedness(rng):
    a = rng.integers(-2**31, 2**31, N).astype(np.int32)
    dsts = [T.int8, T.uint16, T.int64, T.uint64, T.int1]
    outs = run_map(cast_kernel(T.int32, dsts), [a], dsts)
    for d, got in zip(dsts, outs):
        expect = a != 0 if d.is_bool() else a.astype(d.to_numpy())
        np.testing.assert_array_equal(got, expect, err_msg=d.name)
    u = rng.integers(0, 256, N).astype(np.uint8)
    (wide,) = run_map(cast_kernel(T.uint8, [T.int32]), [u], [T.int32])
    np.testing.assert_array_equal(wide, u.astype(np.int32))


@pytest.mark.parametrize("src", [T.float32, T.float64, T.float16], ids=str)
def test_float_to_int_saturates_and_maps_nan_to_zero(rng, src):
    x = float_edges(rng, numpy_storage(src))
    dsts = [T.int8, T.uint8, T.int32, T.uint32, T.int64, T.int1]
    outs = run_map(cast_kernel(src, dsts), [x], dsts)
    wide = x.astype(np.float64)
    for d, got in zip(dsts, outs):
        if d.is_bool():
            np.testing.assert_array_equal(got, (wide != 0) | np.isnan(wide))
            continue
        info = np.iinfo(d.to_numpy())
        expect = [0 if np.isnan(v) else int(max(info.min, min(info.max, np.trunc(v)))) if np.isfinite(v) else
                  (info.max if v > 0 else info.min) for v in wide]
        assert [int(v) for v in got] == expect, d.name


def test_int_to_float_rounds_once(rng):
    a = rng.integers(-2**31, 2**31, N).astype(np.int32)
    a[:3] = [2**24 + 1, 16777217 * 3, 65520]
    dsts = [T.float32, T.float64, T.float16, T.bfloat16]
    outs = run_map(cast_kernel(T.int32, dsts), [a], dsts)
    for d, got in zip(dsts, outs):
        with np.errstate(over="ignore"):
            expect = a.astype(np.float64).astype(numpy_storage(d))  # exact in f64, then one rounding
        np.testing.assert_array_equal(got, expect, err_msg=d.name)
    u = rng.integers(0, 2**64 - 1, N, dtype=np.uint64)
    (f,) = run_map(cast_kernel(T.uint64, [T.float32]), [u], [T.float32])
    assert [float(v) for v in f] == [float(np.float32(int(v))) for v in u]
    flags = rng.integers(0, 2, N).astype(bool)
    (b,) = run_map(cast_kernel(T.int1, [T.float32]), [flags], [T.float32])
    np.testing.assert_array_equal(b, flags.astype(np.float32))


def _toward_zero(exact: np.ndarray, nearest: np.ndarray, bits_dtype) -> np.ndarray:
    """Reference rtz: the nearest value, stepped one ulp toward zero where it overshot."""
    bits = nearest.view(bits_dtype).copy()
    over = np.abs(nearest.astype(np.float64)) > np.abs(exact.astype(np.float64))
    bits[over] -= 1
    return bits.view(nearest.dtype)


def gpu_nan(expect: np.ndarray, source: np.ndarray) -> np.ndarray:
    """Where the source is NaN the GPU writes its canonical NaN: every bit but the sign set (measured on an H200)."""
    bits = expect.view(f"u{expect.dtype.itemsize}").copy()
    bits[np.isnan(source)] = (1 << (8 * expect.dtype.itemsize - 1)) - 1
    return bits


def test_float_narrowing_rtne_and_rtz(rng):
    x = float_edges(rng, np.float32)
    dsts = [T.float16, T.bfloat16]
    for rounding in ("rtne", "rtz"):
        outs = run_map(cast_kernel(T.float32, dsts, rounding), [x], dsts)
        for d, got in zip(dsts, outs):
            with np.errstate(over="ignore"):
                nearest = x.astype(numpy_storage(d))
            expect = nearest if rounding == "rtne" else _toward_zero(x, nearest, np.uint16)
            with np.errstate(over="ignore"):
                expect = np.where(np.isinf(x), x.astype(numpy_storage(d)), expect)  # inf stays inf under rtz
            np.testing.assert_array_equal(got.view(np.uint16), gpu_nan(expect, x), err_msg=f"{d} {rounding}")


def test_double_to_narrow_has_no_double_rounding(rng):
    x = float_edges(rng, np.float64)
    x[8:12] = [1 + 2**-11 + 2**-40, -(1 + 2**-11 + 2**-40), 1 + 2**-8 + 2**-45, 3.0000001]
    dsts = [T.float32, T.float16, T.bfloat16]
    outs = run_map(cast_kernel(T.float64, dsts), [x], dsts)
    for d, got in zip(dsts, outs):
        with np.errstate(over="ignore"):  # numpy rounds f64 directly; ml_dtypes' bf16 goes through f32
            expect = _bf16_nearest(x) if d.is_bf16() else x.astype(numpy_storage(d))
        if d.primitive_bitwidth < 32:
            expect = gpu_nan(expect, x)
        np.testing.assert_array_equal(got.view(np.uint8), expect.view(np.uint8), err_msg=d.name)
    (rtz,) = run_map(cast_kernel(T.float64, [T.float32], "rtz"), [x], [T.float32])
    with np.errstate(over="ignore"):
        expect = _toward_zero(x, x.astype(np.float32), np.uint32)
    expect = np.where(np.isinf(x), x.astype(np.float32), expect)
    np.testing.assert_array_equal(rtz.view(np.uint32), expect.view(np.uint32))


def _bf16_nearest(x: np.ndarray) -> np.ndarray:
    """Correctly rounded f64 -> bf16 for normal-range values (8 significant bits, ties to even)."""
    mantissa, exponent = np.frexp(x)
    finite = np.isfinite(x) & (x != 0)
    rounded = np.where(finite, np.ldexp(np.rint(np.ldexp(mantissa, 8)), exponent - 8), x)
    return rounded.astype(ml_dtypes.bfloat16)  # exact: already a bf16 value


def test_fp8_saturates_and_widening_is_exact(rng):
    x = float_edges(rng, np.float32)
    dsts = [T.float8e4nv, T.float8e5]
    outs = run_map(cast_kernel(T.float32, dsts), [x], dsts)
    for d, got in zip(dsts, outs):
        storage = numpy_storage(d)
        top = float(ml_dtypes.finfo(storage).max)
        expect = np.where(np.isnan(x), x, np.clip(x, -top, top)).astype(storage)
        np.testing.assert_array_equal(got.view(np.uint8), gpu_nan(expect, x), err_msg=d.name)
    codes = rng.integers(0, 256, N).astype(np.uint8).view(ml_dtypes.float8_e5m2)
    dsts = [T.float16, T.float32, T.float64, T.bfloat16]
    outs = run_map(cast_kernel(T.float8e5, dsts), [codes], dsts)
    for d, got in zip(dsts, outs):
        expect = codes.astype(np.float32)
        with np.errstate(invalid="ignore"):
            np.testing.assert_array_equal(got.astype(np.float64), expect.astype(np.float64), err_msg=d.name)


def test_bitcasts_keep_bits(rng):
    x = float_edges(rng, np.float32)
    (i,) = run_map(cast_kernel(T.float32, [T.int32], bitcast=True), [x], [T.int32])
    np.testing.assert_array_equal(i, x.view(np.int32))
    h = rng.standard_normal(N).astype(np.float16)
    outs = run_map(cast_kernel(T.float16, [T.int16, T.bfloat16], bitcast=True), [h], [T.int16, T.bfloat16])
    np.testing.assert_array_equal(outs[0], h.view(np.int16))
    np.testing.assert_array_equal(outs[1].view(np.uint16), h.view(np.uint16))
    bits = rng.integers(0, 2**16, N).astype(np.uint16)
    bits[(bits & 0x7C00) == 0x7C00] = 0  # skip fp16 inf/NaN codes (NaN payloads are canonicalised)
    (back,) = run_map(cast_kernel(T.uint16, [T.float16], bitcast=True), [bits], [T.float16])
    np.testing.assert_array_equal(back.view(np.uint16), bits)


def test_pointer_integer_round_trip(rng):
    def emit(kb, v):
        p = kb.op("arith.cast", v, v[0].type.with_dtype(T.pointer_type(T.float32)), rounding="rtne")
        q = kb.op("tile.addptr", [p, kb.const(2, T.int32, *v[0].type.shape)], p.type)
        return [kb.op("arith.cast", [q], v[0].type, rounding="rtne")]

    kernel = compile_kernel(map_function([T.int64], [T.int64], emit))
    a = rng.integers(0, 2**40, N).astype(np.int64)
    (got,) = run_map(kernel, [a], [T.int64])
    np.testing.assert_array_equal(got, a + 8)
