"""Repeat launches go through cached plans: same kernels, same results and errors as the general path."""

import numpy as np
import pytest

import dsl as tl
from dsl.errors import OutOfBoundsError
from jit import cdiv, jit


@jit
def axpy(x_ptr, y_ptr, out_ptr, a, n, flip, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    y = tl.load(y_ptr + offs, mask=mask)
    y = tl.where(flip, -y, y)
    tl.store(out_ptr + offs, a * tl.load(x_ptr + offs, mask=mask) + y, mask=mask)


@jit
def strided_copy(x_ptr, out_ptr, n, step, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.load(x_ptr + offs * step, mask=offs < n), mask=offs < n)


def run_axpy(rng, n, a=1.5, flip=False, x=None, y=None, **options):
    x = rng.standard_normal(n).astype(np.float32) if x is None else x
    y = rng.standard_normal(n).astype(np.float32) if y is None else y
    out = np.full(n + 8, 7.0, np.float32)
    axpy[lambda meta: (cdiv(meta["n"], meta["BLOCK"]),)](x, y, out, a, n, flip, BLOCK=64, **options)
    expected = np.float32(a) * x[:n] + (-y[:n] if flip else y[:n])
    np.testing.assert_array_equal(out[:n], expected)
    assert (out[n:] == 7.0).all()


def test_repeat_launches_specialise_like_the_general_path(rng):
    axpy.compiled.clear()
    axpy._plans.by_key.clear()
    for n in (100, 100, 1, 1, 64, 64, 77):  # sizes: general, ==1, divisible by 16, odd
        run_axpy(rng, n)
    run_axpy(rng, 100, flip=True)  # a bool argument
    run_axpy(rng, 100, a=2)  # an int where a float was: its own specialisation
    big = rng.standard_normal(40).astype(np.float32)
    run_axpy(rng, 33, x=big[1:34], y=big[2:35])  # views not 16-byte aligned
    run_axpy(rng, 100, num_warps=8)
    kinds = {tuple(str(t) for t in k.signature.values()) for k in axpy.compiled.values()}
    assert len(axpy.compiled) == len(axpy._plans.by_key) >= 6 and len(kinds) >= 3


def test_non_contiguous_arrays_and_bounds_errors_on_the_plan_path(rng):
    x = rng.standard_normal(64).astype(np.float32)
    out = np.empty(16, np.float32)
    for _ in range(2):  # a kernel sees memory from the data pointer on, within the view's byte span
        strided_copy[(1,)](x[::2], out, 16, 1, BLOCK=16)
        np.testing.assert_array_equal(out, x[:16])
    with pytest.raises(OutOfBoundsError, match=r"buffer 'x_ptr' \(63 elements"):
        strided_copy[(1,)](x[::2], out, 16, 5, BLOCK=16)  # offsets up to 75; the span holds 63
    for _ in range(2):  # the second failure comes from the plan: same message
        with pytest.raises(OutOfBoundsError, match=r"strided_copy.*buffer 'x_ptr' \(64 elements"):
            strided_copy[(1,)](x, out, 16, 5, BLOCK=16)


def test_environment_changes_are_seen_between_plan_launches(rng, monkeypatch):
    x = rng.standard_normal(100).astype(np.float32)
    run_axpy(rng, 100, x=x)
    monkeypatch.setenv("WAVETILE_CHECKS", "0")
    run_axpy(rng, 100, x=x)
    assert any(not k.options.checks for k in axpy.compiled.values())
    monkeypatch.setenv("WAVETILE_INTERPRET", "1")
    run_axpy(rng, 100, x=x)  # the interpreter, not a plan
