"""`triton.runtime` (and its `jit`, `errors`, `autotuner`, `interpreter` modules) under wavetile.

The names kernel code and tests touch: JITFunction, the autotuner classes, TensorWrapper /
reinterpret (a tensor seen with another element type, e.g. int32 storage as uint32), the errors.
"""

from __future__ import annotations

import functools
import os

from dsl.errors import TritonError
from jit.as_triton import driver  # noqa: F401  (`triton.runtime.driver.active`)
from jit.autotune import Autotuner, Config, Heuristics, autotune, heuristics
from jit.kernel import JITFunction
from jit.kernel import jit as plain_jit

KernelInterface = JITFunction


class InterpreterError(TritonError):
    """Triton's interpreter wraps errors raised while it runs a kernel in this; kept for `except` clauses."""


class InterpretedJITFunction(JITFunction):
    """`triton.jit` under TRITON_INTERPRET=1: Triton's interpreter reports a kernel's compile and run-time
    errors as InterpreterErrors (its tests pick the class with `is_interpreter()`), so a failed launch's
    error is also an InterpreterError here, keeping its own class, text and `__cause__`."""

    def run(self, *args, grid, **kwargs):
        try:
            return super().run(*args, grid=grid, **kwargs)
        except TritonError as error:
            if not isinstance(error, InterpreterError):
                error.__class__ = _as_interpreter_error(type(error))
            raise


def triton_jit(fn=None, **options):
    """`triton.jit`: wavetile's @jit, with InterpretedJITFunction under TRITON_INTERPRET=1."""
    if os.environ.get("TRITON_INTERPRET", "0") != "1":
        return plain_jit(fn, **options)
    if fn is None:
        return lambda f: InterpretedJITFunction(f, **options)
    return InterpretedJITFunction(fn, **options)


@functools.cache
def _as_interpreter_error(cls: type) -> type:
    return type(cls.__name__, (cls, InterpreterError), {"__module__": cls.__module__, "__qualname__": cls.__qualname__})


class OutOfResources(TritonError):
    """A kernel needs more of a resource (shared memory, registers) than the machine has."""

    def __init__(self, required, limit, name):
        self.required, self.limit, self.name = required, limit, name
        super().__init__(f"out of resource: {name}, Required: {required}, Hardware limit: {limit}. "
                         "Reducing block sizes or `num_stages` may help.")


class TensorWrapper:
    """A tensor read by kernels as another element type of the same width (`reinterpret`)."""

    def __init__(self, base, dtype):
        self.base, self.dtype = base, dtype
        self.data, self.device, self.shape = base.data, base.device, base.shape

    def data_ptr(self) -> int:
        return self.base.data_ptr()

    def untyped_storage(self):
        return self.base.untyped_storage()

    def stride(self, *args):
        return self.base.stride(*args)

    def element_size(self) -> int:
        return self.base.element_size()

    def numel(self) -> int:
        return self.base.numel()

    def cpu(self) -> TensorWrapper:
        return TensorWrapper(self.base.cpu(), self.dtype)

    def to(self, device) -> TensorWrapper:
        return TensorWrapper(self.base.to(device), self.dtype)

    def clone(self) -> TensorWrapper:
        return TensorWrapper(self.base.clone(), self.dtype)

    def copy_(self, other) -> None:
        self.base.copy_(other.base)

    def new_empty(self, sizes) -> TensorWrapper:
        return TensorWrapper(self.base.new_empty(sizes), self.dtype)

    def __str__(self) -> str:
        return f"TensorWrapper[{self.dtype}]({self.base})"


def reinterpret(tensor, dtype):
    """View `tensor` as elements of `dtype` (a tl.dtype) for kernel arguments; the base's own dtype unwraps."""
    if isinstance(tensor, TensorWrapper):
        return tensor.base if dtype == tensor.base.dtype else TensorWrapper(tensor.base, dtype)
    if hasattr(tensor, "data_ptr"):
        return TensorWrapper(tensor, dtype)
    raise TypeError(f"Cannot reinterpret a {type(tensor)}.")


class MockTensor:
    """A stand-in tensor of a dtype, for warming kernels up without data."""

    def __init__(self, dtype, shape=None):
        self.dtype, self.shape = dtype, shape or [1]

    @staticmethod
    def data_ptr() -> int:
        return 0


__all__ = ["Autotuner", "Config", "Heuristics", "autotune", "heuristics", "JITFunction", "KernelInterface",
           "InterpreterError", "OutOfResources", "TensorWrapper", "reinterpret", "MockTensor", "driver"]
