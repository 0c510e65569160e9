"""The `triton` module under `jit.as_triton`: wavetile's decorators and helpers under Triton's names."""

from __future__ import annotations

import dsl as language
from dsl.errors import CompilationError, TritonError
from jit.as_triton import runtime, testing, tools
from jit.as_triton.runtime import (
    InterpreterError,
    JITFunction,
    KernelInterface,
    MockTensor,
    OutOfResources,
    TensorWrapper,
    reinterpret,
)
from jit.as_triton.runtime import triton_jit as jit
from jit.as_triton.unsupported import NoMeaning, stands_in_for
from jit.autotune import Config, autotune, heuristics
from jit.kernel import cdiv, next_power_of_2

__version__ = "3.9.0"  # the Triton release whose names this module follows

_allocator = None


def set_allocator(allocator) -> None:
    """Kept for kernels that create tensor descriptors on the device; wavetile allocates its own scratch."""
    global _allocator
    _allocator = allocator


def must_use_result(fn):
    """Triton's marker for builtins whose result must be used; a no-op outside the language."""
    return fn


def constexpr_function(fn):
    """A host function Triton may call at compile time on constexpr values; wavetile's frontend calls
    plain Python functions on constexprs already."""
    return fn


def __getattr__(name: str):
    if not stands_in_for(name):
        raise AttributeError(f"module 'triton' has no attribute {name!r}")
    return NoMeaning(f"triton.{name}")


__all__ = ["autotune", "cdiv", "CompilationError", "Config", "constexpr_function", "heuristics", "InterpreterError",
           "jit", "JITFunction", "KernelInterface", "language", "MockTensor", "must_use_result", "next_power_of_2",
           "OutOfResources", "reinterpret", "runtime", "set_allocator", "TensorWrapper", "TritonError", "testing",
           "tools"]
