"""Every elementwise op of dsl/ir/ops.py, lowered and run on fresh random inputs, against numpy or exact
Python-integer references of the op table's rules."""

from __future__ import annotations

import numpy as np
import pytest
from codegen_harness import compile_kernel, map_function, numpy_storage, run_map

from dsl import dtypes as T
from dsl.ir import ops

N = 300  # not a multiple of the block: the last program is masked

INT_TYPES = [T.int8, T.int16, T.int32, T.int64, T.uint8, T.uint32, T.uint64]


def int_inputs(rng, dt: T.dtype, n: int = N) -> np.ndarray:
    info = np.iinfo(dt.to_numpy())
    edges = np.array([0, 1, -1, info.min, info.max, info.min + 1, info.max - 1, 2, -2, 7], dtype=object)
    edges = np.array([int(v) & ((1 << dt.primitive_bitwidth) - 1) for v in edges], dtype=object)
    values = rng.integers(info.min, info.max, n, dtype=dt.to_numpy(), endpoint=True)
    values[: len(edges)] = [_wrap(v, dt) for v in edges]
    return rng.permutation(values)


def _wrap(v: int, dt: T.dtype) -> int:
    bits = dt.primitive_bitwidth
    v &= (1 << bits) - 1
    return v - (1 << bits) if dt.is_int_signed() and v >= 1 << (bits - 1) else v


def _trunc_div(a: int, b: int) -> int:
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b >= 0) else -q


def _int_ref(name: str, dt: T.dtype, a: int, b: int) -> int:
    bits = dt.primitive_bitwidth
    if name == "div":
        return -1 if b == 0 else _trunc_div(a, b)
    if name == "rem":
        return a if b == 0 else a - _trunc_div(a, b) * b
    if name == "shl":
        return 0 if not 0 <= b < bits else a << b
    if name == "shr":
        if 0 <= b < bits:
            return a >> b
        return -1 if a < 0 else 0
    if name == "umulhi":
        return (a * b) >> bits
    return {"add": a + b, "sub": a - b, "mul": a * b, "min": min(a, b), "max": max(a, b), "and": a & b,
            "or": a | b, "xor": a ^ b}[name]


INT_BINARY = ["add", "sub", "mul", "div", "rem", "min", "max", "and", "or", "xor", "shl", "shr", "umulhi"]
_kernels: dict = {}


def kernel_for(key, in_dtypes, out_dtype, emit):
    if key not in _kernels:
        _kernels[key] = compile_kernel(map_function(in_dtypes, out_dtype, emit))
    return _kernels[key]


@pytest.mark.parametrize("dt", INT_TYPES, ids=str)
def test_integer_binary_ops_follow_the_op_table(rng, dt):
    def emit(kb, v):
        return [kb.binary(name, v[0], v[1], **({"propagate_nan": False} if name in ("min", "max") else {}))
                for name in INT_BINARY]

    kernel = compile_kernel(map_function([dt, dt], [dt] * len(INT_BINARY), emit))
    a, b = int_inputs(rng, dt), int_inputs(rng, dt)
    b[::5] = 0
    if dt.is_int_signed():
        a[::11], b[::11] = np.iinfo(dt.to_numpy()).min, -1
    outs = run_map(kernel, [a, b], [dt] * len(INT_BINARY))
    for name, got in zip(INT_BINARY, outs):
        expect = [_wrap(_int_ref(name, dt, int(x), int(y)), dt) for x, y in zip(a, b)]
        assert [int(v) for v in got] == expect, name


@pytest.mark.parametrize("dt", INT_TYPES, ids=str)
def test_shifts_past_the_width_give_zero_or_the_sign(rng, dt):
    kernel = compile_kernel(map_function([dt, dt], [dt, dt], lambda kb, v: [kb.binary("shl", *v),
                                                                           kb.binary("shr", *v)]))
    a = int_inputs(rng, dt)
    b = rng.integers(0, 2 * dt.primitive_bitwidth, N).astype(dt.to_numpy())
    if dt.is_int_signed():
        b[::7] = -3
    for name, got in zip(["shl", "shr"], run_map(kernel, [a, b], [dt, dt])):
        assert [int(v) for v in got] == [_wrap(_int_ref(name, dt, int(x), int(y)), dt) for x, y in zip(a, b)]


FLOAT_TYPES = [T.float32, T.float64, T.float16, T.bfloat16, T.float8e4nv, T.float8e5]


def float_inputs(rng, dt: T.dtype, n: int = N, scale: float = 4.0) -> np.ndarray:
    values = rng.standard_normal(n) * scale
    if dt.is_fp8():
        values = np.clip(values, -200, 200)
    return values.astype(numpy_storage(dt))


def _in_f32(x: np.ndarray) -> np.ndarray:
    return x.astype(np.float64 if x.dtype == np.float64 else np.float32)


FLOAT_BINARY = {"add": np.add, "sub": np.subtract, "mul": np.multiply, "div": np.divide, "rem": np.fmod}


@pytest.mark.parametrize("dt", FLOAT_TYPES, ids=str)
def test_float_binary_ops_round_like_the_hardware(rng, dt):
    names = list(FLOAT_BINARY)
    kernel = compile_kernel(map_function([dt, dt], [dt] * len(names),
                                         lambda kb, v: [kb.binary(name, v[0], v[1]) for name in names]))
    a, b = float_inputs(rng, dt), float_inputs(rng, dt)
    for name, got in zip(names, run_map(kernel, [a, b], [dt] * len(names))):
        with np.errstate(all="ignore"):
            expect = FLOAT_BINARY[name](_in_f32(a), _in_f32(b)).astype(numpy_storage(dt))
        if dt.is_fp8():  # the code saturates to the largest finite value, ml_dtypes overflows to inf/NaN
            big = ~np.isfinite(expect.astype(np.float32))
            expect[big] = got[big]
        np.testing.assert_array_equal(got.view(np.uint8), expect.view(np.uint8), err_msg=name)


@pytest.mark.parametrize("dt", [T.float32, T.float16, T.float64], ids=str)
def test_float_min_max_nan_rules(rng, dt):
    cases = [("min", True, np.minimum), ("min", False, np.fmin), ("max", True, np.maximum), ("max", False, np.fmax)]
    kernel = compile_kernel(map_function([dt, dt], [dt] * 4, lambda kb, v: [
        kb.binary(name, v[0], v[1], propagate_nan=propagate) for name, propagate, _ in cases]))
    a, b = float_inputs(rng, dt), float_inputs(rng, dt)
    a[::9] = np.nan
    b[::13] = np.nan
    for (name, propagate, fn), got in zip(cases, run_map(kernel, [a, b], [dt] * 4)):
        np.testing.assert_array_equal(got, fn(a, b), err_msg=f"{name} {propagate}")


@pytest.mark.parametrize("dt", [T.float32, T.int32, T.float16], ids=str)
def test_fma(rng, dt):
    kernel = kernel_for(("fma", dt.name), [dt, dt, dt], dt, lambda kb, v: kb.op("arith.fma", v, v[0].type))
    if dt.is_floating():
        a, b, c = float_inputs(rng, dt), float_inputs(rng, dt), float_inputs(rng, dt)
        got = run_map(kernel, [a, b, c], dt)
        exact = a.astype(np.float64) * b.astype(np.float64) + c.astype(np.float64)  # ~1 rounding from exact
        np.testing.assert_allclose(got.astype(np.float64), exact.astype(numpy_storage(dt)), rtol=2e-3 if
                                   dt.is_fp16() else 1e-7)
    else:
        a, b, c = int_inputs(rng, dt), int_inputs(rng, dt), int_inputs(rng, dt)
        got = run_map(kernel, [a, b, c], dt)
        assert [int(v) for v in got] == [_wrap(int(x) * int(y) + int(z), dt) for x, y, z in zip(a, b, c)]


PREDICATES = {"eq": np.equal, "ne": np.not_equal, "lt": np.less, "le": np.less_equal, "gt": np.greater,
              "ge": np.greater_equal}


@pytest.mark.parametrize("dt", [T.float32, T.int8, T.uint32, T.bfloat16, T.int1], ids=str)
def test_comparisons_float_ordered_except_ne(rng, dt):
    kernel = compile_kernel(map_function([dt, dt], [T.int1] * 6, lambda kb, v: [
        kb.cmp(pred, v[0], v[1]) for pred in PREDICATES]))
    if dt.is_floating():
        a, b = float_inputs(rng, dt, scale=1), float_inputs(rng, dt, scale=1)
        b[::3] = a[::3]
        a[::7] = np.nan
    elif dt.is_bool():
        a, b = rng.integers(0, 2, N).astype(bool), rng.integers(0, 2, N).astype(bool)
    else:
        a, b = int_inputs(rng, dt), int_inputs(rng, dt)
        b[::3] = a[::3]
    for (pred, fn), got in zip(PREDICATES.items(), run_map(kernel, [a, b], [T.int1] * 6)):
        x, y = (_in_f32(a), _in_f32(b)) if dt.is_floating() else (a, b)
        np.testing.assert_array_equal(got, fn(x, y), err_msg=pred)


def test_select_and_not_and_neg(rng):
    def emit(kb, v):
        cond = kb.cmp("gt", v[0], v[1])
        chosen = kb.op("arith.select", [cond, v[0], v[1]], v[0].type)
        return kb.binary("xor", kb.op("arith.not", [chosen], chosen.type), kb.op("arith.neg", [v[1]], v[1].type))

    kernel = kernel_for("select", [T.int32, T.int32], T.int32, emit)
    a, b = int_inputs(rng, T.int32), int_inputs(rng, T.int32)
    got = run_map(kernel, [a, b], T.int32)
    np.testing.assert_array_equal(got, (~np.maximum(a, b)) ^ (-b))


def test_float_neg_keeps_signed_zero_and_nan(rng):
    kernel = kernel_for("fneg", [T.float32], T.float32, lambda kb, v: kb.op("arith.neg", v, v[0].type))
    a = float_inputs(rng, T.float32)
    a[:3] = [0.0, -0.0, np.nan]
    np.testing.assert_array_equal(run_map(kernel, [a], T.float32).view(np.uint32), (-a).view(np.uint32))


UNARY_MATH = {"exp": np.exp, "exp2": np.exp2, "log": np.log, "log2": np.log2, "sin": np.sin, "cos": np.cos,
              "tanh": np.tanh, "sqrt": np.sqrt, "rsqrt": lambda x: 1 / np.sqrt(x), "floor": np.floor,
              "ceil": np.ceil, "trunc": np.trunc, "rint": np.rint, "abs": np.abs, "cbrt": np.cbrt}


def test_unary_math_references_cover_the_table():
    assert set(UNARY_MATH) | {"erf"} == set(ops.UNARY_MATH)


def _erf(x: np.ndarray) -> np.ndarray:
    import math

    return np.array([math.erf(v) for v in x.astype(np.float64)])


@pytest.mark.parametrize("dt", [T.float32, T.float64, T.float16], ids=str)
def test_unary_math(rng, dt):
    names = list(UNARY_MATH) + ["erf"]
    kernel = compile_kernel(map_function([dt, dt], [dt] * len(names), lambda kb, v: [
        kb.op(f"math.{name}", [v[1] if name in ("log", "log2", "sqrt", "rsqrt") else v[0]], v[0].type)
        for name in names]))
    x = float_inputs(rng, dt, scale=3)
    positive = np.abs(float_inputs(rng, dt, scale=3)) + numpy_storage(dt).type(0.01)
    for name, got in zip(names, run_map(kernel, [x, positive], [dt] * len(names))):
        arg = positive if name in ("log", "log2", "sqrt", "rsqrt") else x
        ref = _erf(arg) if name == "erf" else UNARY_MATH[name](arg.astype(np.float64))
        expect = ref.astype(numpy_storage(dt))
        if name in ("floor", "ceil", "trunc", "rint", "abs"):
            np.testing.assert_array_equal(got, expect, err_msg=name)
        else:
            tol = {"fp32": 4e-7, "fp64": 1e-15, "fp16": 1e-3}[dt.name]
            np.testing.assert_allclose(got.astype(np.float64), expect.astype(np.float64), rtol=tol, atol=tol,
                                       err_msg=name)


def test_integer_abs_and_pow(rng):
    kernel = kernel_for("iabs", [T.int32], T.int32, lambda kb, v: kb.op("math.abs", v, v[0].type))
    a = int_inputs(rng, T.int32)
    np.testing.assert_array_equal(run_map(kernel, [a], T.int32), np.abs(a))
    kernel = kernel_for("pow", [T.float32, T.float32], T.float32, lambda kb, v: kb.op("math.pow", v, v[0].type))
    x, y = np.abs(float_inputs(rng, T.float32)) + 0.1, float_inputs(rng, T.float32, scale=2)
    np.testing.assert_allclose(run_map(kernel, [x, y], T.float32), (x.astype(np.float64) ** y).astype(np.float32),
                               rtol=3e-7)


def test_umulhi_of_unsigned_64_bit(rng):
    dt = T.uint64
    kernel = kernel_for("umulhi64", [dt, dt], dt, lambda kb, v: kb.binary("umulhi", v[0], v[1]))
    a, b = int_inputs(rng, dt), int_inputs(rng, dt)
    got = run_map(kernel, [a, b], dt)
    assert [int(v) for v in got] == [(int(x) * int(y)) >> 64 for x, y in zip(a, b)]


def test_addptr_scales_offsets_by_element_size(rng):
    def emit(kb, v):
        return kb.binary("mul", v[0], kb.const(3, T.int32, 128))

    kernel = kernel_for("scale", [T.int32], T.int32, emit)
    a = rng.integers(-1000, 1000, N).astype(np.int32)
    np.testing.assert_array_equal(run_map(kernel, [a], T.int32), a * 3)
