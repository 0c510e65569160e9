"""Shared host-side checks and error bounds for the norm / RoPE / QKV kernels.

The bounds are what the docstrings promise and the tests assert: |got - ref| <= rtol * |ref| + atol, with the
reference computed in float64 from the same (already rounded) inputs. fp32 paths are accurate to a few ulps, so
1e-5 relative holds with room; fp16 / bf16 outputs are rounded once to their format (half an ulp: 2^-11 and
2^-8 relative), so the bound is two half-ulps of the output format (fp16 1e-3, bf16 8e-3).
"""

from __future__ import annotations

import ml_dtypes
import numpy as np

from jit import Config
from jit.autotune import capturing
from kernels import config_table

BF16 = np.dtype(ml_dtypes.bfloat16)
FLOAT_DTYPES = (np.dtype(np.float32), np.dtype(np.float16), BF16)

_TOLERANCE = {
    np.dtype(np.float32): (1e-5, 1e-6),
    np.dtype(np.float16): (1e-3, 1e-3),
    BF16: (8e-3, 8e-3),
}


def tolerance(dtype) -> tuple[float, float]:
    """(rtol, atol) an output of this dtype meets against the float64 reference."""
    return _TOLERANCE[np.dtype(dtype)]


def dtype_name(dtype) -> str:
    return {np.dtype(np.float32): "fp32", np.dtype(np.float16): "fp16", BF16: "bf16"}[np.dtype(dtype)]


def float_array(a, name: str, ndim: int | None = None, min_ndim: int | None = None) -> np.ndarray:
    """Check that `a` is a float32/float16/bfloat16 numpy array of the expected rank; return it C-contiguous."""
    if not isinstance(a, np.ndarray):
        raise ValueError(f"{name} must be a numpy array, got {type(a).__name__}")
    if a.dtype not in FLOAT_DTYPES:
        raise ValueError(f"{name} must be float32, float16 or bfloat16, got {a.dtype}")
    if ndim is not None and a.ndim != ndim:
        raise ValueError(f"{name} must have {ndim} dimensions, got shape {a.shape}")
    if min_ndim is not None and a.ndim < min_ndim:
        raise ValueError(f"{name} must have at least {min_ndim} dimensions, got shape {a.shape}")
    return np.ascontiguousarray(a)


def int_array(a, name: str, shape: tuple[int, ...]) -> np.ndarray:
    """Check that `a` is an integer numpy array of exactly `shape`; return it as C-contiguous int32."""
    if not isinstance(a, np.ndarray) or a.dtype.kind not in "iu":
        raise ValueError(f"{name} must be an integer numpy array, got {getattr(a, 'dtype', type(a).__name__)}")
    if a.shape != tuple(shape):
        raise ValueError(f"{name} must have shape {tuple(shape)}, got {a.shape}")
    if a.size and (a.min() < -(2**31) or a.max() >= 2**31):
        raise ValueError(f"{name} values must fit in int32")
    return np.ascontiguousarray(a, dtype=np.int32)


def random_array(rng: np.random.Generator, shape, dtype, scale: float = 1.0, offset: float = 0.1) -> np.ndarray:
    """Fresh normal(offset, scale) values in `dtype` (never all zeros), for tests and registered cases."""
    return (rng.standard_normal(shape) * scale + offset).astype(dtype)


def launch(kernel, tuned_kernel, configs, grid, args, config: dict | None = None, tune: bool = False, **meta) -> None:
    """Launch the plain `kernel` with the config `resolve` gives, or, with `tune=True`, the `@autotune` wrapper,
    which scores every config on the first call per key and caches the choice. `grid` is a callable of the
    meta-parameters, so it serves both."""
    chosen = resolve(tuned_kernel, configs, args, meta, config, tune)
    if chosen is None:
        tuned_kernel[grid](*args, **meta)
    else:
        kernel[grid](*args, **meta, **chosen.all_kwargs())


def resolve(tuned_kernel, configs, args, meta: dict, config=None, tune: bool = False) -> Config | None:
    """The config a host function launches its kernel with: `config` when given (a Config or one of the
    AUTOTUNE_CONFIGS dicts), else this machine's config table's pick for the launch's shape, else the family's
    untuned default (kernels.config_table). None means: launch the `@autotune` wrapper instead, because
    `tune=True` (or config="auto") asked for tuning, or because wavetile-tune captures launches
    (jit.autotune.capturing) and an unconfigured call is what it sweeps. Every autotuned family goes through
    here, so the capture sees all their launches and the table steers all of them."""
    if isinstance(config, str) and config == "auto":
        config, tune = None, True
    if tune or (config is None and capturing()):
        if config is not None:
            raise ValueError("pass either config or tune=True, not both")
        return None
    if config is None:
        return config_table.pick(tuned_kernel, configs, args, meta)
    if isinstance(config, Config):
        return config
    if isinstance(config, dict):
        return config_table.as_config(config)
    raise ValueError(f"config must be a jit Config, a dict of AUTOTUNE_CONFIGS' form, None or 'auto', got {config!r}")
