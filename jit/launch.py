"""The launch object: one `kernel[grid](...)` call, bound once, that every executor reads.

`bind` splits the call into launch options and arguments, types each argument (jit.arguments), checks
the compile options, resolves and normalises the grid (a callable grid gets the meta dict of
`grid_meta`), and returns a `Launch`. The router (jit.launcher) picks the executor from the launch's
options; the executor (native, profiled, interpreter, eager) takes everything it needs from the object.
The plan fast path (jit.plans) skips binding: its plan is a binding remembered from an earlier launch.
"""

from __future__ import annotations

import dataclasses
import functools
import operator
from collections.abc import Iterable

from dsl.core import constexpr, unwrap
from dsl.ir.core import TileType
from jit import compiler, env
from jit.arguments import INTEGER_SCALARS, Buffer, classify
from jit.grid import normalize_grid

LAUNCH_OPTIONS = frozenset(("num_warps", "num_stages", "num_ctas", "machine", "checks", "interpret", "enable_fp_fusion",
                            "maxnreg", "debug", "warp_size", "extern_libs", "sample", "shared_padding",
                            "launch_cooperative_grid"))  # accepted: wavetile has no grid-wide barrier it would enable
MODEL_OPTIONS = ("sample", "shared_padding")  # how a profiled launch is modeled (jit.profiler)
DEFAULT_NUM_WARPS, DEFAULT_NUM_STAGES = 4, 3
_NUM_WARPS = frozenset(1 << i for i in range(6))


def checks_enabled() -> bool:
    """WAVETILE_CHECKS=0 turns bounds checks off for launches that do not pass `checks=`."""
    return env.get("WAVETILE_CHECKS", "1") != "0"


@dataclasses.dataclass(eq=False, slots=True)
class Launch:
    """One bound launch: what to run (kernel, specialisation), on what (runtime arguments), where (grid)
    and how (launch options)."""

    jit_fn: object  # the JITFunction
    arguments: dict  # every parameter's value by name, defaults applied
    signature: dict  # parameter -> TileType of a runtime argument, or the value it specialises on
    runtime: list  # (name, value or Buffer, TileType) of each runtime argument, in slot order
    options: dict  # the launch options the call gave (LAUNCH_OPTIONS)
    compile_options: compiler.Options
    grid: tuple[int, int, int] | None  # None: bound without a grid (warmup)
    kernel: object = None  # the CompiledKernel, once an executor has compiled it
    _divisibility: tuple[str, ...] | None = dataclasses.field(default=None, repr=False)

    @property
    def name(self) -> str:
        return self.jit_fn.__name__

    @property
    def machine(self):
        return self.options.get("machine")

    @property
    def model(self) -> dict:
        """The options of a profiled launch's modeling (sample, shared_padding)."""
        return {k: self.options[k] for k in MODEL_OPTIONS if k in self.options}

    @property
    def programs(self) -> int:
        x, y, z = self.grid
        return x * y * z

    @property
    def divisibility(self) -> tuple[str, ...]:
        """Names of integer arguments divisible by 16 and pointers aligned to 16 bytes (Triton's "D" key)."""
        if self._divisibility is None:  # (not functools.cached_property: it takes a lock on Python 3.11)
            self._divisibility = divisibility(self.runtime, self.jit_fn.do_not_specialize)
        return self._divisibility

    def compiled(self, instrument: bool = False):
        """The compiled specialisation (kept as `kernel`), or its instrumented variant (the profiler's)."""
        if instrument:
            options = dataclasses.replace(self.compile_options, instrument=True)
            return self.jit_fn.get_compiled(self.signature, options, self.divisibility)
        if self.kernel is None:
            self.kernel = self.jit_fn.get_compiled(self.signature, self.compile_options, self.divisibility)
        return self.kernel


NO_GRID = object()
"""`bind`'s grid when the call only compiles (warmup, tools reading the signature): the launch gets grid None."""


def bind(jit_fn, args: tuple, kwargs: dict, grid=NO_GRID) -> Launch:
    """Bind a call of `jit_fn` into a Launch; errors name the kernel and the argument or option."""
    name = jit_fn.__name__
    # a kernel parameter named like a launch option (tutorial 02's `num_stages`) is an argument, as in Triton
    options = {k: kwargs[k] for k in LAUNCH_OPTIONS.intersection(kwargs) if k not in jit_fn.arg_index} \
        if kwargs else {}
    if options:  # the caller's dict is left as it was
        kwargs = {k: v for k, v in kwargs.items() if k not in options}
    arguments = _arguments(jit_fn, args, kwargs)
    signature, runtime = {}, []
    for param, value in arguments.items():
        if param in jit_fn.constexprs:
            signature[param] = unwrap(value)
            continue
        kind = classify(unwrap(value), param, name, specialize=param not in jit_fn.do_not_specialize)
        if isinstance(kind, Buffer):
            signature[param] = kind.type
            runtime.append((param, kind, kind.type))
        elif isinstance(kind, TileType):
            signature[param] = kind
            runtime.append((param, value, kind))
        else:
            signature[param] = kind.value
    compile_opts = compile_options(options, name)
    if grid is NO_GRID:
        grid = None
    else:
        grid = normalize_grid(grid(grid_meta(arguments.items(), options)) if callable(grid) else grid, name)
    return Launch(jit_fn, arguments, signature, runtime, options, compile_opts, grid)


def _arguments(jit_fn, args: tuple, kwargs: dict) -> dict:
    """Every parameter's value by name: the fast plain binding, else inspect's (which says what is wrong)."""
    values = jit_fn.bind_values(args, kwargs)
    if values is not None:
        return dict(zip(jit_fn.arg_names, values))
    try:
        bound = jit_fn.signature.bind(*args, **kwargs)
    except TypeError as e:
        unknown = [k for k in kwargs if k not in jit_fn.arg_names]
        if unknown:
            raise KeyError(f"Keyword argument {unknown[0]} was specified but unrecognised") from None
        raise TypeError(f"{jit_fn.__name__}: {e}") from None
    bound.apply_defaults()
    return bound.arguments


def grid_meta(arguments: Iterable[tuple[str, object]], options: dict) -> dict:
    """What a callable grid receives (Triton's `meta`): every argument by name, constexprs unwrapped, and the
    launch options. The one builder for the general path, the plan fast path and modeled launches."""
    meta = {name: (value.value if isinstance(value, constexpr) else value) for name, value in arguments}  # unwrap
    meta.update(options)
    return meta


def compile_options(options: dict, kernel_name: str) -> compiler.Options:
    """The compile options a launch's options ask for; num_warps and num_stages checked by name."""
    num_warps = options.get("num_warps", DEFAULT_NUM_WARPS)
    num_stages = options.get("num_stages", DEFAULT_NUM_STAGES)
    if _as_int(num_warps) not in _NUM_WARPS:
        raise ValueError(f"{kernel_name}: num_warps={num_warps!r}; it must be a power of two from 1 to 32")
    if _as_int(num_stages) is None or num_stages < 0:
        raise ValueError(f"{kernel_name}: num_stages={num_stages!r}; it must be an int >= 0")
    return _make_options(int(num_warps), int(num_stages), bool(options.get("checks", checks_enabled())))


def _as_int(value) -> int | None:
    """An int (numpy ints too, bools not) as itself, anything else as None."""
    if isinstance(value, bool):
        return None
    try:
        return operator.index(value)
    except TypeError:
        return None


@functools.cache
def _make_options(num_warps: int, num_stages: int, checks: bool) -> compiler.Options:
    """One Options object per combination: launches reuse it (and its hash) instead of building one each time."""
    return compiler.Options(num_warps=num_warps, num_stages=num_stages, checks=checks)


def divisibility(runtime: list, do_not_specialize=frozenset()) -> tuple[str, ...]:
    """Names of integer arguments divisible by 16 and pointers aligned to 16 bytes (Triton's "D" key)."""
    names = []
    for name, value, type in runtime:
        if name in do_not_specialize:
            continue
        if isinstance(value, Buffer):
            number = value.address
        elif type in INTEGER_SCALARS:
            number = int(value)
        else:
            continue
        if number % 16 == 0:
            names.append(name)
    return tuple(names)
