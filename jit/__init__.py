"""wavetile's JIT: `@jit`, launching, and the compile pipeline behind them."""

from dsl.errors import CompilationError, DeviceAssertionError, KernelError, OutOfBoundsError
from jit.autotune import Config, autotune, heuristics
from jit.kernel import JITFunction, cdiv, jit, next_power_of_2

__all__ = ["jit", "autotune", "Config", "heuristics", "JITFunction", "cdiv", "next_power_of_2", "CompilationError",
           "KernelError", "OutOfBoundsError", "DeviceAssertionError"]
