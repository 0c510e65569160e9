"""Run a kernel without compiling it: the numpy interpreter of its IR, or the eager mode.

`kernel[grid](..., interpret=True)` or `WAVETILE_INTERPRET=1` runs the IR the compiler would lower
(after the same passes), op by op, with the same semantics (jit.interp.machine); results match the
compiled code bit for bit, math functions included (both run jit.mathlib's algorithms).
`interpret="eager"` / `WAVETILE_INTERPRET=eager` runs the kernel's own Python with numpy-backed
`tl` operations (jit.eager), so `print` and `breakpoint()` work inside the kernel.
`WAVETILE_SANITIZE=all` (or a comma list, see jit.sanitize) turns on the interpreter's sanitizers.
"""

from __future__ import annotations

import numpy as np

from dsl.frontend import compile_kernel
from dsl.ir.core import Function, TileType
from dsl.ir.verifier import verify
from jit import env
from jit.grid import normalize_grid
from jit.interp import numerics as N

MODES = ("ir", "eager")


def mode(options: dict) -> str | None:
    """'ir', 'eager' or None (compiled), from the launch option `interpret` or WAVETILE_INTERPRET."""
    value = options.get("interpret")
    if value is None:
        value = env.get("WAVETILE_INTERPRET", "")
    if value in (None, "") and env.get("WAVETILE_SANITIZE", "") not in ("", "0"):
        value = "1"  # the sanitizers live in the interpreter
    if value in (None, "", False):
        return None
    if value is True or str(value).lower() in ("1", "true", "ir", "yes", "on"):
        return "ir"
    if str(value).lower() == "eager":
        return "eager"
    if value in (False, None, "", "0") or str(value).lower() in ("false", "off", "no"):
        return None
    raise ValueError(f"interpret must be True, False or 'eager', got {value!r}")


def ir_of(jit_fn, signature: dict, num_warps: int = 4, divisible: tuple[str, ...] = ()) -> Function:
    """The verified, optimised IR of one specialisation (what the code generator would lower), cached."""
    from jit.passes import run_passes

    cache = jit_fn.__dict__.setdefault("_interpreter_ir", {})
    key = (tuple((n, str(v) if isinstance(v, TileType) else repr(v)) for n, v in signature.items()), num_warps,
           tuple(divisible))
    func = cache.get(key)
    if func is None:
        func = compile_kernel(jit_fn, signature)
        verify(func)
        run_passes(func, num_warps=num_warps, divisible=frozenset(divisible))
        verify(func)
        cache[key] = func
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


def schedule(total: int) -> np.ndarray | None:
    """The program order WAVETILE_SCHEDULE_SEED asks for (the permutation the compiled launcher uses)."""
    seed = env.integer("WAVETILE_SCHEDULE_SEED", minimum=0)
    if seed is None:
        return None
    return np.random.default_rng(seed).permutation(total).astype(np.int64)


def run(jit_fn, signature: dict, options: dict, runtime: list, grid, how: str):
    """Launch `jit_fn` in interpreter mode `how` ('ir' or 'eager'); returns the sanitizer report (or None)."""
    from jit import sanitize

    grid = normalize_grid(grid, jit_fn.__name__)
    total = grid[0] * grid[1] * grid[2]
    if how == "eager":
        from jit import eager

        hooks = sanitize.hooks_for(None, jit_fn, options)
        eager.run(jit_fn, signature, runtime, grid, schedule(total), hooks)
        return hooks if hooks.active else None
    func = ir_of(jit_fn, signature, int(options.get("num_warps", 4)), jit_fn.divisibility(runtime))
    args, buffers = register_args(runtime)
    hooks = sanitize.hooks_for(func, jit_fn, options)
    from jit.interp.machine import Machine

    machine = Machine(func, args, buffers, jit_fn.__name__, hooks)
    seed = env.integer("WAVETILE_SCHEDULE_SEED", minimum=0)
    if seed is not None:
        machine.warp_shuffle = (seed, int(options.get("num_warps", 4)))
    if total:
        machine.launch(grid, schedule(total))
    return hooks if hooks.active else None
