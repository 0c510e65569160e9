"""Triton's H200 build of a sweep config on a CPU: what the compiler makes of it without a GPU or a launch.

Triton compiles for a target it is given, and its wheel carries ptxas and cuobjdump, so registers, spills, shared
memory, the TTGIR and the machine code of a config can be read on any machine with Triton installed. The arguments
are specialized by Triton's own binder as a launch would specialize them (pointers 16-byte aligned, as torch
allocates; integers by divisibility by 16, and equal to 1 folded into constants), and the cubin's resource usage
gives what the driver reports after loading it (registers; the thread's stack and local bytes / 4, as Triton's
n_spills). compile_facts.py and sass_loops.py read their facts from this build with --offline: for all 439 of
holdout30's configs they are identical to those read on the H200.
"""

from __future__ import annotations

import os
import re
import subprocess
import tempfile
from dataclasses import dataclass

import numpy as np

_USAGE = re.compile(r"REG:(\d+) STACK:(\d+) SHARED:\d+ LOCAL:(\d+)")


def tool(name: str) -> str:
    """A CUDA binary shipped inside the Triton wheel."""
    import triton

    return os.path.join(os.path.dirname(triton.__file__), "backends", "nvidia", "bin", name)


def cuobjdump(cubin: bytes, option: str) -> str:
    """What Triton's cuobjdump prints for a cubin with `option` (-sass: the machine code; -res-usage: resources)."""
    with tempfile.NamedTemporaryFile(suffix=".cubin") as f:
        f.write(cubin)
        f.flush()
        return subprocess.run([tool("cuobjdump"), option, f.name], capture_output=True, text=True, check=True).stdout


@dataclass(frozen=True)
class OfflineKernel:
    """The parts of a compiled kernel the fact readers use, as a launched kernel would have them."""

    asm: dict
    metadata: object
    n_regs: int
    n_spills: int


def _as_argument(value):
    """What Triton's binder sees of a launch argument: arrays become tensors of their element type."""
    import triton.language as tl
    from triton.runtime.jit import MockTensor

    if isinstance(value, np.ndarray):  # by name: ml_dtypes' bfloat16 too
        dtypes = {"float16": tl.float16, "bfloat16": tl.bfloat16, "float32": tl.float32, "float64": tl.float64,
                  "int8": tl.int8, "uint8": tl.uint8, "int16": tl.int16, "int32": tl.int32, "int64": tl.int64,
                  "bool": tl.int1}
        return MockTensor(dtypes[value.dtype.name])
    return value


def build(kernel, args: tuple, kwargs: dict) -> OfflineKernel:
    """`kernel` (a triton.jit function) compiled for sm_90 with the launch's arguments and options."""
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource, make_backend
    from triton.runtime.jit import create_function_from_signature

    target = GPUTarget("cuda", 90, 32)
    backend = make_backend(target)
    binder = create_function_from_signature(kernel.signature, kernel.params, backend)
    bound, specialization, options = binder(*map(_as_argument, args), **kwargs)
    options, signature, constexprs, attrs = kernel._pack_args(backend, kwargs, bound, specialization, options)
    compiled = triton.compile(ASTSource(kernel, signature, constexprs, attrs), target=target,
                              options=options.__dict__)
    registers, stack, local = map(int, _USAGE.search(cuobjdump(compiled.asm["cubin"], "-res-usage")).groups())
    return OfflineKernel(asm=compiled.asm, metadata=compiled.metadata, n_regs=registers, n_spills=(stack + local) // 4)
