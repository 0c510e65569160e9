"""`triton._internal_testing`: the helpers Triton's own tests import, written for wavetile.

Device predicates answer for the emulated machine: it is not Triton's interpreter (wavetile compiles;
`is_interpreter()` follows TRITON_INTERPRET as Triton's does), and no CUDA/HIP/XPU-specific test
applies to it, so `is_cuda()`, `is_hip*()`, `is_hopper()`, ... are False.
"""

from __future__ import annotations

import os
import re

import numpy as np
from numpy.random import RandomState

import dsl as tl
from jit.as_triton.runtime import TensorWrapper, reinterpret

int_dtypes = ["int8", "int16", "int32", "int64"]
uint_dtypes = ["uint8", "uint16", "uint32", "uint64"]
integral_dtypes = int_dtypes + uint_dtypes
float_dtypes = ["float16", "float32", "float64"]
float_dtypes_with_bfloat16 = float_dtypes + ["bfloat16"]
dtypes = integral_dtypes + float_dtypes
dtypes_with_bfloat16 = dtypes + ["bfloat16"]
torch_float8_dtypes = ["float8_e4m3fn", "float8_e5m2"]
torch_dtypes = ["bool"] + int_dtypes + ["uint8"] + float_dtypes + ["bfloat16"]
tma_dtypes = sorted(set(dtypes_with_bfloat16) - {"int64", "uint64", "float64"})


def is_interpreter() -> bool:
    return os.environ.get("TRITON_INTERPRET", "0") == "1"


def _false(*args, **kwargs) -> bool:
    return False


(is_cuda, is_hip, is_xpu, is_hopper, is_hopper_or_newer, is_ampere_or_newer, is_blackwell, is_blackwell_ultra,
 is_rubin, is_sm12x, is_hip_cdna, is_hip_cdna2, is_hip_cdna3, is_hip_cdna4, is_hip_rdna, is_hip_rdna3, is_hip_rdna4,
 is_hip_rdna4m, is_hip_gfx1250, is_hip_cdna3_or_newer, is_compile_warmup, supports_ws, supports_clc) = (_false,) * 23


def supports_tma(byval_only: bool = False) -> bool:
    return is_interpreter()


def tma_skip_msg(byval_only: bool = False) -> str:
    return "TMA descriptors need an NVIDIA Hopper-class GPU"


def get_current_target():
    return None


def get_arch() -> str:
    return ""


def get_hip_lds_size() -> int:
    return 65536


def random_int(low: int, high: int, *, warmup_value=None, **kwargs) -> int:
    import torch

    return int(torch.randint(low, high, size=(), **kwargs).item())


def random_float(*, warmup_value=0.5, **kwargs) -> float:
    import torch

    return float(torch.rand((), **kwargs).item())


def numpy_random(shape, dtype_str: str, rs: RandomState | None = None, low=None, high=None) -> np.ndarray:
    """Seeded random data of a dtype named as numpy names it: integers never 0 (so division tests can
    divide), normal floats, bfloat16 as float32 with the low half zero, fp8 as small int8 codes."""
    shape = (shape,) if isinstance(shape, int) else shape
    rs = RandomState(seed=17) if rs is None else rs
    if dtype_str in integral_dtypes:
        info = np.iinfo(dtype_str)
        low = info.min if low is None else max(low, info.min)
        high = info.max if high is None else min(high, info.max)
        values = rs.randint(low, high, shape, dtype=np.dtype(dtype_str))
        values[values == 0] = 1
        return values
    if dtype_str and "float8" in dtype_str:
        return rs.randint(20, 40, shape, dtype=np.int8)
    if dtype_str in float_dtypes:
        return rs.normal(0, 1, shape).astype(dtype_str)
    if dtype_str == "bfloat16":
        bits = rs.normal(0, 1, shape).astype(np.float32).view(np.uint32) & np.uint32(0xFFFF0000)
        return bits.view(np.float32)
    if dtype_str in ("bool", "int1", "bool_"):
        return rs.normal(0, 1, shape) > 0.0
    raise RuntimeError(f"Unknown dtype {dtype_str}")


def to_triton(x: np.ndarray, device=None, dst_type: str | None = None):
    """A torch tensor of `x` (uint data as a reinterpreted signed tensor, as torch lacks some uints)."""
    import torch

    name = x.dtype.name
    if name in uint_dtypes:
        return reinterpret(torch.tensor(x.astype(name[1:]), device=device), getattr(tl, name))
    if dst_type and "float8" in dst_type:
        return reinterpret(torch.tensor(x, device=device), getattr(tl, dst_type))
    if name == "float32" and dst_type == "bfloat16":
        return torch.tensor(x, device=device).bfloat16()
    return torch.tensor(x, device=device)


def to_numpy(x) -> np.ndarray:
    import torch

    if isinstance(x, TensorWrapper):
        return x.base.cpu().numpy().astype(torch_dtype_name(x.dtype))
    if isinstance(x, torch.Tensor):
        return x.cpu().float().numpy() if x.dtype is torch.bfloat16 else x.cpu().numpy()
    raise ValueError(f"Not a triton-compatible tensor: {x}")


def str_to_triton_dtype(name: str) -> tl.dtype:
    return tl.str_to_ty(name)


def torch_dtype_name(dtype) -> str:
    """'int64' for torch.int64 and for tl.int64 (numpy's spelling of the type)."""
    if isinstance(dtype, tl.dtype):
        return dtype.name
    match = re.match(r"^torch\.(\w+)$", str(dtype))
    if match is None:
        raise TypeError(f"not a triton or torch dtype: {type(dtype)}")
    return match.group(1)


def default_alloc_fn(size: int, align: int, stream):
    import torch

    return torch.empty(size, dtype=torch.int8)


def unwrap_tensor(t):
    return t.base if isinstance(t, TensorWrapper) else t


def _requires_tma():
    import pytest

    return pytest.mark.skipif(not supports_tma(), reason=tma_skip_msg())


def __getattr__(name: str):
    if name == "requires_tma":
        return _requires_tma()
    raise AttributeError(f"module 'triton._internal_testing' has no attribute {name!r}")
