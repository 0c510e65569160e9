"""Pieces the Gated DeltaNet kernels share: argument checks and the in-kernel q/k L2 norm."""

from __future__ import annotations

import numpy as np
from ml_dtypes import bfloat16

import dsl as tl
from jit import Config, jit
from kernels._common import resolve

ACTIVATION_DTYPES = (np.dtype(np.float32), np.dtype(np.float16), np.dtype(bfloat16))


@jit
def l2_normalise(x):
    """Rows of x scaled to unit L2 norm, FLA's convention x * rsqrt(sum x^2 + 1e-6) (fp32)."""
    return x * tl.rsqrt(tl.sum(x * x, axis=len(x.shape) - 1, keep_dims=True) + 1e-6)


def check_activation(name: str, x, ndim: int) -> None:
    if not isinstance(x, np.ndarray):
        raise ValueError(f"{name} must be a numpy array, got {type(x).__name__}")
    if x.ndim != ndim:
        raise ValueError(f"{name} must have {ndim} dimensions, got shape {x.shape}")
    if x.dtype not in ACTIVATION_DTYPES:
        raise ValueError(f"{name} must be float32, float16 or bfloat16, got {x.dtype}")
    if x.shape[-1] > 1 and x.strides[-1] != x.itemsize:
        raise ValueError(f"{name}'s last dimension must be contiguous (strides {x.strides})")


def check_qkv(q, k, v, lead: str = "T") -> tuple[int, int, int, int, int]:
    """Checks q, k [T, HK, dk] and v [T, HV, dv] of one dtype with HV a multiple of HK; returns T, HK, HV, dk, dv."""
    for name, x in (("q", q), ("k", k), ("v", v)):
        check_activation(name, x, 3)
    if q.shape != k.shape:
        raise ValueError(f"q and k must have the same shape [{lead}, HK, dk], got {q.shape} and {k.shape}")
    if not (q.dtype == k.dtype == v.dtype):
        raise ValueError(f"q, k, v must share a dtype, got {q.dtype}, {k.dtype}, {v.dtype}")
    T, HK, dk = q.shape
    if v.shape[0] != T:
        raise ValueError(f"v must have {T} rows like q, got shape {v.shape}")
    HV, dv = v.shape[1:]
    if HK == 0 or HV % HK:
        raise ValueError(f"value heads ({HV}) must be a multiple of key heads ({HK})")
    if dk == 0 or dv == 0:
        raise ValueError("head dims must be positive")
    return T, HK, HV, dk, dv


def check_fp32(name: str, x, shape: tuple) -> np.ndarray:
    if not isinstance(x, np.ndarray) or x.dtype != np.float32:
        raise ValueError(f"{name} must be a float32 numpy array, got {getattr(x, 'dtype', type(x).__name__)}")
    if x.shape != shape:
        raise ValueError(f"{name} must have shape {shape}, got {x.shape}")
    return np.ascontiguousarray(x)


def check_state(state, shape: tuple, name: str = "state") -> None:
    """Recurrent states are fp32 and C-contiguous (they may be updated in place)."""
    check_fp32(name, state, shape)
    if not state.flags.c_contiguous:
        raise ValueError(f"{name} must be C-contiguous")


def check_gates(T: int, HV: int, g, beta, a, b, A_log, dt_bias) -> tuple[tuple, bool]:
    """Either precomputed (g, beta) fp32 [T, HV] or raw (a, b [T, HV], A_log and dt_bias fp32 [HV]).

    Returns the six gate pointers the kernels take and whether they are raw. Unused pointers repeat an fp32 array,
    so that both forms launch the same compiled kernel when a and b are fp32.
    """
    precomputed = g is not None or beta is not None
    raw = any(x is not None for x in (a, b, A_log, dt_bias))
    if precomputed == raw:
        raise ValueError("pass either g and beta, or a, b, A_log and dt_bias")
    if precomputed:
        if g is None or beta is None:
            raise ValueError("g and beta go together")
        g, beta = check_fp32("g", g, (T, HV)), check_fp32("beta", beta, (T, HV))
        return (g, beta, g, beta, g, g), False
    if any(x is None for x in (a, b, A_log, dt_bias)):
        raise ValueError("a, b, A_log and dt_bias go together")
    for name, x in (("a", a), ("b", b)):
        if not isinstance(x, np.ndarray) or x.dtype not in ACTIVATION_DTYPES or x.shape != (T, HV):
            raise ValueError(f"{name} must be a float32/float16/bfloat16 array of shape {(T, HV)}, "
                             f"got {getattr(x, 'dtype', None)} {getattr(x, 'shape', None)}")
    a, b = np.ascontiguousarray(a), np.ascontiguousarray(b)
    A_log, dt_bias = check_fp32("A_log", A_log, (HV,)), check_fp32("dt_bias", dt_bias, (HV,))
    return (A_log, dt_bias, a, b, A_log, dt_bias), True


def normalise_cu_seqlens(cu_seqlens, T: int) -> tuple[np.ndarray, int]:
    """int32 offsets [N + 1] of packed sequences (0 first, T last, non-decreasing); None means one sequence."""
    if cu_seqlens is None:
        return np.array([0, T], dtype=np.int32), 1
    cu = np.asarray(cu_seqlens)
    if cu.ndim != 1 or cu.size < 2 or cu.dtype.kind not in "iu":
        raise ValueError(f"cu_seqlens must be a 1-D integer array of N + 1 offsets, got {cu.dtype} {cu.shape}")
    if cu[0] != 0 or cu[-1] != T or np.any(np.diff(cu) < 0):
        raise ValueError(f"cu_seqlens must start at 0, end at {T} and not decrease, got {cu.tolist()}")
    return np.ascontiguousarray(cu, dtype=np.int32), cu.size - 1


def check_state_indices(state_indices, N: int, slots: int) -> np.ndarray:
    """int32 cache slots [N] (distinct, in range) for a batched decode step; None means row n uses slot n."""
    if state_indices is None:
        if slots < N:
            raise ValueError(f"the state cache has {slots} slots for {N} sequences")
        return np.zeros(1, np.int32)
    idx = np.asarray(state_indices)
    if idx.shape != (N,) or idx.dtype.kind not in "iu":
        raise ValueError(f"state_indices must be {N} integers, got {idx.dtype} {idx.shape}")
    if N and (idx.min() < 0 or idx.max() >= slots or np.unique(idx).size != N):
        raise ValueError(f"state_indices must be distinct slots in [0, {slots})")
    return np.ascontiguousarray(idx, dtype=np.int32)


def configured(config, kernel, tuned_kernel, configs: list[Config]) -> ConfiguredLaunch:
    """What a host function launches for its `config`: None (this machine's config table's pick for the launch's
    shape, else the first of `configs`; kernels.config_table), a Config, or "auto" (tune on first use for the
    kernel's autotune key; a sweep compiles every config, so it is opt-in). Index it with the grid and call it
    like the kernel."""
    if not (config is None or isinstance(config, Config) or (isinstance(config, str) and config == "auto")):
        raise ValueError(f"config must be a jit Config, None or 'auto', got {config!r}")
    return ConfiguredLaunch(config, kernel, tuned_kernel, configs)


class ConfiguredLaunch:
    """`configured(...)`'s result: picks the config when called, since the table's pick depends on the arguments.
    While wavetile-tune captures launches (jit.autotune.capturing), an unconfigured call launches the @autotune
    wrapper, which the sweep then tunes."""

    def __init__(self, config, kernel, tuned_kernel, configs: list[Config]):
        self.config, self.kernel, self.tuned_kernel, self.configs = config, kernel, tuned_kernel, configs

    def __getitem__(self, grid):
        return lambda *args, **meta: self._launch(grid, args, meta)

    def _launch(self, grid, args: tuple, meta: dict):
        config = resolve(self.tuned_kernel, self.configs, args, meta, self.config)
        if config is None:
            return self.tuned_kernel[grid](*args, **meta)
        return self.kernel[grid](*args, **meta, **config.all_kwargs())
