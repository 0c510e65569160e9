"""CPU torch tensors stand for device tensors: `device="cuda"` in a Triton program makes a CPU tensor.

A torch function mode rewrites every `device=` argument (and `.to("cuda")`, `.cuda()`) that names
CUDA to the CPU, and `torch.cuda.synchronize` / `is_available` / `current_device` answer for the
emulated device. WAVETILE_TRITON_CUDA=keep turns this off (for a machine with a real GPU whose
tensors should stay there; wavetile still needs CPU tensors for its kernels).
"""

from __future__ import annotations

import contextlib

from jit import env

MODE_ENV = "WAVETILE_TRITON_CUDA"


def _is_cuda(device) -> bool:
    return (isinstance(device, str) and device.split(":")[0] == "cuda") or getattr(device, "type", None) == "cuda"


def install() -> bool:
    """Map CUDA devices onto the CPU for the rest of the process; False when torch is absent or the switch is off."""
    if env.get(MODE_ENV, "cpu") == "keep":
        return False
    try:
        import torch
        from torch.overrides import TorchFunctionMode
    except ImportError:
        return False

    class CudaOnCpu(TorchFunctionMode):
        """Rewrites CUDA device arguments of every torch call to the CPU."""

        def __torch_function__(self, func, types, args=(), kwargs=None):
            kwargs = dict(kwargs or {})
            if _is_cuda(kwargs.get("device")):
                kwargs["device"] = "cpu"
            if func in (torch.Tensor.to, torch.Tensor.cuda) or getattr(func, "__name__", "") in ("to", "cuda"):
                if func is torch.Tensor.cuda or getattr(func, "__name__", "") == "cuda":
                    return args[0]
                args = tuple("cpu" if _is_cuda(a) else a for a in args)
            return func(*args, **kwargs)

    CudaOnCpu().__enter__()  # stays active for the whole process, as the alias does
    torch.cuda.synchronize = lambda device=None: None
    torch.cuda.is_available = lambda: True
    torch.cuda.current_device = lambda: 0
    torch.cuda.device_count = lambda: 1
    torch.cuda.device = lambda device=None: contextlib.nullcontext()
    return True
