"""jit.isel: the ops a GPU merges into another instruction are found, and the profiler counts them once."""

import numpy as np
import pytest

import dsl as tl
from dsl.ir import parse_function
from dsl.ir.core import uses
from jit import isel, jit, launch
from jit.launcher import model_launch


@jit
def mix_kernel(x_ptr, y_ptr, z_ptr, out_ptr, n, SAME_PAIR: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    y = tl.load(y_ptr + offs, mask=mask)
    z = tl.load(z_ptr + offs, mask=mask)
    hi = tl.umulhi(x, y)
    lo = x * y if SAME_PAIR else x * z  # the low half of the same product, or another product
    tl.store(out_ptr + offs, hi ^ lo ^ z ^ x, mask=mask)  # three xors: two LOP3s of three inputs


def _inputs(rng, n):
    return [rng.integers(1, 2**32, n, dtype=np.uint64).astype(np.uint32) for _ in range(3)]


def _function(same_pair: bool, n: int = 1000):
    x, y, z = _inputs(np.random.default_rng(0), n)
    out = np.empty_like(x)
    bound = launch.bind(mix_kernel, (x, y, z, out, n), {"SAME_PAIR": same_pair, "BLOCK": 128}, (8,))
    return parse_function(bound.compiled().asm["ir"])


def _merged(func) -> list[str]:
    return sorted(op.name for op in isel.merged_ops(func.body, uses(func.body)))


def test_a_multiply_beside_its_umulhi_and_a_xor_feeding_a_xor_merge():
    # ((hi ^ lo) ^ z) ^ x: the first xor merges into the second (one LOP3); the third starts a new LOP3
    assert _merged(_function(same_pair=True)) == ["arith.mul", "arith.xor"]
    assert _merged(_function(same_pair=False)) == ["arith.xor"]


def test_merged_ops_cost_no_instructions_and_the_outputs_stay_exact(rng):
    n = 1000  # not a multiple of the block
    x, y, z = _inputs(rng, n)
    want = ((x.astype(np.uint64) * y >> 32) ^ (x.astype(np.uint64) * y & 0xFFFFFFFF) ^ z ^ x).astype(np.uint32)
    out = np.empty_like(x)
    mix_kernel[(8,)](x, y, z, out, n, SAME_PAIR=True, BLOCK=128)
    np.testing.assert_array_equal(out, want)
    counts = {}
    for same in (True, False):
        record = model_launch(mix_kernel, (8,), x, y, z, np.empty_like(x), n, SAME_PAIR=same, BLOCK=128, num_warps=4,
                              machine="h200", sample=False)
        counts[same] = record.totals.instructions["integer_multiply"]
    # the same kernel but for the merged multiply: one warp instruction per warp (4 warps x 128 lanes) per program
    assert counts[False] - counts[True] == 8 * 4


@jit
def axpy_kernel(x_ptr, y_ptr, out_ptr, n, a, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = (offs < n) & (offs >= 0)  # a comparison the and alone uses: one ISETP with a predicate input
    x = tl.load(x_ptr + offs, mask=mask).to(tl.float32)
    y = tl.load(y_ptr + offs, mask=mask).to(tl.float32)
    tl.store(out_ptr + offs, (a * x + y).to(out_ptr.dtype.element_ty), mask=mask)  # one FFMA


def test_a_multiply_add_and_a_compare_and_merge_into_one_instruction_each():
    x = np.ones(1024, np.float32)
    bound = launch.bind(axpy_kernel, (x, x, np.empty_like(x), 1000, 2.0), {"BLOCK": 256}, (4,))
    func = parse_function(bound.compiled().asm["ir"])
    assert _merged(func) == ["arith.add", "arith.and"]


def test_fused_ops_keep_their_flops_and_the_outputs_stay_exact(rng):
    from ml_dtypes import bfloat16

    n = 1000  # not a multiple of the block
    x, y = (rng.standard_normal(n).astype(bfloat16) for _ in range(2))
    out = np.empty(n, np.float32)
    axpy_kernel[(4,)](x, y, out, n, 2.5, BLOCK=256)
    want = np.float32(2.5) * x.astype(np.float32) + y.astype(np.float32)
    np.testing.assert_allclose(out, want, rtol=1e-6)
    record = model_launch(axpy_kernel, (4,), x, y, out, n, 2.5, BLOCK=256, num_warps=4, machine="h200", sample=False)
    totals = record.totals
    assert totals.simt_flops == 2 * 4 * 256  # the multiply-add still does two FLOPs per element
    # 256 elements over 4 warps: 2 per lane. Per warp: 2 FFMA and 4 bf16 widenings (shifts); fp32 stays fp32
    assert totals.instructions["fp_mul"] == 4 * 4 * 2 and "fp_add" not in totals.instructions
    assert "conversion" not in totals.instructions


@pytest.mark.parametrize("source, target, want", [
    ("bf16", "fp32", {"integer": 1}), ("fp16", "fp32", {"fp_add": 1}), ("fp32", "bf16", {"conversion": 0.5}),
    ("int64", "int32", {}), ("int32", "int64", {"integer": 1}), ("int32", "fp32", {"conversion": 1}),
])
def test_conversions_lower_as_the_gpu_selects_them(source, target, want):
    from dsl.dtypes import BY_NAME
    from dsl.ir.ops import OP

    assert isel.lowering(OP.ARITH_CAST, BY_NAME[source], BY_NAME[target]) == want


def test_an_fp32_exp_is_five_instructions():
    from dsl.dtypes import float32
    from dsl.ir.ops import OP

    assert isel.lowering(OP.MATH_EXP, float32, float32) == {"special": 1, "fp_mul": 3, "compare_select": 1}
    assert isel.lowering(OP.ARITH_BITCAST, float32, float32) == {}


@jit
def angles_kernel(pos_ptr, out_ptr, n, theta, BLOCK: tl.constexpr):
    """A rotary embedding's angles in fp64, as kernels/rope.py forms them: pos * theta ** (-i / BLOCK), then sin."""
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    pos = tl.load(pos_ptr + offs, mask=mask, other=0).to(tl.float64)
    freq = tl.exp2(-(offs % BLOCK).to(tl.float64) / BLOCK * tl.log2(theta.to(tl.float64)))
    tl.store(out_ptr + offs, tl.sin(pos * freq).to(tl.float32), mask=mask)


def test_fp64_math_runs_on_its_own_pipe_as_software_routines(rng):
    """fp64 arithmetic is one instruction of the 64-lane fp64 pipe; fp64 exp2 and sin, fp32 log2 and sin, the
    lengths benchmarks/gpu/math_functions.py measured on the H200; the outputs stay exact."""
    from dsl.dtypes import float32, float64
    from dsl.ir.ops import OP
    from simulator.specs import get_spec

    assert isel.lowering(OP.ARITH_MUL, float64, float64) == {"fp64": 1}
    assert isel.lowering(OP.MATH_EXP2, float64, float64) == {"fp64": 20}
    assert isel.lowering(OP.MATH_SIN, float32, float32) == {"fp_fma": 37}
    assert isel.lowering(OP.MATH_LOG2, float32, float32) == {"fp_fma": 34}
    assert get_spec("h200").simt_lanes_per_clk["fp64"] == 64
    n = 1000  # not a multiple of the block
    pos = rng.integers(0, 8192, n).astype(np.int32)
    out = np.empty(n, np.float32)
    angles_kernel[(4,)](pos, out, n, 10000.0, BLOCK=256)
    i = np.arange(n) % 256
    want = np.sin(pos * np.exp2(-i / 256 * np.log2(10000.0)))
    np.testing.assert_allclose(out, want.astype(np.float32), rtol=1e-5, atol=1e-6)
    record = model_launch(angles_kernel, (4,), pos, out, n, 10000.0, BLOCK=256, num_warps=4, machine="h200",
                          sample=False)
    # 256 elements over 4 warps: 2 per lane; each warp issues exp2's 20 and sin's 36 fp64 instructions per element
    assert record.totals.instructions["fp64"] >= 4 * 4 * 2 * (20 + 36)


@jit
def divide_kernel(x_ptr, out_ptr, n, d, RUNTIME: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=1)
    q = x // d if RUNTIME else x // 7
    tl.store(out_ptr + offs, q + x % 8, mask=mask)


def test_integer_division_is_counted_as_the_gpu_expands_it(rng):
    """A runtime divisor costs a multiply-high, a multiply-back and corrections (13 instructions an element on the
    H200, simulator/data/h200_int_ops.json), a constant one a multiply-high and shifts; the quotients stay exact."""
    from dsl.dtypes import int32, int64
    from dsl.ir.ops import OP

    assert sum(isel.lowering(OP.ARITH_DIV, int32, int32, "runtime").values()) == 13
    assert sum(isel.lowering(OP.ARITH_REM, int32, int32, "after_division").values()) == 4
    assert sum(isel.lowering(OP.ARITH_DIV, int64, int64, "runtime").values()) == 18
    assert isel.lowering(OP.ARITH_REM, int32, int32, "power_of_two") == {"integer": 3}
    n = 1000  # not a multiple of the block
    x = rng.integers(-10**6, 10**6, n).astype(np.int32)
    counts = {}
    for runtime in (True, False):
        out = np.empty(n, np.int32)
        divide_kernel[(4,)](x, out, n, 7, RUNTIME=runtime, BLOCK=256)
        want = np.trunc(x / 7).astype(np.int32) + np.fmod(x, 8).astype(np.int32)
        np.testing.assert_array_equal(out, want)
        record = model_launch(divide_kernel, (4,), x, out, n, 7, RUNTIME=runtime, BLOCK=256, num_warps=4,
                              machine="h200", sample=False)
        counts[runtime] = record.totals.instructions.get("integer", 0)
    # 4 programs x 4 warps x 2 elements a lane: 7 more integer-pipe instructions an element by a runtime divisor
    assert counts[True] - counts[False] == 4 * 4 * 2 * 7
