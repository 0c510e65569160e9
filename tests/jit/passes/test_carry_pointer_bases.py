"""Loop-carried pointer tiles become scalar bases; addresses, results and bounds errors stay the same."""

import numpy as np
import pytest

import dsl as tl
from dsl.errors import OutOfBoundsError
from dsl.frontend import compile_kernel
from jit import cdiv, jit
from jit.passes import run_passes


@jit
def k_loop_matmul(a_ptr, b_ptr, c_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    rm = tl.program_id(0) * BM + tl.arange(0, BM)
    rn = tl.program_id(1) * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    a_ptrs = a_ptr + rm[:, None] * K + rk[None, :]
    b_ptrs = b_ptr + rk[:, None] * N + rn[None, :]
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, K, BK):
        a = tl.load(a_ptrs, mask=(rm[:, None] < M) & (rk[None, :] < K - k), other=0.0)
        b = tl.load(b_ptrs, mask=(rk[:, None] < K - k) & (rn[None, :] < N), other=0.0)
        acc += tl.dot(a, b, input_precision="ieee")
        a_ptrs += BK
        b_ptrs += BK * N
    tl.store(c_ptr + rm[:, None] * N + rn[None, :], acc, mask=(rm[:, None] < M) & (rn[None, :] < N))


@jit
def walk_then_store(x_ptr, out_ptr, n_steps, BLOCK: tl.constexpr):
    """Sums BLOCK-wide slices, then adds the slice the loop's pointers were left at (used after the loop)."""
    ptrs = x_ptr + tl.arange(0, BLOCK)
    acc = tl.zeros((BLOCK,), tl.float32)
    for _ in range(n_steps):
        acc += tl.load(ptrs)
        ptrs += BLOCK
    tl.store(out_ptr + tl.arange(0, BLOCK), acc + tl.load(ptrs))


@jit
def lane_dependent_step(x_ptr, out_ptr, n_steps, BLOCK: tl.constexpr):
    """Each lane advances by its own stride: not uniform, so the tile stays a tile."""
    lanes = tl.arange(0, BLOCK)
    ptrs = x_ptr + lanes
    acc = tl.zeros((BLOCK,), tl.float32)
    for _ in range(n_steps):
        acc += tl.load(ptrs)
        ptrs += lanes + 1
    tl.store(out_ptr + lanes, acc)


@jit
def k_loop_overrun(a_ptr, out_ptr, K, BK: tl.constexpr):
    """Reads BK-wide slices of a K-long row with no mask on the last slice."""
    ptrs = a_ptr + tl.arange(0, BK)
    acc = tl.zeros((BK,), tl.float32)
    for _ in range(0, K, BK):
        acc += tl.load(ptrs)
        ptrs += BK
    tl.store(out_ptr + tl.arange(0, BK), acc)


def _loop_ir(jit_fn, args, constexprs, model_gpu=False):
    signature, _, _ = jit_fn.bind(tuple(args.values()), dict(constexprs))
    func = compile_kernel(jit_fn, signature)
    run_passes(func, model_gpu=model_gpu)
    return next(op for op in func.walk() if op.name == "scf.for")


@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_matmul_k_loop_matches_numpy_at_odd_sizes(rng, dtype):
    M, N, K = 70, 45, 83
    a = rng.standard_normal((M, K)).astype(dtype)
    b = rng.standard_normal((K, N)).astype(dtype)
    c = np.empty((M, N), np.float32)
    kernel = k_loop_matmul[(cdiv(M, 32), cdiv(N, 32))](a, b, c, M, N, K, BM=32, BN=32, BK=16)
    np.testing.assert_allclose(c, a.astype(np.float64) @ b.astype(np.float64), rtol=1e-5, atol=1e-4)
    loop_ir = kernel.asm["ir"].split("scf.for", 1)[1].split("\n", 1)[0]
    assert "ptr<f" in loop_ir and "xptr<" not in loop_ir  # both pointers carried as scalars


def test_pointers_used_after_the_loop_are_rebuilt(rng):
    x = rng.standard_normal(6 * 16).astype(np.float32)
    out = np.empty(16, np.float32)
    walk_then_store[(1,)](x, out, 5, BLOCK=16)
    expected = np.zeros(16, np.float32)
    for s in range(6):
        expected += x[16 * s:16 * (s + 1)]
    np.testing.assert_array_equal(out, expected)


def test_lane_dependent_steps_keep_the_tile(rng):
    x = rng.standard_normal(200).astype(np.float32)
    out = np.empty(8, np.float32)
    lane_dependent_step[(1,)](x, out, 4, BLOCK=8)
    lanes = np.arange(8)
    np.testing.assert_allclose(out, sum(x[lanes * (1 + s) + s] for s in range(4)), rtol=1e-6)
    loop = _loop_ir(lane_dependent_step, {"x_ptr": x, "out_ptr": out, "n_steps": 4}, {"BLOCK": 8})
    assert [r.type.shape for r in loop.results] == [(8,), (8,)]


def test_gpu_model_keeps_tile_increments():
    a = np.ones((64, 64), np.float32)
    args = {"a_ptr": a, "b_ptr": a, "c_ptr": a, "M": 64, "N": 64, "K": 64}
    tiles = {"BM": 16, "BN": 16, "BK": 16}
    assert all(r.type.shape for r in _loop_ir(k_loop_matmul, args, tiles, model_gpu=True).results)
    assert [r.type.shape for r in _loop_ir(k_loop_matmul, args, tiles).results] == [(16, 16), (), ()]


def test_overrun_in_a_carried_loop_is_caught_with_its_offset(rng):
    a = rng.standard_normal(40).astype(np.float32)
    out = np.empty(16, np.float32)
    with pytest.raises(OutOfBoundsError, match=r"k_loop_overrun.*acc \+= tl.load\(ptrs\).*element offset 40"):
        k_loop_overrun[(1,)](a, out, 40, BK=16)
