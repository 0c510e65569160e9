"""Run one generated kernel compiled and interpreted on the same fresh inputs and compare the outputs.

Outputs must agree bit for bit (NaNs compare equal whatever their payload), or within the kernel's
stated per-output ulp bound (0 for every generated output).
"""

from __future__ import annotations

import importlib.util
import os
import sys
import tempfile

import ml_dtypes
import numpy as np

from jit.fuzz.kernels import Kernel

_NP = {"float32": np.float32, "float16": np.float16, "bfloat16": ml_dtypes.bfloat16, "int32": np.int32,
       "int8": np.int8, "uint32": np.uint32, "int64": np.int64}
_DIR = tempfile.mkdtemp(prefix="wavetile_fuzz_")


def load(kernel: Kernel, name: str = "fuzzed"):
    """Write the source to a file (the frontend reads kernels' source) and import it."""
    path = os.path.join(_DIR, f"k{abs(hash(kernel.source))}_{kernel.seed}.py")
    with open(path, "w") as f:
        f.write(kernel.source)
    spec = importlib.util.spec_from_file_location(f"_wavetile_fuzz_{abs(hash(path))}", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return getattr(module, name)


def inputs(kernel: Kernel, rng: np.random.Generator) -> list[np.ndarray]:
    size = kernel.rows * kernel.cols * kernel.programs
    arrays = []
    for dt in kernel.inputs:
        if dt in ("float32", "float16", "bfloat16"):
            arrays.append((rng.standard_normal(size) * 3).astype(_NP[dt]))
        else:
            lo, hi = {"int8": (-100, 100), "uint32": (1, 10**6), "int32": (-10**5, 10**5),
                      "int64": (-10**9, 10**9)}[dt]
            arrays.append(rng.integers(lo, hi, size).astype(_NP[dt]))
    return arrays


def ulp_distance(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """|a - b| in units in the last place of a's format (0 where both are NaN)."""
    fa, fb = a.astype(np.float64), b.astype(np.float64)
    bits = 8 * a.dtype.itemsize
    ia = a.view(f"i{a.dtype.itemsize}").astype(np.int64)
    ib = b.view(f"i{b.dtype.itemsize}").astype(np.int64)
    top = 1 << (bits - 1)
    ia = np.where(ia < 0, -(ia + top), ia)  # sign-magnitude -> monotonic integers
    ib = np.where(ib < 0, -(ib + top), ib)
    dist = np.abs(ia - ib)
    return np.where(np.isnan(fa) & np.isnan(fb), 0, np.where(np.isnan(fa) | np.isnan(fb), 1 << 40, dist))


def compare(kernel: Kernel, compiled: list[np.ndarray], interpreted: list[np.ndarray], valid: int) -> str | None:
    for i, (c, r, bound) in enumerate(zip(compiled, interpreted, kernel.ulp)):
        c, r = c[:valid], r[:valid]
        if c.dtype.kind in "iub":
            bad = np.flatnonzero(c != r)
        else:
            bad = np.flatnonzero(ulp_distance(c, r) > bound)
        if bad.size:
            j = int(bad[0])
            return (f"output {i} ({kernel.outputs[i]}, bound {bound} ulp): {bad.size} elements differ, first at {j}: "
                    f"compiled {c[j]!r} interpreted {r[j]!r}")
    return None


def check(kernel: Kernel, data_seed: int = 0) -> str | None:
    """None when compiled and interpreted agree; else a description of the first mismatch."""
    fn = load(kernel)
    rng = np.random.default_rng(data_seed)
    ins = inputs(kernel, rng)
    size = kernel.rows * kernel.cols * kernel.programs
    outs_c = [np.full(size, 7, _NP[dt]) for dt in kernel.outputs]
    outs_i = [o.copy() for o in outs_c]
    meta = {"R": kernel.rows, "C": kernel.cols}
    fn[(kernel.programs,)](*ins, *outs_c, kernel.n, **meta)
    fn[(kernel.programs,)](*[a.copy() for a in ins], *outs_i, kernel.n, interpret=True, **meta)
    return compare(kernel, outs_c, outs_i, kernel.n)
