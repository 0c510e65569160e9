"""jit.isel: the ops a GPU merges into another instruction are found, and the profiler counts them once."""

import numpy as np

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
