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
