"""Triton's typing rules where wavetile used to differ: shifts, signedness, literals, shapes, error texts."""

import numpy as np
import pytest

import dsl as tl
from dsl.errors import CompilationError, TritonError
from jit import jit

INTS = ["int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64"]


@jit
def _shift_kernel(x_ptr, y_ptr, out_ptr, n, LEFT: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    y = tl.load(y_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, x << y if LEFT else x >> y, mask=mask)


@pytest.mark.parametrize("left", [False, True], ids=["shr", "shl"])
@pytest.mark.parametrize("dtype_x", INTS)
@pytest.mark.parametrize("dtype_y", ["uint8", "uint32", "uint64"])
def test_shift_follows_the_shifted_operand_signedness(dtype_x, dtype_y, left):
    """`>>` is arithmetic when the left tensor is signed, even when promotion makes the result unsigned."""
    bits = max(np.dtype(dtype_x).itemsize, np.dtype(dtype_y).itemsize) * 8
    rng = np.random.default_rng(bits + len(dtype_x))
    n = 300  # not a multiple of the block
    info = np.iinfo(dtype_x)
    x = rng.integers(info.min, info.max, n, dtype=dtype_x, endpoint=True)
    y = rng.integers(0, bits, n).astype(dtype_y)
    signed = "int" if dtype_x.startswith("int") else "uint"
    wide = np.dtype(f"{signed}{bits}")
    expected = (x.astype(wide) << y.astype(wide)) if left else (x.astype(wide) >> y.astype(wide))
    out_dtype = np.dtype(f"uint{bits}") if (dtype_y.startswith("u") and np.dtype(dtype_y).itemsize * 8 >= bits
                                           or dtype_x.startswith("u")) else wide
    out = np.zeros(n, out_dtype)
    _shift_kernel[(3,)](x, y, out, n, LEFT=left, BLOCK=128)
    np.testing.assert_array_equal(out, expected.astype(out_dtype))


@jit
def _literal_kernel(out_ptr, lo, hi):
    acc = 0
    acc = acc.to(tl.int64)
    for i in range(lo, hi):
        acc += i
    one = 1
    tl.static_assert(one.dtype == tl.int32)
    tl.store(out_ptr, acc)


def test_int_literals_have_dtype_and_to():
    lo = 2**35 + int(np.random.default_rng(5).integers(0, 1000))
    out = np.zeros(1, np.int64)
    _literal_kernel[(1,)](out, lo, lo + 20)
    assert out[0] == sum(range(lo, lo + 20))


@jit
def _shape_kernel(x_ptr, out_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    tl.static_assert(x.shape == [BLOCK])
    y = x[:, None]
    tl.static_assert(y.shape == [BLOCK, 1] and y.shape == (BLOCK, 1) and y.shape != [1, BLOCK])
    tl.static_assert(y.shape + [2] == [BLOCK, 1, 2])
    tl.store(out_ptr + offs, tl.reshape(y, x.shape) * 2)


def test_shapes_compare_equal_to_lists():
    x = np.random.default_rng(3).standard_normal(64).astype(np.float32)
    out = np.zeros_like(x)
    _shape_kernel[(1,)](x, out, BLOCK=64)
    np.testing.assert_array_equal(out, x * 2)


@jit
def _typing_kernel(x_ptr, u_ptr, f_ptr, OP: tl.constexpr):
    x = tl.load(x_ptr)  # int32
    u = tl.load(u_ptr)  # uint32
    f = tl.load(f_ptr)  # float32
    if OP == "int & float":
        r = x & f
    elif OP == "float | int":
        r = f | x
    elif OP == "float ^ float":
        r = f ^ f
    elif OP == "int % uint":
        r = x % u
    elif OP == "uint // int":
        r = u // x
    elif OP == "int / uint":
        r = x / u
    elif OP == "int + 2**40":
        r = x + 1099511627776
    else:
        r = u + (-1)
    tl.store(x_ptr, r)


def _compile_error(op: str) -> CompilationError:
    with pytest.raises(CompilationError) as info:
        _typing_kernel[(1,)](np.ones(1, np.int32), np.ones(1, np.uint32), np.ones(1, np.float32), OP=op)
    return info.value


@pytest.mark.parametrize("op", ["int & float", "float | int", "float ^ float"])
def test_bitwise_on_floats_says_invalid_operands(op):
    error = _compile_error(op)
    assert "invalid operands of type" in str(error) and isinstance(error, TritonError)


@pytest.mark.parametrize("op", ["int % uint", "uint // int", "int / uint"])
def test_div_and_mod_refuse_mixed_signedness(op):
    assert "because they have different signedness" in str(_compile_error(op))


def test_literal_out_of_range_for_the_tensor_type():
    assert "Scalar 1099511627776 is out of range for type int32" in str(_compile_error("int + 2**40"))
    assert "negative scalar" in str(_compile_error("uint + -1"))


@jit
def _names_kernel(x_ptr, out_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    y = tl.squeeze(tl.unsqueeze(x, 0), 0)
    tl.store(out_ptr + offs, tl.add(tl.mul(y, 3.0), tl.sub(y, 1.0)))


def test_explicit_arithmetic_and_squeeze():
    x = np.random.default_rng(9).standard_normal(32).astype(np.float32)
    out = np.zeros_like(x)
    _names_kernel[(1,)](x, out, BLOCK=32)
    np.testing.assert_allclose(out, x * 3 + (x - 1), rtol=1e-6)


def test_inline_asm_is_refused_with_a_reason():
    @jit
    def kernel(x_ptr):
        x = tl.load(x_ptr)
        tl.store(x_ptr, tl.inline_asm_elementwise("mov.b32 $0, $1;", "=r,r", [x], dtype=tl.int32, is_pure=True,
                                                  pack=1))

    with pytest.raises(CompilationError, match="inline GPU assembly"):
        kernel[(1,)](np.ones(1, np.int32))
