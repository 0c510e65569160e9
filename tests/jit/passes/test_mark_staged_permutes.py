"""A transpose that only feeds tl.dot operands is a view of the staged tile; one that is stored is a layout change."""

import numpy as np

import dsl as tl
from dsl.frontend import compile_kernel
from jit import jit
from jit.launcher import model_launch
from jit.passes import run_passes


@jit
def scores_kernel(q_ptr, k_ptr, s_ptr, N: tl.constexpr, D: tl.constexpr, CAST: tl.constexpr,
                  TRANS: tl.constexpr = True):
    rows = tl.arange(0, N)
    cols = tl.arange(0, D)
    q = tl.load(q_ptr + rows[:, None] * D + cols[None, :])
    if TRANS:
        kt = tl.trans(tl.load(k_ptr + rows[:, None] * D + cols[None, :]))
    else:  # the same [D, N] operand read straight from k's rows
        kt = tl.load(k_ptr + rows[None, :] * D + cols[:, None])
    if CAST:  # a cast between the transpose and the dot: still only a dot operand
        kt = kt.to(tl.float32).to(tl.float16)
    tl.store(s_ptr + rows[:, None] * N + rows[None, :], tl.dot(q, kt))


@jit
def transpose_kernel(x_ptr, y_ptr, N: tl.constexpr, KEEP: tl.constexpr):
    rows = tl.arange(0, N)
    tile = tl.load(x_ptr + rows[:, None] * N + rows[None, :])
    t = tl.trans(tile)
    if KEEP:  # a dot operand that is stored as well: the transpose happens in registers
        tl.store(y_ptr + N * N + rows[:, None] * N + rows[None, :], tl.dot(tile, t).to(tl.float16))
    tl.store(y_ptr + rows[:, None] * N + rows[None, :], t)


def _staged(jit_fn, args, constexprs):
    signature, _, _ = jit_fn.bind(tuple(args), dict(constexprs))
    func = compile_kernel(jit_fn, signature)
    run_passes(func, num_warps=4)
    return [bool(op.attrs.get("staged")) for op in func.walk() if op.name == "tile.permute"]


def test_only_a_transpose_that_feeds_dot_operands_alone_is_staged():
    q = np.zeros((32, 64), np.float16)
    s = np.zeros((32, 32), np.float32)
    assert _staged(scores_kernel, (q, q, s), {"N": 32, "D": 64, "CAST": False}) == [True]
    assert _staged(scores_kernel, (q, q, s), {"N": 32, "D": 64, "CAST": True}) == [True]
    x = np.zeros((32, 32), np.float16)
    y = np.zeros(2 * 32 * 32, np.float16)
    assert _staged(transpose_kernel, (x, y), {"N": 32, "KEEP": False}) == [False]
    assert _staged(transpose_kernel, (x, y), {"N": 32, "KEEP": True}) == [False]


def test_a_staged_transpose_moves_no_shared_memory_of_its_own(rng):
    # attention's q @ k^T: the dot stages q and k in shared memory; the transpose of k is how the MMAs read the
    # staged tile, so the launch moves what it moves when the [D, N] operand is loaded as such, and nothing
    # crosses warps
    q = rng.standard_normal((32, 64)).astype(np.float16)
    k = rng.standard_normal((32, 64)).astype(np.float16)
    traffic = []
    for trans in (True, False):
        s = np.empty((32, 32), np.float32)
        record = model_launch(scores_kernel, (1,), q, k, s, N=32, D=64, CAST=False, TRANS=trans, num_warps=4,
                              machine="h200")
        np.testing.assert_allclose(s, q.astype(np.float32) @ k.astype(np.float32).T, rtol=2e-3, atol=2e-3)
        assert record.totals.exchange_wavefronts == 0 and record.totals.exchanges == 0
        traffic.append((record.totals.shared_wavefronts, record.totals.shared_bytes,
                        record.totals.shared_bytes_per_program))
    assert traffic[0] == traffic[1] and traffic[0][0] > 0
