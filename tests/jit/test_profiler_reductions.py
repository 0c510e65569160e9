"""How the profiler counts a reduction's traffic between warps."""

import numpy as np
import pytest

import dsl as tl
from jit import jit
from jit.launcher import model_launch


@jit
def column_sum_kernel(x_ptr, out_ptr, ROWS: tl.constexpr, COLS: tl.constexpr, LOADED: tl.constexpr):
    rows = tl.arange(0, ROWS)[:, None]
    cols = tl.arange(0, COLS)[None, :]
    if LOADED:
        tile = tl.load(x_ptr + rows * COLS + cols)
    else:
        tile = (rows * COLS + cols).to(tl.float32)
    tl.store(out_ptr + tl.arange(0, COLS), tl.sum(tile, axis=0))


@pytest.mark.parametrize("loaded, exchanges", [(True, 1), (False, 0)])
def test_a_reduction_crosses_the_warps_of_the_layout_it_inherits_from_its_load(loaded, exchanges):
    # a [4, 256] fp32 tile loaded 4 elements a thread on 8 warps lies as Triton lays it: 2 warps along the columns,
    # 4 along the rows, so its column sums cross warps through shared memory; computed in registers (one element a
    # thread) its 8 warps all lie along the columns and the sums stay in each thread
    x = np.random.default_rng(4).standard_normal((4, 256)).astype(np.float32)
    out = np.empty(256, np.float32)
    record = model_launch(column_sum_kernel, (1,), x, out, ROWS=4, COLS=256, LOADED=loaded, num_warps=8,
                          machine="h200")
    expected = x.sum(axis=0) if loaded else (np.arange(4)[:, None] * 256 + np.arange(256)).sum(axis=0)
    np.testing.assert_allclose(out, expected, rtol=1e-5)
    # each thread ends up with 4 of the column sums (its 4 columns): each warp passes them one by one
    assert record.totals.exchanges == exchanges * 8 * 4


@jit
def row_sum_kernel(x_ptr, out_ptr, ROWS: tl.constexpr, COLS: tl.constexpr):
    rows = tl.program_id(0) * ROWS + tl.arange(0, ROWS)
    tile = tl.load(x_ptr + rows[:, None] * COLS + tl.arange(0, COLS)[None, :])
    tl.store(out_ptr + rows, tl.sum(tile, axis=1))


@pytest.mark.parametrize("rows", [1, 2, 4])
def test_a_program_of_several_rows_exchanges_each_row_s_sum_across_its_warps(rows):
    # 1,024 fp32 columns on 8 warps: every warp holds part of every row, so each row's sum crosses all 8 warps,
    # and a program of `rows` rows passes that many sums through shared memory
    x = np.random.default_rng(5).standard_normal((8, 1024)).astype(np.float32)
    out = np.empty(8, np.float32)
    record = model_launch(row_sum_kernel, (8 // rows,), x, out, ROWS=rows, COLS=1024, num_warps=8, machine="h200")
    np.testing.assert_allclose(out, x.sum(axis=1), rtol=1e-5)
    assert record.totals.exchanges == 8 * rows * (8 // rows)  # per warp, per row, per program


@jit
def value_sum_kernel(v_ptr, out_ptr, n_rows, ROWS: tl.constexpr, D: tl.constexpr):
    rows = tl.arange(0, ROWS)
    v = tl.load(v_ptr + rows[:, None] * D + tl.arange(0, D)[None, :], mask=(rows < n_rows)[:, None], other=0.0)
    tl.store(out_ptr + tl.arange(0, D), tl.sum(v.to(tl.float32), axis=0))


@pytest.mark.parametrize("num_warps, conflict", [(8, 16), (4, 16), (2, 8)])
def test_a_column_sum_exchanges_its_partials_the_way_triton_lays_them_out(num_warps, conflict):
    # a paged decode's sum of p * v down a [16, 128] fp16 tile: 8 elements a thread along the row, 16 lanes a row,
    # 2 rows a warp, the warps down the rows. Triton keeps the partials with the warp axis fastest (word w + W * d),
    # so lane l's store of its j-th column, d = 8 l + j, steps 8 W words a lane: with W >= 4 warps all 16 writing
    # lanes hit one bank, with 2 warps two banks (8 each). 8 stores and 8 loads back a warp, each that many
    # wavefronts, and the fold of the W x 128 words in between (thread t loads word t and its group's first lane
    # stores), one wavefront each, 4 rounds a warp.
    rng = np.random.default_rng(7)
    v = rng.standard_normal((16, 128)).astype(np.float16)
    out = np.empty(128, np.float32)
    record = model_launch(value_sum_kernel, (1,), v, out, 13, ROWS=16, D=128, num_warps=num_warps, machine="h200")
    np.testing.assert_allclose(out, v[:13].astype(np.float32).sum(axis=0), rtol=1e-5, atol=1e-5)
    rounds = num_warps * 128 // (num_warps * 32)  # W x 128 words over W x 32 threads
    per_warp = 8 * conflict * 2 + 2 * rounds
    assert record.totals.exchange_wavefronts == num_warps * per_warp
    assert record.totals.shared_wavefronts == record.totals.exchange_wavefronts
