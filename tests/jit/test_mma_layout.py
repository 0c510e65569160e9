import numpy as np
import pytest

import dsl as tl
from dsl.ir import parse_function
from dsl.ir.ops import OP
from jit import jit, mma_layout
from jit.launch import bind
from jit.launcher import model_launch


@pytest.mark.parametrize("shape, num_warps, warpgroup, chained, warps", [
    ((128, 128), 8, True, False, (8, 1)),  # warpgroup MMAs: along M while M exceeds 16 rows a warp
    ((64, 128), 8, True, False, (4, 2)),  # then along N
    ((256, 64), 4, True, False, (4, 1)),
    ((64, 64), 8, True, True, (8, 1)),  # a dot feeding another: all warps along M, rows or not
    ((32, 64), 8, False, True, (1, 8)),  # warp-level MMAs linked to another dot: the longer dim takes them all
    ((64, 32), 4, False, True, (4, 1)),
    ((32, 32), 4, False, False, (2, 2)),  # a lone warp-level MMA balances 16 x 8 repetitions, M first on ties
    ((16, 64), 4, False, False, (1, 4)),
    ((128, 16), 2, False, False, (2, 1)),
])
def test_warps_per_tile_follows_tritons_choice(shape, num_warps, warpgroup, chained, warps):
    assert mma_layout.warps_per_tile(shape, num_warps, warpgroup, chained) == warps


@jit
def attention_step_kernel(q_ptr, k_ptr, v_ptr, out_ptr, M: tl.constexpr, N: tl.constexpr, D: tl.constexpr):
    """One block of attention: softmax(q @ k^T) @ v, the first product fed to the second dot from registers."""
    m, n, d = tl.arange(0, M), tl.arange(0, N), tl.arange(0, D)
    q = tl.load(q_ptr + m[:, None] * D + d[None, :])
    k = tl.load(k_ptr + n[:, None] * D + d[None, :])
    v = tl.load(v_ptr + n[:, None] * D + d[None, :])
    s = tl.dot(q, tl.trans(k))
    p = tl.exp(s - tl.max(s, 1)[:, None])
    p = p / tl.sum(p, 1)[:, None]
    tl.store(out_ptr + m[:, None] * D + d[None, :], tl.dot(p.to(v.dtype), v))


@jit
def gated_kernel(x_ptr, wg_ptr, wu_ptr, out_ptr, M: tl.constexpr, N: tl.constexpr, K: tl.constexpr):
    """silu(x @ wg) * (x @ wu): two dots that share their A operand and nothing else."""
    m, n, k = tl.arange(0, M), tl.arange(0, N), tl.arange(0, K)
    x = tl.load(x_ptr + m[:, None] * K + k[None, :])
    g = tl.dot(x, tl.load(wg_ptr + k[:, None] * N + n[None, :]))
    u = tl.dot(x, tl.load(wu_ptr + k[:, None] * N + n[None, :]))
    tl.store(out_ptr + m[:, None] * N + n[None, :], g / (1 + tl.exp(-g)) * u)


def _inputs(rows, cols, depth, rng):
    return [rng.standard_normal(shape).astype(np.float16) for shape in ((rows, depth), (cols, depth), (cols, depth))]


def _dots(compiled):
    return [op for op in parse_function(compiled.asm["ir"]).walk() if op.name == OP.TILE_DOT]


def test_chain_flags_tell_a_dot_feeding_another_from_dots_that_only_share_an_operand():
    rng = np.random.default_rng(2)
    q, k, v = _inputs(64, 32, 32, rng)
    attention = bind(attention_step_kernel, (q, k, v, np.empty((64, 32), np.float32)), dict(M=64, N=32, D=32),
                     (1,)).compiled()
    assert [mma_layout.chain_flags(op) for op in _dots(attention)] == [(True, True), (False, True)]
    x, wg, wu = (rng.standard_normal(shape).astype(np.float16) for shape in ((64, 32), (32, 32), (32, 32)))
    gated = bind(gated_kernel, (x, wg, wu, np.empty((64, 32), np.float32)), dict(M=64, N=32, K=32), (1,)).compiled()
    assert [mma_layout.chain_flags(op) for op in _dots(gated)] == [(False, True), (False, True)]


def _tensor_work(rows, num_warps):
    rng = np.random.default_rng(3)
    q, k, v = _inputs(rows, 64, 64, rng)
    out = np.empty((rows, 64), np.float32)
    record = model_launch(attention_step_kernel, (1,), q, k, v, out, M=rows, N=64, D=64, num_warps=num_warps,
                          machine="h200")
    counters = record.totals
    return sum(counters.tensor_tiles.values()), sum(counters.tensor_flops.values()), counters.exchanges


def test_a_chained_dot_on_more_warps_than_its_rows_need_computes_its_tile_twice():
    """Attention's QK^T of 64 rows on 8 warps: Triton puts all 8 along M, two warpgroups of 64 rows each, so both
    compute the same tile (and its softmax) where 4 warps compute it once; the row reductions stay in each warp."""
    issued4, useful4, _ = _tensor_work(64, 4)
    issued8, useful8, exchanges8 = _tensor_work(64, 8)
    assert useful4 == useful8 == issued4
    assert issued8 == pytest.approx(1.5 * useful8)  # QK^T twice, P @ V (its own [4, 2] layout) once
    issued128, useful128, exchanges128 = _tensor_work(128, 8)
    assert issued128 == useful128  # 128 rows on 8 warps: one copy, and P stays in registers for P @ V
    assert exchanges8 > exchanges128  # 64 rows: P crosses from the [8, 1] layout to [4, 2] through shared memory
