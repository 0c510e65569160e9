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
    assert record.totals.exchanges == exchanges * 8  # one exchange a warp
