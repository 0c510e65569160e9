"""A workload for tests/kernels/test_library_tune.py: one autotuned kernel with a config that computes the wrong thing.

`HALF=True` scales only the first half of each block (the rest is left as it was): less work, so the
model ranks it fastest, and its output is wrong, which only the reference check of kernels.tune can tell.
"""

import numpy as np

import dsl as tl
from jit import cdiv, jit
from kernels._common import launch, random_array
from kernels.registry import Case
from kernels.tuning import tuned

AUTOTUNE_CONFIGS = [  # blocks wide enough that the bytes, not the starts of programs, bound the launches, and
    # 4 elements a thread: past the unaligned bound each thread's one run of stores merges (benchmarks/gpu/streams.py)
    {"BLOCK": 512, "HALF": False, "num_warps": 4},
    {"BLOCK": 1024, "HALF": False, "num_warps": 8},
    {"BLOCK": 1024, "HALF": True, "num_warps": 8},
]


@jit
def scale_kernel(x_ptr, out_ptr, n, factor, BLOCK: tl.constexpr, HALF: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    if HALF:
        mask = mask & (tl.arange(0, BLOCK) < BLOCK // 2)
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) * factor, mask=mask)


scale_kernel_tuned = tuned(scale_kernel, AUTOTUNE_CONFIGS, key=["n"])


def scale(x: np.ndarray, factor: float, config: dict | None = None) -> np.ndarray:
    out = np.zeros_like(x)
    launch(scale_kernel, scale_kernel_tuned, AUTOTUNE_CONFIGS, lambda m: (cdiv(x.size, m["BLOCK"]),),
           (x, out, x.size, float(factor)), config)
    return out


def workload(phase: str, tokens: int) -> None:
    """kernels.tune's `module:function` model: one launch at a size that depends on the step."""
    scale(np.ones(tokens * 300_000 + 7, np.float32), 2.0)


def cases():
    rng = np.random.default_rng(0)
    x = random_array(rng, (1000,), np.float32)  # not a multiple of any BLOCK
    yield Case("tune.scale", "n=1000", "fp32", lambda: scale(x, 3.0), lambda: (x.astype(np.float64) * 3.0))
