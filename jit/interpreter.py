"""Run a kernel without compiling it: the numpy interpreter of its IR, or the eager mode (the router,
jit.launcher, sends launches here).

`kernel[grid](..., interpret=True)` or `WAVETILE_INTERPRET=1` runs the IR the compiler would lower
(after the same passes), op by op, with the same semantics (jit.interp.machine); results match the
compiled code bit for bit, math functions included (both run jit.mathlib's algorithms).
`interpret="eager"` / `WAVETILE_INTERPRET=eager` runs the kernel's own Python with numpy-backed
`tl` operations (jit.eager), so `print` and `breakpoint()` work inside the kernel.
`WAVETILE_SANITIZE=all` (or a comma list, see jit.sanitize) turns on the interpreter's sanitizers.
"""

from __future__ import annotations

import numpy as np

from dsl.ir.core import Function, TileType
from jit import compiler
from jit.grid import program_order, schedule_seed
from jit.interp import numerics as N
from jit.launch import Launch


def ir_of(jit_fn, signature: dict, num_warps: int = 4, divisible: tuple[str, ...] = ()) -> Function:
    """The verified, optimised IR of one specialisation (the compiler's IR stages, what codegen lowers), cached."""
    cache = jit_fn.__dict__.setdefault("_interpreter_ir", {})
    key = (tuple((n, str(v) if isinstance(v, TileType) else repr(v)) for n, v in signature.items()), num_warps,
           tuple(divisible))
    func = cache.get(key)
    if func is None:
        func = cache[key] = compiler.tile_ir(jit_fn, signature, compiler.Options(num_warps=num_warps), divisible)
    return func


def register_args(runtime: list) -> tuple[list[np.ndarray], list[tuple[str, int, int, bool]]]:
    """Runtime arguments as registers (pointers as addresses), and the (name, low, high, writable) of each
    buffer."""
    values, buffers = [], []
    for name, value, type in runtime:
        if type.dtype.is_ptr():
            values.append(np.asarray(value.address, np.int64))
            buffers.append((name, value.low, value.high, value.writable))
        elif type.dtype.is_floating():
            values.append(np.asarray(float(value), N.register_dtype(type.dtype)))
        else:
            v = int(value) & ((1 << type.dtype.primitive_bitwidth) - 1)
            values.append(np.asarray(v, np.uint64).astype(N.register_dtype(type.dtype)))
    return values, buffers


def run(launch: Launch, how: str):
    """Run a bound launch in interpreter mode `how` ('ir' or 'eager'); returns the sanitizer report (or None)."""
    from jit import sanitize

    jit_fn, grid, total = launch.jit_fn, launch.grid, launch.programs
    if how == "eager":
        from jit import eager

        hooks = sanitize.hooks_for(None, jit_fn, launch.options)
        eager.run(jit_fn, launch.signature, launch.runtime, grid, program_order(total), hooks)
        return hooks if hooks.active else None
    num_warps = launch.compile_options.num_warps
    func = ir_of(jit_fn, launch.signature, num_warps, launch.divisibility)
    args, buffers = register_args(launch.runtime)
    hooks = sanitize.hooks_for(func, jit_fn, launch.options)
    from jit.interp.machine import Machine

    machine = Machine(func, args, buffers, jit_fn.__name__, hooks)
    seed = schedule_seed()
    if seed is not None:
        machine.warp_shuffle = (seed, num_warps)
    if total:
        machine.launch(grid, program_order(total))
    return hooks if hooks.active else None
