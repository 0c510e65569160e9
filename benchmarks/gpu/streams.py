"""Probe set (split "streams"): flat elementwise streams, vectorised and not, to see what one-element accesses cost.

Past a bound that is not a multiple of 16 (Triton specialises integer arguments on divisibility by 16), a masked
access moves one element per instruction, its lanes as many elements apart as each thread holds in a row (up to
16 bytes' worth): the held-out softcap over 50,000,003 fp32 logits runs 100 us with 4 elements a thread and 208 us
with 128, where the model gives 116 us to every config. Here a copy, a fill (stores only) and a tanh from one exp
(loads, arithmetic, stores) run over 2^25 fp32 or 2^26 bf16 elements, once with a bound that is a multiple of 16 and
once with one less, at 1 to 64 elements a thread and 1 to 16 warps: the same kernels timed on the H200 (sweep.py
--split streams) and modeled (model_sweep.py --split streams) tell what the model misses about such accesses.
Measured once; not part of the calibration, validation or held-out scores.
"""

from __future__ import annotations

import numpy as np
from sweep_cases import Case, _f32, _grid_configs, _itemsize, _np_dtype, _rand
from sweep_kernels import jit, tl


@jit
def stream_copy_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=mask), mask=mask)


@jit
def stream_fill_kernel(y_ptr, n, scale, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(y_ptr + offs, ((offs % 4096).to(tl.float32) * scale).to(y_ptr.dtype.element_ty), mask=offs < n)


@jit
def stream_tanh_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    y = 1.0 - 2.0 / (1.0 + tl.exp(2.0 * x))
    tl.store(y_ptr + offs, y.to(y_ptr.dtype.element_ty), mask=mask)


STREAM_CONFIGS = [{"BLOCK": 32 * per_thread * c["num_warps"], **c}
                  for per_thread in (1, 2, 4, 8, 16, 64)
                  for c in _grid_configs({"num_warps": [1, 2, 4, 8, 16]})
                  if 32 * per_thread * c["num_warps"] <= 16384]
SCALE = 1.0 / 4096


def stream_case(kind: str, dtype: str, aligned: bool) -> Case:
    n = (1 << 25 if dtype == "fp32" else 1 << 26) - (0 if aligned else 1)
    name = f"streams_{kind}_{dtype}_{'aligned' if aligned else 'unaligned'}_{n}"
    size = _itemsize(dtype)

    def inputs(rng):
        arrays = {"y": np.empty(n, _np_dtype(dtype))}
        if kind != "fill":
            arrays["x"] = _rand(rng, (n,), dtype)
        return arrays

    if kind == "copy":
        kernel, args, reference = (stream_copy_kernel, lambda x, cfg: (x["x"], x["y"], n),
                                   lambda x: {"y": _f32(x["x"])})
    elif kind == "fill":
        kernel, args, reference = (stream_fill_kernel, lambda x, cfg: (x["y"], n, SCALE),
                                   lambda x: {"y": (np.arange(n) % 4096).astype(np.float32) * np.float32(SCALE)})
    else:
        kernel, args, reference = (stream_tanh_kernel, lambda x, cfg: (x["x"], x["y"], n),
                                   lambda x: {"y": np.tanh(_f32(x["x"]).astype(np.float64))})
    moved = (1 if kind == "fill" else 2) * size * n
    return Case(f"streams_{kind}", name, "streams", kernel, {"n": n}, dtype, STREAM_CONFIGS, inputs, ("y",), args,
                lambda cfg: (-(-n // cfg["BLOCK"]),), reference, tolerance=1e-2 if dtype == "bf16" else 1e-5,
                min_bytes=float(moved))


def stream_cases() -> list[Case]:
    return [stream_case(kind, dtype, aligned) for kind in ("copy", "fill", "tanh") for dtype in ("fp32", "bf16")
            for aligned in (False, True)]
