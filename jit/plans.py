"""Launch plans: a specialisation's launch, found again from a cheap look at the arguments.

Binding a call the general way (jit.launch.bind) classifies every argument, builds the signature and the
compile key, and costs tens of microseconds in Python. Once a specialisation has been launched that way,
its plan (the compiled kernel and which parameters become argument slots) is kept under a key read off the
arguments in one pass: each array's dtype, 16-byte alignment and contiguity, each int's class (the
constant 1, i32, i64, u64) and 16-divisibility, floats and bools, the constexpr values, num_warps,
num_stages and WAVETILE_CHECKS. That key tells apart everything the general path specialises on, so a
later call with the same key only packs argument slots and runs the same kernel.

Anything else takes the general path, which makes the plan: other argument types (tensors, None, dtypes),
other keyword arguments or launch options, and every route but the native one (jit.launcher.route: an open
profile, interpreter and sanitizer modes).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from dsl.core import constexpr
from dsl.dtypes import integer_dtype
from dsl.ir.core import TileType
from jit import launch, launcher, native
from jit.arguments import arg_slot, byte_bounds, data_address
from jit.grid import normalize_grid
from jit.launch import DEFAULT_NUM_STAGES, DEFAULT_NUM_WARPS, checks_enabled

PLAN_OPTIONS = frozenset(("num_warps", "num_stages"))


@dataclass(frozen=True)
class Plan:
    kernel: object  # CompiledKernel
    slots: tuple[tuple[int, TileType], ...]  # (parameter index, type) in slot order


class Plans:
    """The plans of one @jit function."""

    def __init__(self, jit_fn) -> None:
        self.jit_fn = jit_fn
        self.names = jit_fn.arg_names
        self.constexpr = [name in jit_fn.constexprs for name in self.names]
        self.specialize = [name not in jit_fn.do_not_specialize for name in self.names]
        self.by_key: dict[tuple, Plan] = {}

    def values(self, args: tuple, kwargs: dict) -> list | None:
        """Every parameter's value in order (num_warps and num_stages aside), or None for a call that is not plain."""
        return self.jit_fn.bind_values(args, kwargs, ignore=PLAN_OPTIONS)

    def key(self, values: list, kwargs: dict) -> tuple[tuple, list] | None:
        """(plan key, array addresses by parameter index) for a plain call, or None."""
        parts, addresses = [], [0] * len(values)
        for i, value in enumerate(values):
            kind = type(value)
            if self.constexpr[i]:
                value = value.value if kind is constexpr else value
                try:
                    hash(value)
                except TypeError:
                    return None
                parts.append((type(value), value))
            elif kind is np.ndarray:
                address = data_address(value)
                addresses[i] = address
                flags = value.flags  # read-only arrays get their own plans: the general path refuses written ones
                parts.append((value.dtype, self.specialize[i] and address % 16 == 0, flags.c_contiguous,
                              flags.writeable))
            elif kind is int:
                dtype = integer_dtype(value)  # the general path's rule (jit.arguments.classify)
                if dtype is None:
                    return None
                # (its IR name in the key: a str hashes from cache, the frozen dataclass in Python code)
                parts.append((dtype.ir, value == 1, value % 16 == 0) if self.specialize[i] else (dtype.ir,))
            elif kind is float or kind is bool:
                parts.append(kind)
            else:
                return None
        options = (kwargs.get("num_warps", DEFAULT_NUM_WARPS), kwargs.get("num_stages", DEFAULT_NUM_STAGES),
                   checks_enabled())
        return (tuple(parts), options), addresses

    def launch(self, args: tuple, kwargs: dict, grid) -> object | None:
        """Run the call from its plan; None when there is none (the caller then takes the general path)."""
        values = self.values(args, kwargs)
        if values is None:
            return None
        found = self.key(values, kwargs)
        plan = None if found is None else self.by_key.get(found[0])
        if plan is None or launcher.route(kwargs) != launcher.NATIVE:
            return None
        addresses = found[1]
        if callable(grid):
            grid = grid(launch.grid_meta(zip(self.names, values), kwargs))
        grid = normalize_grid(grid, self.jit_fn.__name__)
        slots, bounds = [], []
        for i, slot_type in plan.slots:
            value = values[i]
            if slot_type.dtype.is_ptr():
                low, high = ((addresses[i], addresses[i] + value.nbytes) if value.flags.c_contiguous
                             else byte_bounds(value))
                slots.append(addresses[i])
                bounds += (low, high - low)
            else:
                slots.append(arg_slot(value, slot_type))
        rc, error = native.run_frame(plan.kernel, grid, slots, bounds)
        if rc:  # bind (no side effects) for the names and sizes the message shows
            runtime = launch.bind(self.jit_fn, args, kwargs).runtime
            raise native.launch_error(plan.kernel, self.jit_fn.__name__, rc, error, runtime)
        return plan.kernel

    def remember(self, args: tuple, kwargs: dict, kernel, runtime: list) -> None:
        """After a general launch: keep its plan if the call was a plain one."""
        values = self.values(args, kwargs)
        found = None if values is None else self.key(values, kwargs)
        if found is None:
            return
        index = {name: i for i, name in enumerate(self.names)}
        self.by_key[found[0]] = Plan(kernel, tuple((index[name], t) for name, _, t in runtime))
