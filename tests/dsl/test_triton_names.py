"""The triton.language names of issue 15 added last: type names, tl.const, target_info, expect_zero,
bitonic_merge and the int-argument range check."""

import numpy as np
import pytest

import dsl as tl
from dsl.errors import CompilationError
from jit import jit


def _bitonic_merge_reference(rows: np.ndarray, descending: bool) -> np.ndarray:
    """The merge network in numpy: half-cleaner stages of distance width/2, width/4, ..., 1."""
    out = rows.copy()
    width = out.shape[-1]
    distance = width // 2
    while distance:
        for start in range(width):
            if start & distance:
                continue
            a, b = out[:, start].copy(), out[:, start + distance].copy()
            swap = a < b if descending else a > b
            out[:, start] = np.where(swap, b, a)
            out[:, start + distance] = np.where(swap, a, b)
        distance //= 2
    return out


@jit
def _bitonic_kernel(x_ptr, out_ptr, ROWS: tl.constexpr, WIDTH: tl.constexpr, DESCENDING: tl.constexpr):
    offs = tl.arange(0, ROWS)[:, None] * WIDTH + tl.arange(0, WIDTH)[None, :]
    x = tl.load(x_ptr + offs)
    tl.store(out_ptr + offs, tl.bitonic_merge(x, descending=DESCENDING))


@pytest.mark.parametrize("dtype", ["float32", "int32", "float16"])
@pytest.mark.parametrize("descending", [False, True])
@pytest.mark.parametrize("width", [2, 16, 64])
def test_bitonic_merge_sorts_bitonic_rows_as_the_network_does(dtype, descending, width):
    rng = np.random.default_rng(width * 7 + descending)
    rows = 8
    up = np.sort(rng.standard_normal((rows, width // 2)) * 50, axis=1)
    down = -np.sort(-rng.standard_normal((rows, width // 2)) * 50, axis=1)
    bitonic = np.concatenate([up, down], axis=1).astype(dtype)
    out = np.zeros_like(bitonic)
    _bitonic_kernel[(1,)](bitonic, out, ROWS=rows, WIDTH=width, DESCENDING=descending)
    expected = np.sort(bitonic, axis=1)
    np.testing.assert_array_equal(out, expected[:, ::-1] if descending else expected)
    arbitrary = (rng.standard_normal((rows, width)) * 50).astype(dtype)  # not bitonic: the network's own result
    _bitonic_kernel[(1,)](arbitrary, out, ROWS=rows, WIDTH=width, DESCENDING=descending)
    np.testing.assert_array_equal(out, _bitonic_merge_reference(arbitrary, descending))


@jit
def _const_copy(src: tl.const, dst, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(dst + offs, tl.load(src + offs, mask=offs < n) * 2, mask=offs < n)


@jit
def _const_store(src: tl.const, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    p = src + offs
    tl.store(p, 1.0, mask=offs < n)


def test_const_pointer_loads_and_refuses_stores_at_the_line():
    x = np.random.default_rng(3).standard_normal(100).astype(np.float32)
    out = np.zeros_like(x)
    _const_copy[(2,)](x, out, 100, BLOCK=64)
    np.testing.assert_array_equal(out, x * 2)
    with pytest.raises(CompilationError, match="Cannot store to a constant pointer") as info:
        _const_store[(1,)](x, 100, BLOCK=64)
    assert "tl.store(p, 1.0" in str(info.value)


@jit
def _types_kernel(x_ptr, out_ptr, BLOCK: tl.constexpr):
    x = tl.load(x_ptr + tl.arange(0, BLOCK))
    tl.static_assert(x.type == tl.block_type(tl.float32, [BLOCK]))
    tl.static_assert(isinstance(x.type, tl.block_type))
    tl.static_assert(tl.target_info.is_cuda() and tl.target_info.cuda_capability_geq(9, 0))
    tl.static_assert(not tl.target_info.cuda_capability_geq(10, 0) and not tl.target_info.is_hip())
    y = tl.expect_zero(x, x < -1e30)
    tl.store(out_ptr + tl.arange(0, BLOCK), y + 1)


def test_type_names_target_info_and_expect_zero():
    x = np.random.default_rng(4).standard_normal(32).astype(np.float32)
    out = np.zeros_like(x)
    _types_kernel[(1,)](x, out, BLOCK=32)
    np.testing.assert_array_equal(out, x + 1)
    assert tl.tuple_type([tl.int32, tl.float32]) == tl.tuple_type([tl.int32, tl.float32])
    assert tl.constexpr_type(3) == tl.constexpr_type(3) != tl.constexpr_type(4)
    assert str(tl.void) == "void" or tl.void.name == "void"


@jit
def _int_kernel(out_ptr, v):
    tl.store(out_ptr, v)


@pytest.mark.parametrize("value", [-2**63 - 1, 2**64, -2**70])
def test_int_argument_outside_64_bits_is_an_overflow_error(value):
    with pytest.raises(OverflowError, match=r"_int_kernel: argument v="):
        _int_kernel[(1,)](np.zeros(1, np.int64), value)


def test_int_argument_at_the_64_bit_limits_is_passed():
    out = np.zeros(1, np.int64)
    _int_kernel[(1,)](out, -2**63)
    assert out[0] == -2**63
    out_u = np.zeros(1, np.uint64)
    _int_kernel[(1,)](out_u, 2**64 - 1)
    assert out_u[0] == 2**64 - 1


# -- tl.tuple, tl.slice, tl.standard, tl.tensor_descriptor_type


@jit
def _scale_pair(pair, factor):
    """Takes a tl.tuple and returns a new one (tuples pass into and out of @jit functions)."""
    a, b = pair
    return tl.tuple([a * factor, b + factor])


@jit
def _tuple_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    pair = tl.tuple((tl.load(x_ptr + offs, mask=mask), tl.load(y_ptr + offs, mask=mask)))
    tl.static_assert(len(pair) == 2)
    tl.static_assert(pair.type == tl.tuple_type([tl.block_type(tl.float32, [BLOCK])] * 2))
    tl.static_assert(isinstance(pair[0:1], tl.tuple) and len(pair[0:1]) == 1)
    scaled = _scale_pair(pair, 3.0)
    total = tl.zeros([BLOCK], tl.float32)
    for v in scaled + tl.tuple([pair[1]]):
        total += v
    tl.store(out_ptr + offs, total - scaled[0] * pair[1], mask=mask)


def test_tuple_is_built_indexed_iterated_passed_and_returned(rng):
    n = 100
    x, y = (rng.standard_normal(n).astype(np.float32) for _ in range(2))
    out = np.zeros(n, np.float32)
    _tuple_kernel[(triton_cdiv(n, 32),)](x, y, out, n, BLOCK=32)
    expected = x.astype(np.float64) * 3 + (y + 3) + y - (x * 3) * y
    np.testing.assert_allclose(out, expected, rtol=1e-5, atol=1e-5)


def test_tuple_type_equality_and_fields_as_triton():
    t = tl.tuple([1, 2.0, tl.int32])
    assert t == [1, 2.0, tl.int32] and t == (1, 2.0, tl.int32) and t != [1, 2.0]
    assert isinstance(t, tuple) and len(t) == 3 and t[-1] is tl.int32 and list(t) == t.values
    assert t.type == tl.tuple_type([tl.constexpr_type(1), tl.constexpr_type(2.0), tl.constexpr_type(tl.int32)])
    assert hash(t) == hash((1, 2.0, tl.int32))
    assert type(t[1:]) is tl.tuple and t[1:] == [2.0, tl.int32]
    assert type(t + (5,)) is tl.tuple and (5,) + t == [5, 1, 2.0, tl.int32]
    named = tl.tuple([7, 8], type=tl.tuple_type([tl.constexpr_type(7), tl.constexpr_type(8)], ["lo", "hi"]))
    assert (named.lo, named.hi) == (7, 8)
    with pytest.raises(AttributeError, match="no attribute or field 'mid'"):
        _ = named.mid
    with pytest.raises(TypeError, match="cannot infer the type of element 0"):
        _ = tl.tuple([object()]).type


@jit
def _slice_kernel(x_ptr, out_ptr, M: tl.constexpr, N: tl.constexpr):
    full = tl.slice(None, None, None)
    rows = tl.arange(0, M)[full, None]
    cols = tl.arange(0, N)[None, full]
    tl.static_assert(isinstance(full, tl.slice))
    tl.store(out_ptr + rows * N + cols, tl.load(x_ptr + rows * N + cols) * 2)


def test_slice_indexes_tensors_as_a_colon_does(rng):
    x = rng.standard_normal((8, 16)).astype(np.float32)
    out = np.zeros_like(x)
    _slice_kernel[(1,)](x, out, M=8, N=16)
    np.testing.assert_array_equal(out, x * 2)
    assert tl.slice(1, 5, 2) == slice(1, 5, 2) and isinstance(slice(3), tl.slice)
    assert tl.tuple([4, 5, 6, 7])[tl.slice(1, None, 2)] == [5, 7]


@jit
def _standard_kernel(x_ptr, sum_ptr, max_ptr, argmax_ptr, soft_ptr, flip_ptr, sorted_ptr, n,
                     ROWS: tl.constexpr, BLOCK: tl.constexpr):
    rows = tl.arange(0, ROWS)[:, None]
    cols = tl.arange(0, BLOCK)[None, :]
    mask = (cols < n) & (rows < ROWS)
    x = tl.load(x_ptr + rows * n + cols, mask=mask, other=float("-inf"))
    tl.store(sum_ptr + tl.arange(0, ROWS), tl.standard.sum(tl.where(mask, x, 0.0), 1))
    tl.store(max_ptr + tl.arange(0, ROWS), tl.standard.max(x, 1))
    tl.store(argmax_ptr + tl.arange(0, ROWS), tl.standard.argmax(x, 1))
    tl.store(soft_ptr + rows * n + cols, tl.standard.softmax(x, 1), mask=mask)
    tl.store(flip_ptr + rows * BLOCK + cols, tl.standard.flip(x, 1))
    tl.store(sorted_ptr + rows * 4 + tl.arange(0, 4)[None, :], tl.standard.sort_impl(x, 4, None, 1))
    tl.static_assert(tl.standard.cdiv(BLOCK, 5) == 7 and tl.standard._log2(BLOCK) == 5)
    tl.static_assert(tl.standard._is_power_of_two(BLOCK) and not tl.standard._is_power_of_two(BLOCK + 1))


def test_standard_module_functions_in_a_kernel(rng):
    rows, n, block = 4, 27, 32
    x = rng.standard_normal((rows, n)).astype(np.float32)
    outs = [np.zeros(rows, np.float32), np.zeros(rows, np.float32), np.zeros(rows, np.int32),
            np.zeros((rows, n), np.float32), np.zeros((rows, block), np.float32), np.zeros((rows, 4), np.float32)]
    _standard_kernel[(1,)](x, *outs, n, ROWS=rows, BLOCK=block)
    total, largest, where, soft, flipped, top4 = outs
    np.testing.assert_allclose(total, x.sum(1, dtype=np.float64), rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(largest, x.max(1))
    np.testing.assert_array_equal(where, x.argmax(1))
    e = np.exp(x.astype(np.float64) - x.max(1, keepdims=True))
    np.testing.assert_allclose(soft, e / e.sum(1, keepdims=True), rtol=1e-5, atol=1e-6)
    padded = np.concatenate([x, np.full((rows, block - n), -np.inf, np.float32)], axis=1)
    np.testing.assert_array_equal(flipped, padded[:, ::-1])
    np.testing.assert_array_equal(top4, -np.sort(-x, axis=1)[:, :4])
    assert tl.standard.sum is tl.sum and tl.standard.zeros_like is tl.zeros_like
    assert tl.standard.swizzle2d is tl.swizzle2d and tl.standard.interleave is tl.interleave


@jit
def _descriptor_kernel(x_ptr, out_ptr, M, N, BM: tl.constexpr, BN: tl.constexpr):
    desc = tl.make_tensor_descriptor(x_ptr, [M, N], [N, 1], [BM, BN])
    tl.static_assert(isinstance(desc.type, tl.tensor_descriptor_type))
    tl.static_assert(desc.type.block_type == tl.block_type(tl.float32, [BM, BN]))
    tl.static_assert(len(desc.type.shape_type) == 2 and desc.type.shape_type == desc.type.strides_type)
    tl.static_assert(desc.type.shape_type[1].dtype == tl.int64 and desc.type.shape_type[1].shape == ())
    tl.static_assert(desc.type == tl.tensor_descriptor_type(desc.type.block_type, desc.type.shape_type,
                                                            desc.type.strides_type))
    tl.static_assert(desc.type != tl.tensor_descriptor_type(tl.block_type(tl.float32, [BM, BN * 2]),
                                                            desc.type.shape_type, desc.type.strides_type))
    block = desc.load([tl.program_id(0) * BM, 0])
    offs = (tl.program_id(0) * BM + tl.arange(0, BM))[:, None] * BN + tl.arange(0, BN)[None, :]
    tl.store(out_ptr + offs, block + 1)


def test_tensor_descriptor_type_of_a_descriptor(rng):
    m, n = 13, 8
    x = rng.standard_normal((m, n)).astype(np.float32)
    out = np.zeros((16, n), np.float32)
    _descriptor_kernel[(2,)](x, out, m, n, BM=8, BN=8)
    expected = np.zeros((16, n), np.float32)
    expected[:m] = x
    np.testing.assert_array_equal(out, expected + 1)


def triton_cdiv(a: int, b: int) -> int:
    return -(-a // b)
