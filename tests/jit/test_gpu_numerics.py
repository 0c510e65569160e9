"""wavetile gives the GPU's numbers: replays inputs recorded on an H200 (benchmarks/gpu/numerics_probe.py,
Triton 3.6) and requires the same bits for dot operand rounding, conversions, integer edge cases and Philox."""

import json
import pathlib

import numpy as np
import pytest

import dsl as tl
from jit import jit

DATA = json.loads((pathlib.Path(__file__).parents[2] / "benchmarks" / "gpu" / "numerics_h200.json").read_text())


@jit
def dot_kernel(a_ptr, b_ptr, c_ptr, N: tl.constexpr, PREC: tl.constexpr):
    r = tl.arange(0, N)
    a = tl.load(a_ptr + r[:, None] * N + r[None, :])
    b = tl.load(b_ptr + r[:, None] * N + r[None, :])
    tl.store(c_ptr + r[:, None] * N + r[None, :], tl.dot(a, b, input_precision=PREC))


@pytest.mark.parametrize("precision", ["tf32", "ieee"])
def test_dot_operand_rounding_matches_h200(precision):
    a = np.array(DATA["dot"]["a"], np.float32)
    c = np.zeros_like(a)
    dot_kernel[(1,)](a, np.eye(a.shape[0], dtype=np.float32), c, N=a.shape[0], PREC=precision)
    np.testing.assert_array_equal(c, np.array(DATA["dot"][f"a_times_identity_{precision}"], np.float32))


def test_dot_products_match_h200_to_rounding():
    a, b = (np.array(DATA["dot"][k], np.float32) for k in ("a", "b"))
    for precision, rtol in (("tf32", 2e-6), ("ieee", 2e-6)):
        c = np.zeros_like(a)
        dot_kernel[(1,)](a, b, c, N=a.shape[0], PREC=precision)
        gpu = np.array(DATA["dot"][f"a_times_b_{precision}"], np.float32)
        np.testing.assert_allclose(c, gpu, rtol=rtol, atol=rtol * np.abs(gpu).max())


@jit
def cast_kernel(x_ptr, h_ptr, bf_ptr, e4_ptr, e5_ptr, i_ptr, u_ptr, n, BLOCK: tl.constexpr):
    r = tl.arange(0, BLOCK)
    m = r < n
    x = tl.load(x_ptr + r, mask=m)
    tl.store(h_ptr + r, x.to(tl.float16).to(tl.uint16, bitcast=True), mask=m)
    tl.store(bf_ptr + r, x.to(tl.bfloat16).to(tl.uint16, bitcast=True), mask=m)
    tl.store(e4_ptr + r, x.to(tl.float8e4nv).to(tl.uint8, bitcast=True), mask=m)
    tl.store(e5_ptr + r, x.to(tl.float8e5).to(tl.uint8, bitcast=True), mask=m)
    tl.store(i_ptr + r, x.to(tl.int32), mask=m)
    tl.store(u_ptr + r, x.to(tl.uint32).to(tl.int32, bitcast=True), mask=m)


@pytest.mark.parametrize("name", ["fp16_bits", "bf16_bits", "fp8e4nv_bits", "fp8e5_bits", "int32", "uint32_as_int32"])
def test_conversions_match_h200_bit_for_bit(name):
    casts = DATA["casts"]
    x = np.array([float(v) for v in casts["x"]], np.float32)
    n = x.size
    outs = [np.zeros(n, d) for d in (np.uint16, np.uint16, np.uint8, np.uint8, np.int32, np.int32)]
    cast_kernel[(1,)](x, *outs, n, BLOCK=256)
    got = dict(zip(["fp16_bits", "bf16_bits", "fp8e4nv_bits", "fp8e5_bits", "int32", "uint32_as_int32"], outs))[name]
    expected = np.array(casts[name], np.int64)
    bad = np.flatnonzero(got.astype(np.int64) != expected)
    assert bad.size == 0, [(float(x[i]), int(got[i]), int(expected[i])) for i in bad[:8]]


@jit
def int_kernel(a_ptr, b_ptr, div_ptr, rem_ptr, shl_ptr, shr_ptr, ushr_ptr, n, BLOCK: tl.constexpr):
    r = tl.arange(0, BLOCK)
    m = r < n
    a = tl.load(a_ptr + r, mask=m)
    b = tl.load(b_ptr + r, mask=m)
    tl.store(div_ptr + r, a // b, mask=m)
    tl.store(rem_ptr + r, a % b, mask=m)
    tl.store(shl_ptr + r, a << b, mask=m)
    tl.store(shr_ptr + r, a >> b, mask=m)
    tl.store(ushr_ptr + r, (a.to(tl.uint32, bitcast=True) >> b.to(tl.uint32, bitcast=True)).to(tl.int32, bitcast=True),
             mask=m)


def test_integer_edge_cases_match_h200():
    ints = DATA["ints"]
    a, b = np.array(ints["a"], np.int32), np.array(ints["b"], np.int32)
    outs = [np.zeros_like(a) for _ in range(5)]
    int_kernel[(1,)](a, b, *outs, a.size, BLOCK=32)
    for name, got in zip(["floordiv", "mod", "shl", "shr", "ushr"], outs):
        np.testing.assert_array_equal(got, np.array(ints[name], np.int32), err_msg=name)


@jit
def rand_kernel(out_ptr, f_ptr, seed, N: tl.constexpr):
    r = tl.arange(0, N)
    tl.store(out_ptr + r, tl.randint(seed, r).to(tl.int32, bitcast=True))
    tl.store(f_ptr + r, tl.rand(seed, r))


def test_philox_stream_matches_h200():
    rec = DATA["rand_exp"]
    bits, uniform = np.zeros(1024, np.int32), np.zeros(1024, np.float32)
    rand_kernel[(1,)](bits, uniform, rec["seed"], N=1024)
    np.testing.assert_array_equal(bits, np.array(rec["randint"], np.int32))
    np.testing.assert_array_equal(uniform, np.array(rec["rand"], np.float32))


@jit
def sum_kernel(x_ptr, out_ptr, N: tl.constexpr):
    r = tl.arange(0, N)
    tl.store(out_ptr + tl.program_id(0), tl.sum(tl.load(x_ptr + tl.program_id(0) * N + r), axis=0))


@pytest.mark.parametrize("interpret", [False, True])
@pytest.mark.parametrize("num_warps", [1, 4, 8])
def test_sum_rounds_as_on_h200(num_warps, interpret):
    """Order-sensitive rows (large values that cancel): each thread's 4 loaded elements, lanes, then warps."""
    x = np.array(DATA["sum"]["x"], np.float32)
    out = np.empty(x.shape[0], np.float32)
    sum_kernel[(x.shape[0],)](x, out, N=x.shape[1], num_warps=num_warps, interpret=interpret)
    expected = np.array(DATA["sum"][f"sum_num_warps_{num_warps}"], np.float32)
    np.testing.assert_array_equal(out.view(np.int32), expected.view(np.int32))
