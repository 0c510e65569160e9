"""`@jit`: a kernel object that specialises on its arguments, compiles once per specialisation, and launches.

Launch: `kernel[grid](*args, BLOCK=..., num_warps=4)`. Arguments bind like Triton's: arrays become
pointers, ints become i32/i64 by value (an int equal to 1 becomes the constant 1), floats fp32,
bools int1; constexpr parameters specialise on their value.
"""

from __future__ import annotations

import hashlib
import inspect
import re
import types
from collections.abc import Callable

from dsl import dtypes as T
from dsl.core import constexpr
from dsl.frontend import ParsedSource, is_constexpr_annotation
from dsl.ir.core import TileType
from jit import compiler, launch, launcher, plans

_MISSING = object()
_COMPILER_MODULES = frozenset(("dsl", "jit", "numpy", "math", "builtins"))


def eager_active() -> bool:
    from dsl import semantic

    return getattr(semantic._current.get(None), "eager", False)


def _aggregate_key(cls: type) -> str:
    """An aggregate class's part of a kernel's key: its fields, and the code of its methods (their own keys
    for @jit ones), so editing a method recompiles the kernels that use the class."""
    parts = [cls.__qualname__, *cls.__aggregate_fields__]
    if cls in _KEYING:  # a method that names its own class (to build a new instance): the class is being keyed
        return "aggregate:" + cls.__qualname__
    _KEYING.add(cls)
    try:
        for name, member in sorted(vars(cls).items()):
            function = member.__func__ if isinstance(member, staticmethod) else getattr(member, "function", member)
            if getattr(function, "is_wavetile_jit", False):
                parts.append(f"{name}:{function.cache_key}")
            elif isinstance(function, types.FunctionType):
                parts.append(f"{name}:{function.__code__.co_code.hex()}:{function.__code__.co_consts!r}")
    finally:
        _KEYING.discard(cls)
    return "aggregate:" + hashlib.sha256("\n".join(parts).encode()).hexdigest()


_KEYING: set[type] = set()

class JITFunction:
    """A @jit-decorated function. Calling it directly from Python is an error; index it with a grid."""

    is_wavetile_jit = True

    def __init__(self, fn: Callable, *, do_not_specialize=(), do_not_specialize_on_alignment=(), debug=None,
                 noinline=None, repr=None, launch_metadata=None):
        self.fn = fn
        self.__name__ = fn.__name__
        self.__doc__ = fn.__doc__
        self.__module__ = fn.__module__
        self.__qualname__ = getattr(fn, "__qualname__", fn.__name__)
        self.signature = inspect.signature(fn)
        self.params = list(self.signature.parameters.values())
        self.arg_names = [p.name for p in self.params]
        self.constexprs = {p.name for p in self.params if is_constexpr_annotation(p.annotation)}
        self.do_not_specialize = {self._param_name(p) for p in do_not_specialize}
        self.debug = debug
        self._parsed: ParsedSource | None = None
        self._cache_key: str | None = None
        self.compiled: dict = {}  # specialisation key -> CompiledKernel
        self._plain = all(p.kind == p.POSITIONAL_OR_KEYWORD for p in self.params)
        self.arg_index = {name: i for i, name in enumerate(self.arg_names)}  # parameter -> position
        self._defaults = [p.default if p.default is not p.empty else _MISSING for p in self.params]
        self._plans = plans.Plans(self)

    def _param_name(self, p) -> str:
        return self.arg_names[p] if isinstance(p, int) else p

    @property
    def parsed(self) -> ParsedSource:
        if self._parsed is None:
            self._parsed = ParsedSource.of(self.fn)
        return self._parsed

    @property
    def src(self) -> str:
        return "\n".join(self.parsed.lines)

    def _unsafe_update_src(self, new_src: str) -> None:
        """Triton's hook for tests that rewrite a kernel's text: compile `new_src` (same name and
        parameters) from now on; compiled specialisations of the old text are dropped."""
        lines = [line + "\n" for line in new_src.splitlines()]
        self._parsed = ParsedSource.from_lines(lines, self.parsed.first_line, self.parsed.file, self.__name__)
        self._cache_key = None
        self.compiled = {}
        self._plans = plans.Plans(self)

    @property
    def cache_key(self) -> str:
        """Hash of the source, its start line, and every closure and global value the source can read: the
        jit functions it calls (their own keys, also when reached as `module.function`), constexprs and
        plain Python constants."""
        if self._cache_key is None:
            h = hashlib.sha256(self.src.encode())
            h.update(str(self.parsed.first_line).encode())
            cells = zip(self.fn.__code__.co_freevars, self.fn.__closure__ or ())
            closure = {name: cell.cell_contents for name, cell in cells if _filled(cell)}
            for name in sorted(set(re.findall(r"[A-Za-z_][A-Za-z0-9_]*", self.src))):
                value = closure[name] if name in closure else self.fn.__globals__.get(name, _MISSING)
                if isinstance(value, types.ModuleType) and value.__name__.partition(".")[0] in _COMPILER_MODULES:
                    continue  # tl.* and the like: the compiler's own sources are in its fingerprint
                if isinstance(value, types.ModuleType):
                    for attr in sorted(set(re.findall(rf"\b{name}\s*\.\s*([A-Za-z_][A-Za-z0-9_]*)", self.src))):
                        h.update(f"{name}.{attr}={self._key_text(getattr(value, attr, None))}".encode())
                else:
                    h.update(f"{name}={self._key_text(value)}".encode())
            self._cache_key = h.hexdigest()
        return self._cache_key

    def _key_text(self, value) -> str:
        """What a value read by the kernel contributes to its cache key ('' for what cannot change the IR)."""
        if value is self or value is _MISSING:
            return ""
        if getattr(value, "is_wavetile_jit", False):
            return value.cache_key
        if isinstance(value, type) and getattr(value, "__wavetile_aggregate__", False):
            return _aggregate_key(value)
        value = value.value if isinstance(value, constexpr) else value
        if isinstance(value, (bool, int, float, str, T.dtype, type(None))) or (
                isinstance(value, tuple) and all(isinstance(v, (bool, int, float, str)) for v in value)):
            return f"{type(value).__name__}:{value!r}"
        return ""

    def __call__(self, *args, **kwargs):
        if eager_active():
            return self.fn(*args, **kwargs)  # eager mode: nested @jit functions run as plain Python
        raise RuntimeError(f"{self.__name__} is a @jit kernel: launch it as {self.__name__}[grid](...); "
                           "it can be called directly only from another @jit function")

    def __getitem__(self, grid) -> Callable:
        return lambda *args, **kwargs: self.run(*args, grid=grid, **kwargs)

    def __repr__(self) -> str:
        return f"JITFunction({self.__module__}:{self.__qualname__})"

    # -- specialisation
    def bind(self, args, kwargs) -> tuple[dict, dict, list]:
        """Split a call into (signature, launch options, runtime argument values): jit.launch.bind's launch
        object, as the parts tools read."""
        bound = launch.bind(self, args, kwargs)
        return bound.signature, bound.options, bound.runtime

    def bind_values(self, args: tuple, kwargs: dict, ignore: frozenset = frozenset()) -> list | None:
        """Every parameter's value in order, bound without inspect (launch overhead); keyword arguments named in
        `ignore` are skipped. None when the call is not a plain one: inspect then binds it, or says why not."""
        if not self._plain or len(args) > len(self.arg_names):
            return None
        values = list(args) + [_MISSING] * (len(self.arg_names) - len(args))
        for name, value in kwargs.items():
            i = self.arg_index.get(name)
            if i is None:
                if name not in ignore:
                    return None
                continue
            if i < len(args):
                return None
            values[i] = value
        for i in range(len(args), len(values)):
            if values[i] is _MISSING:
                values[i] = self._defaults[i]
                if values[i] is _MISSING:
                    return None
        return values

    def run(self, *args, grid, **kwargs):
        """Launch: a plan's fast path when this specialisation ran before (jit.plans), else bind the call
        once into a launch object (jit.launch) and hand it to the router (jit.launcher)."""
        kernel = self._plans.launch(args, kwargs, grid)
        if kernel is not None:
            return kernel
        bound = launch.bind(self, args, kwargs, grid)
        result = launcher.run(bound)
        if bound.kernel is not None:  # compiled code ran: a repeat of this call can take the plan
            self._plans.remember(args, kwargs, bound.kernel, bound.runtime)
        return result

    def get_compiled(self, signature: dict, options: compiler.Options, divisibility: tuple = ()):
        """The compiled specialisation; like Triton's, it is keyed on which ints and pointers are 16-divisible."""
        key = (tuple(map(_key_of, signature.values())), options, divisibility)  # values come in parameter order
        kernel = self.compiled.get(key)
        if kernel is None:
            kernel = compiler.compile(self, signature, options, divisibility)
            kernel.metadata["divisible_by_16"] = divisibility
            self.compiled[key] = kernel
        return kernel

    def divisibility(self, runtime: list) -> tuple[str, ...]:
        """Names of integer arguments divisible by 16 and pointers aligned to 16 bytes (Triton's "D" key)."""
        return launch.divisibility(runtime, self.do_not_specialize)

    def warmup(self, *args, grid=None, **kwargs):
        """Compile for these arguments without running; returns the CompiledKernel."""
        return launch.bind(self, args, kwargs).compiled()


def _filled(cell) -> bool:
    """Whether a closure cell holds a value yet (a function defined before a name it captures is bound)."""
    try:
        _ = cell.cell_contents
    except ValueError:
        return False
    return True


def _key_of(value):
    if type(value) is TileType:
        return value
    if isinstance(value, T.dtype):
        return ("dtype", value.name)
    if getattr(value, "is_wavetile_jit", False):
        return ("fn", value.cache_key)
    try:
        hash(value)
        return ("c", type(value).__name__, value)
    except TypeError:
        return ("r", repr(value))


def jit(fn: Callable | None = None, **options):
    """Decorator: `@jit` or `@jit(do_not_specialize=[...])`."""
    if fn is None:
        return lambda f: JITFunction(f, **options)
    return JITFunction(fn, **options)


def cdiv(x: int, div: int) -> int:
    return (x + div - 1) // div


def next_power_of_2(n: int) -> int:
    n = int(n)
    return 1 if n <= 1 else 1 << (n - 1).bit_length()
