"""Triton's compile-time checks of tensor-descriptor block shapes (its texts, its order, chained through
__cause__) and a one-element block as an `if` condition (unsplatted with Triton's warning)."""

import re

import numpy as np
import pytest

import dsl as tl
from dsl.errors import CompilationError
from jit import jit


@jit
def descriptor_kernel(ptr, out, BM: tl.constexpr, BN: tl.constexpr, LAST_STRIDE: tl.constexpr,
                      PADDING: tl.constexpr, RANK: tl.constexpr):
    if RANK == 2:
        desc = tl.make_tensor_descriptor(ptr, [12, 40], [40, LAST_STRIDE], [BM, BN], padding_option=PADDING)
    elif RANK == 6:
        desc = tl.make_tensor_descriptor(ptr, [1, 1, 1, 1, 12, 40], [1, 1, 1, 1, 40, 1], [1, 1, 1, 1, BM, BN])
    else:  # one stride too few
        desc = tl.make_tensor_descriptor(ptr, [12, 40], [1], [BM, BN])
    block = desc.load([0, 0])
    rows = tl.arange(0, BM)[:, None]
    cols = tl.arange(0, BN)[None, :]
    tl.store(out + rows * BN + cols, block)


def _launch(dtype, bm, bn, last_stride=1, padding="zero", rank=2):
    x = np.arange(12 * 40).reshape(12, 40).astype(dtype)
    out = np.zeros((bm, bn), dtype)
    descriptor_kernel[(1,)](x, out, bm, bn, last_stride, padding, rank)
    return x, out


ROW = "Descriptor block shape must have at least 16 bytes in the last dimension, but got "


@pytest.mark.parametrize("dtype, bm, bn, message", [
    (np.int32, 1, 2, ROW + "2 * 4 = 8 bytes"),
    (np.int16, 8, 4, ROW + "4 * 2 = 8 bytes"),
    (np.float64, 4, 1, ROW + "1 * 8 = 8 bytes"),
    (np.float32, 3, 8, "Shape element 0 must be a power of 2"),
])
def test_bad_block_shapes_raise_tritons_error_as_the_cause(dtype, bm, bn, message):
    with pytest.raises(CompilationError) as info:
        _launch(dtype, bm, bn)
    assert isinstance(info.value.__cause__, ValueError)
    assert str(info.value.__cause__) == message
    assert "make_tensor_descriptor" in str(info.value)  # the error shows the kernel's line


@pytest.mark.parametrize("kwargs, message", [
    ({"last_stride": 2}, "Tensor descriptor last dim must be 1 but got 2"),
    ({"rank": 6}, "Expected 1 <= ndim <= 5 but got 6 dimensions"),
    ({"rank": 0}, "Expected 2 strides but got 1"),
    ({"padding": "nan"}, "Padding option `nan` is not supported for integer blocks"),
])
def test_other_descriptor_rules(kwargs, message):
    with pytest.raises(CompilationError, match=re.escape(message)):
        _launch(np.int32, 4, 8, **kwargs)


def test_sixteen_byte_rows_pass_and_load_the_block(rng):
    x, out = _launch(np.int16, 4, 8)  # 8 * 2 = 16 bytes: the smallest legal row
    np.testing.assert_array_equal(out, x[:4, :8])
    x, out = _launch(np.float32, 16, 64)  # past the 12 x 40 tensor: zero padding
    expected = np.zeros((16, 64), np.float32)
    expected[:12, :40] = x
    np.testing.assert_array_equal(out, expected)


@jit
def unsplat_kernel(x, EXPLICIT: tl.constexpr):
    condition = tl.load(x + tl.arange(0, 1)) > 42  # a one-element block
    if EXPLICIT:
        condition = condition.item()
    if condition:
        tl.store(x, -tl.load(x))


@pytest.mark.filterwarnings("ignore:If conditional called with multidimensional Tensor")
@pytest.mark.parametrize("interpret", [False, True])
def test_a_one_element_block_works_as_an_if_condition(rng, interpret):
    for value in rng.integers(0, 85, 6).astype(np.int32):
        for explicit in (False, True):
            x = np.array([value], np.int32)
            unsplat_kernel[(1,)](x, explicit, interpret=interpret)
            assert x[0] == (-value if value > 42 else value)


def test_the_implicit_unsplat_warns_at_the_kernels_line(tmp_path, monkeypatch):
    monkeypatch.setenv("WAVETILE_CACHE_DIR", str(tmp_path))  # the warning comes with compiling, not a cache hit

    @jit
    def fresh(x):  # a new function: compiled (and so warned about) here
        flag = tl.load(x + tl.arange(0, 1)) != 0
        if flag:
            tl.store(x, 7)

    x = np.ones(1, np.int32)
    with pytest.warns(UserWarning, match=r'please use "if \(flag\)\.item\(\)" instead') as record:
        fresh[(1,)](x)
    assert x[0] == 7
    assert record[0].filename == __file__


@jit
def wide_condition_kernel(x):
    if tl.load(x + tl.arange(0, 2)) > 0:
        tl.store(x, 0)


def test_a_wider_block_as_a_condition_is_still_an_error():
    with pytest.raises(CompilationError, match="more than one element is ambiguous"):
        wide_condition_kernel[(1,)](np.ones(2, np.int32))


@jit
def descriptor_use_kernel(ptr, CASE: tl.constexpr):
    desc = tl.make_tensor_descriptor(ptr, [16, 16], [16, 1], [4, 8])
    if CASE == 0:
        desc.load([0])
    elif CASE == 1:
        desc.store([0, 0], tl.zeros([8, 4], dtype=tl.int32))
    else:
        desc.store([0, 0], 5)


@pytest.mark.parametrize("case, message", [
    (0, "expected 2 offsets, but got 1"),
    (1, "descriptor store of a [8, 4] value into a [4, 8] block: the value must have the block's shape"),
    (2, "descriptor store of a [] value into a [4, 8] block"),
])
def test_descriptor_loads_and_stores_check_offsets_and_value_shape(case, message):
    with pytest.raises(CompilationError, match=re.escape(message)):
        descriptor_use_kernel[(1,)](np.zeros((16, 16), np.int32), CASE=case)
