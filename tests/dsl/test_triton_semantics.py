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


@jit
def _dot16_kernel(a_ptr, b_ptr, c_ptr, M: tl.constexpr, N: tl.constexpr, K: tl.constexpr, OUT: tl.constexpr):
    m, n, k = tl.arange(0, M), tl.arange(0, N), tl.arange(0, K)
    a = tl.load(a_ptr + m[:, None] * K + k[None, :])
    b = tl.load(b_ptr + k[:, None] * N + n[None, :])
    tl.store(c_ptr + m[:, None] * N + n[None, :], tl.dot(a, b, out_dtype=OUT))


@pytest.mark.parametrize("out", ["float16", "bfloat16"])
def test_dot_with_16_bit_out_dtype_rounds_once(out):
    """out_dtype=fp16/bf16: fp32 sums rounded once, as Triton's interpreter (and a tensor core's MMA) do."""
    import ml_dtypes

    rng = np.random.default_rng(11)
    a = rng.standard_normal((32, 64)).astype(np.float16)
    b = rng.standard_normal((64, 16)).astype(np.float16)
    np_out = np.float16 if out == "float16" else ml_dtypes.bfloat16
    c = np.zeros((32, 16), np_out)
    _dot16_kernel[(1,)](a, b, c, 32, 16, 64, OUT=getattr(tl, out))
    expected = (a.astype(np.float32) @ b.astype(np.float32)).astype(np_out)
    mismatch = np.abs(c.astype(np.float32) - expected.astype(np.float32))
    ulp = np.abs(expected.astype(np.float32)) * (2.0**-10 if out == "float16" else 2.0**-7) + 1e-6
    assert np.all(mismatch <= ulp)  # at most one rounding step away (the f32 sums differ in order only)


@jit
def _umulhi_kernel(x_ptr, y_ptr, out_ptr, N: tl.constexpr):
    offs = tl.arange(0, N)
    tl.store(out_ptr + offs, tl.umulhi(tl.load(x_ptr + offs), tl.load(y_ptr + offs)))


@pytest.mark.parametrize("dtype", ["int32", "int64"])
def test_umulhi_of_signed_values_multiplies_their_bit_patterns(dtype):
    rng = np.random.default_rng(2)
    info = np.iinfo(dtype)
    x = rng.integers(info.min, info.max, 64, dtype=dtype, endpoint=True)
    y = rng.integers(info.min, info.max, 64, dtype=dtype, endpoint=True)
    bits = np.dtype(dtype).itemsize * 8
    unsigned = f"uint{bits}"
    product = x.view(unsigned).astype(object) * y.view(unsigned).astype(object)
    expected = np.array([int(p) >> bits for p in product], dtype=unsigned).view(dtype)
    out = np.zeros(64, dtype)
    _umulhi_kernel[(1,)](x, y, out, N=64)
    np.testing.assert_array_equal(out, expected)


@jit
def _dot4d_kernel(a_ptr, b_ptr, c_ptr, item_ptr):
    i = tl.arange(0, 2)
    j = tl.arange(0, 16)
    offs = (i[:, None, None, None] * 2 * 16 * 16 + i[None, :, None, None] * 16 * 16
            + j[None, None, :, None] * 16 + j[None, None, None, :])
    c = tl.dot(tl.load(a_ptr + offs), tl.load(b_ptr + offs), input_precision="ieee")
    tl.store(c_ptr + offs, c)
    tl.store(item_ptr, tl.sum(tl.reshape(c, [2 * 2 * 16 * 16]), axis=0, keep_dims=True).item())


def test_dot_of_4d_blocks_and_item():
    rng = np.random.default_rng(4)
    a = rng.standard_normal((2, 2, 16, 16)).astype(np.float32)
    b = rng.standard_normal((2, 2, 16, 16)).astype(np.float32)
    c = np.zeros_like(a)
    total = np.zeros(1, np.float32)
    _dot4d_kernel[(1,)](a, b, c, total)
    np.testing.assert_allclose(c, a @ b, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(total[0], (a @ b).sum(), rtol=1e-4, atol=1e-3)


def test_triton_error_texts_and_causes():
    @jit
    def bad_axis(x_ptr):
        tl.store(x_ptr + tl.expand_dims(tl.arange(0, 32), -3), 1)

    with pytest.raises(CompilationError) as info:
        bad_axis[(1,)](np.zeros(32, np.int32))
    assert "invalid axis -3. Expected -2 <= axis < 2" in str(info.value.__cause__)

    @jit
    def bad_pid(x_ptr):
        tl.store(x_ptr, tl.program_id(3))

    with pytest.raises(CompilationError) as info:
        bad_pid[(1,)](np.zeros(1, np.int32))
    assert "program_id axis must be 0, 1, or 2 but got 3" in str(info.value.__cause__)


@jit
def _conditional_store_kernel(x_ptr, a_ptr, b_ptr):
    pid = tl.program_id(0)
    tl.store(x_ptr + pid, tl.load(a_ptr + pid)) if pid % 2 == 0 else tl.store(x_ptr + pid, tl.load(b_ptr + pid))
    z = tl.interleave(pid, pid + 100)
    tl.static_assert(z.shape == [2])
    tl.store(b_ptr + 2 * pid + tl.arange(0, 2) + 64, z)


def test_conditional_expression_statement_runs_one_side_and_interleave_of_scalars():
    rng = np.random.default_rng(8)
    a = rng.integers(1, 100, 256).astype(np.int32)
    b = rng.integers(1, 100, 256).astype(np.int32)
    original_b = b.copy()
    x = np.zeros(32, np.int32)
    _conditional_store_kernel[(32,)](x, a, b)
    pids = np.arange(32)
    np.testing.assert_array_equal(x, np.where(pids % 2 == 0, a[:32], original_b[:32]))
    np.testing.assert_array_equal(b[64:128].reshape(32, 2), np.stack([pids, pids + 100], axis=1))


@jit
def _axis_kernel(x_ptr, CASE: tl.constexpr):
    offs = tl.arange(0, 16)
    if CASE == "duplicate":
        t = tl.expand_dims(offs, (0, -3))
    else:
        t = tl.squeeze(tl.expand_dims(offs, 1), -3)
    tl.store(x_ptr + tl.reshape(t, [16]), 1)


@pytest.mark.parametrize("case, text", [("duplicate", "duplicate axes, normalized axes = [0, 0]"),
                                        ("squeeze", "invalid axis -3. Expected -2 <= axis < 2")])
def test_axis_errors_say_what_triton_says(case, text):
    with pytest.raises(CompilationError) as info:
        _axis_kernel[(1,)](np.zeros(16, np.int32), CASE=case)
    assert text in str(info.value.__cause__)
