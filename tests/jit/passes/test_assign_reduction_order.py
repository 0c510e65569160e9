"""Reductions record the GPU's split of their axis; compiled code and interpreter add in that order."""

import numpy as np
import pytest

import dsl as tl
from dsl.frontend import compile_kernel
from jit import jit
from jit.layout import default_layout, reduction_split
from jit.passes import run_passes


@jit
def row_sums(x_ptr, out_ptr, n_cols, R: tl.constexpr, C: tl.constexpr, AXIS: tl.constexpr, COLUMNS: tl.constexpr):
    rows = tl.arange(0, R)[:, None]
    cols = tl.arange(0, C)[None, :]
    mask = cols < n_cols
    if COLUMNS:  # the same tile, read column-major: not contiguous along its last dim
        x = tl.load(x_ptr + cols * R + rows, mask=mask, other=0.0)
    else:
        x = tl.load(x_ptr + rows * C + cols, mask=mask, other=0.0)
    tl.store(out_ptr + tl.arange(0, C if AXIS == 0 else R), tl.sum(x * 3.0, axis=AXIS))


@jit
def strided_rows_sum(x_ptr, out_ptr, stride, C: tl.constexpr):
    cols = tl.arange(0, C)
    tl.store(out_ptr + tl.program_id(0), tl.sum(tl.load(x_ptr + tl.program_id(0) * stride + cols), axis=0))


@jit
def load_sum(x_ptr, out_ptr, N: tl.constexpr):
    tl.store(out_ptr, tl.sum(tl.load(x_ptr + tl.arange(0, N)), axis=0))


@jit
def arange_sum(out_ptr, N: tl.constexpr):
    tl.store(out_ptr, tl.sum(tl.arange(0, N).to(tl.float32) * 0.1, axis=0))


def _splits(jit_fn, args, constexprs, num_warps):
    """The splits the pass records, with the arguments specialised as a launch specialises them."""
    signature, _, runtime = jit_fn.bind(tuple(args.values()), dict(constexprs))
    func = compile_kernel(jit_fn, signature)
    run_passes(func, num_warps=num_warps, divisible=frozenset(jit_fn.divisibility(runtime)))
    return [tuple(op.attrs["split"]) for op in func.walk() if op.name == "tile.reduce"]


@pytest.mark.parametrize("num_warps", [1, 4, 8])
def test_split_follows_the_load_layout(num_warps):
    x, out = np.zeros(64 * 128, np.float32), np.zeros(128, np.float32)
    args = {"x_ptr": x, "out_ptr": out, "n_cols": 96}  # a bound Triton knows is a multiple of 16
    for axis in (0, 1):
        contiguous = default_layout((64, 128), num_warps, 32, 4)  # 16-byte fp32 vectors along the row
        assert _splits(row_sums, args, {"R": 64, "C": 128, "AXIS": axis, "COLUMNS": False}, num_warps) == \
            [reduction_split(contiguous, axis)]
        scattered = default_layout((64, 128), num_warps, 32, 1)
        assert _splits(row_sums, args, {"R": 64, "C": 128, "AXIS": axis, "COLUMNS": True}, num_warps) == \
            [reduction_split(scattered, axis)]
    assert _splits(arange_sum, {"out_ptr": out}, {"N": 512}, num_warps) == \
        [reduction_split(default_layout((512,), num_warps, 32, 1), 0)]
    # rows start 16-byte aligned only when the stride is known to be a multiple of 16 (Triton's specialisation)
    for stride, vector in ((1024, 4), (1000, 1)):
        assert _splits(strided_rows_sum, {"x_ptr": x, "out_ptr": out, "stride": stride}, {"C": 1024}, 4) == \
            [reduction_split(default_layout((1024,), 4, 32, vector), 0)]
    # a mask against a bound not known to be a multiple of 16 narrows each load instruction, not the layout:
    # Triton's coalescing pass reads the pointer alone, so each thread still holds and folds 4 elements in a row
    assert _splits(row_sums, {**args, "n_cols": 100}, {"R": 64, "C": 128, "AXIS": 1, "COLUMNS": False},
                   num_warps) == [reduction_split(contiguous, 1)]
    # a small tile: no more elements per thread than it has (128 over 4 warps of 32: one each)
    assert _splits(load_sum, {"x_ptr": x, "out_ptr": out}, {"N": 128}, 4) == \
        [reduction_split(default_layout((128,), 4, 32, 1), 0)]


@pytest.mark.parametrize("axis, columns, num_warps", [(0, False, 4), (1, False, 2), (1, True, 8), (0, True, 1)])
def test_compiled_and_interpreted_sums_agree_bit_for_bit(rng, axis, columns, num_warps):
    R, C, n_cols = 32, 64, 50
    x = (rng.standard_normal(R * C) * 10.0 ** rng.integers(-3, 4, R * C)).astype(np.float32)
    outs = []
    for interpret in (False, True):
        out = np.full(C if axis == 0 else R, np.nan, np.float32)
        row_sums[(1,)](x, out, n_cols, R=R, C=C, AXIS=axis, COLUMNS=columns, num_warps=num_warps,
                       interpret=interpret)
        outs.append(out)
    np.testing.assert_array_equal(outs[0].view(np.int32), outs[1].view(np.int32))
    tile = x.reshape(C, R).T if columns else x.reshape(R, C)
    reference = np.where(np.arange(C)[None, :] < n_cols, tile.astype(np.float64) * 3, 0).sum(axis=axis)
    np.testing.assert_allclose(outs[0], reference, rtol=1e-5, atol=1e-3 * np.abs(tile).max())


def test_the_layout_s_elements_per_thread_are_recorded_for_the_exchange():
    # jit.shared_model.reduction_exchange lays out the partials from the layout's size_per_thread along the row:
    # 16-byte fp32 vectors when the row is contiguous, one element when it is read column-major
    x, out = np.zeros(64 * 128, np.float32), np.zeros(128, np.float32)
    args = (x, out, 96)
    for columns, vector in ((False, 4), (True, 1)):
        signature, _, runtime = row_sums.bind(args, {"R": 64, "C": 128, "AXIS": 0, "COLUMNS": columns})
        func = compile_kernel(row_sums, signature)
        run_passes(func, num_warps=8, divisible=frozenset(row_sums.divisibility(runtime)))
        assert [op.attrs["size_per_thread"] for op in func.walk() if op.name == "tile.reduce"] == [vector]
