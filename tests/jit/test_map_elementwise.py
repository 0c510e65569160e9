"""tl.map_elementwise: a scalar @jit function with its own control flow applied per element (one result or
several, broadcast arguments, pack > 1), against numpy on every executor."""

import re

import numpy as np
import pytest

import dsl as tl
from dsl.errors import CompilationError
from jit import cdiv, jit

EXECUTORS = [False, True, "eager"]


@jit
def selu_scalar(x, alpha):
    if x > 0:
        return x
    else:
        return alpha * (tl.exp(x) - 1)


@jit
def collatz_steps(v):
    """Steps to reach 1: a loop whose trip count differs per element."""
    steps = 0
    while v != 1:
        if v % 2 == 0:
            v = v // 2
        else:
            v = 3 * v + 1
        steps += 1
    return steps, v


@jit
def swap_pairs(a0, a1, b0, b1):
    return a1 + b0, a0 + b1


@jit
def map_kernel(x_ptr, n_ptr, y_ptr, steps_ptr, ones_ptr, pair_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0.0)
    tl.store(y_ptr + offs, tl.map_elementwise(selu_scalar, x, 1.5), mask=mask)
    start = tl.load(n_ptr + offs, mask=mask, other=1)
    steps, last = tl.map_elementwise(collatz_steps, start)
    tl.store(steps_ptr + offs, steps, mask=mask)
    tl.store(ones_ptr + offs, last, mask=mask)
    (pairs,) = tl.map_elementwise(swap_pairs, offs, 100, pack=2)
    tl.store(pair_ptr + offs, pairs, mask=mask)


def _collatz(v: int) -> int:
    steps = 0
    while v != 1:
        v = v // 2 if v % 2 == 0 else 3 * v + 1
        steps += 1
    return steps


@pytest.mark.parametrize("interpret", EXECUTORS)
def test_scalar_functions_run_per_element(rng, interpret):
    n, block = 45, 16
    x = rng.standard_normal(n).astype(np.float32)
    starts = rng.integers(1, 60, n).astype(np.int32)
    y, steps, ones, pairs = (np.zeros(n, dt) for dt in (np.float32, np.int32, np.int32, np.int32))
    map_kernel[(cdiv(n, block),)](x, starts, y, steps, ones, pairs, n, BLOCK=block, interpret=interpret)
    reference = np.where(x > 0, x, 1.5 * (np.exp(x.astype(np.float64)) - 1))
    np.testing.assert_allclose(y, reference, rtol=1e-6, atol=1e-6)
    np.testing.assert_array_equal(steps, [_collatz(int(v)) for v in starts])
    np.testing.assert_array_equal(ones, np.ones(n))
    offs = np.arange(n)
    partner = offs ^ 1  # pack=2: each call sees elements 2k and 2k+1 and returns them swapped, plus 100
    np.testing.assert_array_equal(pairs, partner + 100)


@jit
def dtype_scalar(h, flag):
    if flag:
        return h.to(tl.float32) * 2
    return h.to(tl.float32)


@jit
def mixed_kernel(h_ptr, f_ptr, out_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    rows = tl.load(h_ptr + offs[:, None] * BLOCK + offs[None, :])
    flags = tl.load(f_ptr + offs)[:, None] != 0  # broadcast along the rows
    out = tl.map_elementwise(dtype_scalar, rows, flags)
    tl.static_assert(out.dtype == tl.float32)
    tl.store(out_ptr + offs[:, None] * BLOCK + offs[None, :], out)


@pytest.mark.parametrize("interpret", EXECUTORS)
def test_arguments_broadcast_and_results_take_the_functions_type(rng, interpret):
    block = 8
    h = rng.standard_normal((block, block)).astype(np.float16)
    flags = rng.integers(0, 2, block).astype(np.int32)
    out = np.zeros((block, block), np.float32)
    mixed_kernel[(1,)](h, flags, out, BLOCK=block, interpret=interpret)
    np.testing.assert_array_equal(out, h.astype(np.float32) * np.where(flags[:, None] != 0, 2, 1))


@jit
def bad_pack_kernel(x_ptr, CASE: tl.constexpr):
    x = tl.load(x_ptr + tl.arange(0, 4))
    if CASE == 0:
        tl.map_elementwise(selu_scalar, x, 1.0, pack=3)
    else:
        tl.map_elementwise(swap_pairs, x, x, pack=4)


@pytest.mark.parametrize("case, message", [
    (0, "map_elementwise: pack=3 does not divide the 4 elements of shape [4]"),
    (1, "bad arguments for swap_pairs"),
])
def test_bad_packs_are_compile_errors(case, message):
    with pytest.raises(CompilationError, match=re.escape(message)):
        bad_pack_kernel[(1,)](np.zeros(4, np.float32), CASE=case)
