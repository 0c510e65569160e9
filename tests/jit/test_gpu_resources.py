import numpy as np
import pytest

import dsl as tl
from dsl.ir import parse_function
from jit import gpu_resources, jit
from jit.launch import bind


@jit
def dropout_kernel(x_ptr, out_ptr, n, p, seed, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n, other=0.0)
    keep = tl.rand(seed, offs) > p  # Philox: rounds of integer multiplies and xors on data, not on indices
    tl.store(out_ptr + offs, tl.where(keep, x / (1 - p), 0.0), mask=offs < n)


@jit
def scale_kernel(x_ptr, out_ptr, n, p, seed, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n, other=0.0)
    tl.store(out_ptr + offs, x / (1 - p), mask=offs < n)


@jit
def shuffled_scale_kernel(x_ptr, out_ptr, n, p, seed, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    src = (offs * 7 + seed) % n  # index arithmetic: recomputed where used, never held
    x = tl.load(x_ptr + src, mask=offs < n, other=0.0)
    tl.store(out_ptr + offs, x / (1 - p), mask=offs < n)


def _bytes(kernel, block: int, n: int = 3000) -> int:
    x = np.random.default_rng(0).standard_normal(n).astype(np.float32)
    out = np.empty_like(x)
    compiled = bind(kernel, (x, out, n, 0.25, 7), {"BLOCK": block}, (-(-n // block),)).compiled()
    return gpu_resources.register_bytes(parse_function(compiled.asm["ir"]))


@pytest.mark.parametrize("block", [256, 2048])
def test_integer_tiles_that_hold_data_take_registers_and_index_arithmetic_does_not(block):
    plain = _bytes(scale_kernel, block)
    assert _bytes(shuffled_scale_kernel, block) == plain
    # Philox keeps four 32-bit words per element alive through its rounds: Triton's H200 build of this dropout at
    # BLOCK 2048 in one warp takes 217 registers (simulator/data/h200_compile_facts.jsonl), twice the scaling's
    assert _bytes(dropout_kernel, block) >= plain + 4 * 4 * block
