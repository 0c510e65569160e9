"""Bounds read off a tile's construction replace passes over its lanes; masks and bounds errors must not change."""

import numpy as np
import pytest

import dsl as tl
from dsl.errors import OutOfBoundsError
from jit import cdiv, jit


@jit
def shifted_copy(x_ptr, out_ptr, n, shift, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK) - shift
    mask = (offs >= 0) & (offs < n)
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) * 2.0, mask=mask)


@jit
def reversed_copy(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    """A negative stride: out[i] = x[n - 1 - i]; the mask compares a product with a negative factor."""
    i = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    j = (n - 1) + i * -1
    tl.store(out_ptr + i, tl.load(x_ptr + j, mask=j >= 0), mask=i < n)


@jit
def wrapping_offsets(x_ptr, out_ptr, step, BLOCK: tl.constexpr):
    """pid * step wraps around int32 for large steps: lanes land far outside x."""
    offs = tl.program_id(0) * step + tl.arange(0, BLOCK)
    tl.store(out_ptr + tl.arange(0, BLOCK), tl.load(x_ptr + offs, mask=offs < 64))


@pytest.mark.parametrize("n, shift", [(1000, 0), (1000, 5), (1024, 0), (77, 3), (5, 0)])
def test_partial_masks_write_only_active_lanes(rng, n, shift):
    x = rng.standard_normal(n).astype(np.float32)
    out = np.full(n + 64, 7.0, np.float32)
    block = 128
    shifted_copy[(cdiv(n + shift, block),)](x, out, n, shift, BLOCK=block)
    np.testing.assert_array_equal(out[:n], x * np.float32(2))
    assert (out[n:] == 7.0).all()


@pytest.mark.parametrize("n", [1, 100, 256, 300])
def test_negative_strides(rng, n):
    x = rng.standard_normal(n).astype(np.float32)
    out = np.full(n + 64, 7.0, np.float32)
    reversed_copy[(cdiv(n, 64),)](x, out, n, BLOCK=64)
    np.testing.assert_array_equal(out[:n], x[::-1])
    assert (out[n:] == 7.0).all()


def test_wrapped_offsets_are_still_caught(rng):
    x = rng.standard_normal(64).astype(np.float32)
    out = np.empty(16, np.float32)
    wrapping_offsets[(1,)](x, out, 2**30, BLOCK=16)  # program 0 reads x[0:16]
    np.testing.assert_array_equal(out, x[:16])
    with pytest.raises(OutOfBoundsError, match="wrapping_offsets"):
        wrapping_offsets[(3,)](x, out, 2**30, BLOCK=16)  # program 2: 2 * 2^30 wraps to -2^31
