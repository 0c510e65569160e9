"""`@autotune`, `Config` and `@heuristics`, with Triton's signatures and semantics.

    @autotune(configs=[Config({"BLOCK": 64}, num_warps=2), Config({"BLOCK": 256})], key=["n"])
    @heuristics({"EVEN": lambda args: args["n"] % args["BLOCK"] == 0})
    @jit
    def kernel(x_ptr, n, BLOCK: tl.constexpr, EVEN: tl.constexpr): ...

On the first launch for a new key (the values of the `key` arguments plus the dtype of every array
argument) every config is launched once and scored; the best one is kept and used until the key
changes. The score is the modeled time on the current machine (the default, `objective="model"`)
or the measured CPU time (`objective="cpu"`). Ties go to the config listed first.

Differences from Triton, and why:
- After tuning, `reset_to_zero` and `restore_value` arguments get back the values they had before
  the call, then the chosen config runs once: the call computes what one launch of that config
  would have computed (Triton leaves the last trial's output in `reset_to_zero` tensors).
- The choice is cached on disk by default (Triton needs `cache_results=True`): tuning is a sweep of
  compiles here, worth keeping. `cache_results=False` or WAVETILE_AUTOTUNE_CACHE=0 turns it off.
- `model_top_k=k` with `objective="cpu"`: rank every config by modeled time first and time only
  the best k on the CPU (model-guided search).

How a candidate is scored (`Trial`, which wavetile-tune shares): it is compiled first (outside any
timing), then with the model objective run once through the launcher's model_launch from a cold
emulated L2 and once normally (its CPU time, for the records) (large grids run a sample of programs; the record says
`sampled`); with the CPU objective timed a few times (median), or with `do_bench(fn)` if given
(milliseconds, like Triton's). Inputs are zeroed / restored before every run.

The cache key: kernel source hash (`JITFunction.cache_key`), key values and argument dtypes,
the machine (name and every spec field), the objective, the config list and the compiler's and simulator's
sources (`jit.compiler.model_fingerprint`: a pick of an older model is not reused). `kernel.cache_hit` says where
the last launch's choice came from.

WAVETILE_AUTOTUNE_PRINT=1 prints the chosen config and the table of candidates after each tuning.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import inspect
import json
import math
import statistics
import sys
import time
import warnings
from collections.abc import Callable, Iterator, Mapping, Sequence

import numpy as np

from jit import cache, env

OBJECTIVES = ("model", "cpu")
PRINT_ENV = "WAVETILE_AUTOTUNE_PRINT"
CACHE_ENV = "WAVETILE_AUTOTUNE_CACHE"
_LAUNCH_FIELDS = ("num_warps", "num_stages", "num_ctas", "maxnreg")


class AutotuneWarning(UserWarning):
    """A config failed during tuning (it is skipped), or the model objective had to fall back."""


class Config:
    """One point of the search space: meta-parameters plus launch options (Triton's `triton.Config`)."""

    def __init__(self, kwargs: Mapping[str, object], num_warps: int = 4, num_stages: int = 3, num_ctas: int = 1,
                 maxnreg: int | None = None, pre_hook: Callable | None = None, ir_override: str | None = None):
        self.kwargs = dict(kwargs)
        self.num_warps = num_warps
        self.num_stages = num_stages
        self.num_ctas = num_ctas
        self.maxnreg = maxnreg
        self.pre_hook = pre_hook
        self.ir_override = ir_override

    def all_kwargs(self) -> dict[str, object]:
        """Meta-parameters and the launch options that are set, as keyword arguments of a launch."""
        options = {name: getattr(self, name) for name in _LAUNCH_FIELDS if getattr(self, name) is not None}
        return {**self.kwargs, **options}

    def to_dict(self) -> dict[str, object]:
        """JSON-ready form (the pre_hook is not stored)."""
        return {"kwargs": dict(self.kwargs), **{name: getattr(self, name) for name in _LAUNCH_FIELDS}}

    @classmethod
    def from_dict(cls, data: Mapping[str, object]) -> Config:
        return cls(data["kwargs"], **{name: data[name] for name in _LAUNCH_FIELDS if name in data})

    def _identity(self) -> tuple:
        return (tuple(sorted((k, repr(v)) for k, v in self.kwargs.items())),
                tuple(getattr(self, name) for name in _LAUNCH_FIELDS))

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Config) and self._identity() == other._identity()

    def __hash__(self) -> int:
        return hash(self._identity())

    def __str__(self) -> str:
        parts = [f"{k}: {v}" for k, v in self.kwargs.items()]
        parts += [f"{name}: {getattr(self, name)}" for name in _LAUNCH_FIELDS
                  if getattr(self, name) is not None and not (name == "num_ctas" and self.num_ctas == 1)]
        return ", ".join(parts)

    def __repr__(self) -> str:
        return f"Config({self})"


@dataclasses.dataclass
class TuningRecord:
    """One candidate's result. Seconds are inf when the config failed (`error` says why)."""

    config: Config
    modeled_seconds: float = math.inf
    cpu_seconds: float = math.inf
    bound: str = ""
    occupancy: float = math.nan
    l2_hit_rate: float = math.nan
    bank_conflicts: float = math.nan
    sampled: bool = False
    error: str = ""

    @property
    def ok(self) -> bool:
        return not self.error

    def to_dict(self) -> dict[str, object]:
        data = dataclasses.asdict(self)
        data["config"] = self.config.to_dict()
        return data

    @classmethod
    def from_dict(cls, data: Mapping[str, object]) -> TuningRecord:
        return cls(**{**data, "config": Config.from_dict(data["config"])})


def heuristics(values: Mapping[str, Callable[[dict], object]]) -> Callable:
    """Decorator computing meta-parameters from the other arguments before each launch (Triton's)."""

    def decorator(fn):
        return Heuristics(fn, _arg_names(fn), values)

    return decorator


def autotune(configs: Sequence[Config], key: Sequence[str], prune_configs_by: Mapping | None = None,
             reset_to_zero: Sequence[str] | None = None, restore_value: Sequence[str] | None = None,
             pre_hook: Callable | None = None, post_hook: Callable | None = None, warmup=None, rep=None,
             use_cuda_graph: bool = False, do_bench: Callable | None = None, cache_results: bool | None = None, *,
             objective: str = "model", model_top_k: int | None = None) -> Callable:
    """Decorator: pick the best of `configs` for each value of the `key` arguments (Triton's signature).

    prune_configs_by: {"early_config_prune": f(configs, named_args, **kwargs) -> configs,
    "perf_model": f(**named_args, **kwargs, **config.all_kwargs()) -> estimated time, "top_k": int or fraction};
    `perf_model="model"` uses the simulator's modeled time as the performance model.
    pre_hook(args, reset_only=False) / post_hook(args, exception) replace the reset/restore hooks.
    `warmup`, `rep`, `use_cuda_graph` are accepted for compatibility and ignored (as in Triton, deprecated).
    """
    if warmup is not None or rep is not None or use_cuda_graph:
        warnings.warn("autotune: warmup, rep and use_cuda_graph are deprecated and ignored", DeprecationWarning,
                      stacklevel=2)

    def decorator(fn):
        return Autotuner(fn, _arg_names(fn), configs, key, reset_to_zero, restore_value, pre_hook=pre_hook,
                         post_hook=post_hook, prune_configs_by=prune_configs_by, do_bench=do_bench,
                         cache_results=cache_results, objective=objective, model_top_k=model_top_k)

    return decorator


def _arg_names(fn) -> list[str]:
    names = getattr(fn, "arg_names", None)
    if names is None:
        raise TypeError(f"expected a @jit kernel (or @heuristics / @autotune over one), got {fn!r}")
    return list(names)


class KernelWrapper:
    """What Heuristics and Autotuner share: launch by indexing with a grid, and the underlying kernel."""

    fn: object
    arg_names: list[str]

    def __getitem__(self, grid) -> Callable:
        return lambda *args, **kwargs: self.run(*args, grid=grid, **kwargs)

    def __call__(self, *args, **kwargs):
        raise RuntimeError(f"{self.__name__} is a kernel: launch it as {self.__name__}[grid](...)")

    def run(self, *args, grid, **kwargs):  # pragma: no cover - overridden
        raise NotImplementedError

    @property
    def jit_function(self):
        """The @jit kernel at the bottom of the decorator stack."""
        fn = self.fn
        while isinstance(fn, KernelWrapper):
            fn = fn.fn
        return fn

    @property
    def base_fn(self) -> Callable:
        """The plain Python function (Triton's `base_fn`)."""
        return self.jit_function.fn

    @property
    def __name__(self) -> str:  # type: ignore[override]
        return self.jit_function.__name__

    @property
    def cache_key(self) -> str:
        return self.jit_function.cache_key

    @property
    def src(self) -> str:
        return self.jit_function.src

    def named_args(self, args: tuple, kwargs: Mapping[str, object]) -> dict[str, object]:
        """Positional and keyword arguments by parameter name (defaults of the kernel filled in)."""
        named = dict(zip(self.arg_names, args))
        named.update(kwargs)
        for p in self.jit_function.params:
            if p.name not in named and p.default is not inspect.Parameter.empty:
                named[p.name] = p.default
        return named


class Heuristics(KernelWrapper):
    """Computes meta-parameters from the arguments, then launches the wrapped kernel."""

    def __init__(self, fn, arg_names: list[str], values: Mapping[str, Callable[[dict], object]]):
        self.fn = fn
        self.arg_names = arg_names
        self.values = dict(values)

    def _with_values(self, args, kwargs) -> dict:
        kwargs = dict(kwargs)
        for name, rule in self.values.items():
            try:
                kwargs[name] = rule(self.named_args(args, kwargs))
            except Exception as e:
                raise type(e)(f"{self.__name__}: the heuristic for {name!r} raised {type(e).__name__}: {e}") from e
        return kwargs

    def run(self, *args, grid, **kwargs):
        return self.fn.run(*args, grid=grid, **self._with_values(args, kwargs))

    def warmup(self, *args, grid=None, **kwargs):
        return self.fn.warmup(*args, grid=grid, **self._with_values(args, kwargs))

    def __repr__(self) -> str:
        return f"Heuristics({self.fn!r}, {sorted(self.values)})"


class Autotuner(KernelWrapper):
    """The object `@autotune` returns; launch it like the kernel it wraps."""

    def __init__(self, fn, arg_names: list[str], configs: Sequence[Config], key: Sequence[str],
                 reset_to_zero: Sequence[str] | None = None, restore_value: Sequence[str] | None = None, *,
                 pre_hook: Callable | None = None, post_hook: Callable | None = None,
                 prune_configs_by: Mapping | None = None, do_bench: Callable | None = None,
                 cache_results: bool | None = None, objective: str = "model", model_top_k: int | None = None):
        if objective not in OBJECTIVES:
            raise ValueError(f"autotune: objective must be one of {OBJECTIVES}, got {objective!r}")
        self.fn = fn
        self.arg_names = arg_names
        self.configs = list(configs) if configs else [Config({})]
        unknown = [k for k in key if k not in arg_names]
        if unknown:
            raise ValueError(f"autotune: key {unknown} names no argument of {fn.__name__} ({arg_names})")
        self.keys = list(key)
        self.reset_to_zero = list(reset_to_zero or [])
        self.restore_value = list(restore_value or [])
        for name in self.reset_to_zero + self.restore_value:
            if name not in arg_names:
                raise ValueError(f"autotune: {name!r} is not an argument of {fn.__name__}")
        self.user_pre_hook, self.user_post_hook = pre_hook, post_hook
        prune = dict(prune_configs_by or {})
        self.early_config_prune = prune.get("early_config_prune")
        self.perf_model = prune.get("perf_model")
        self.configs_top_k = prune.get("top_k", 1.0)
        self.do_bench = do_bench
        self.cache_results = cache_results
        self.objective = objective
        self.model_top_k = model_top_k
        # the config an untuned launch runs (under capture_launches), from the named arguments; None: the first
        self.default_rule: Callable[[Mapping[str, object]], Config] | None = None
        self.cache: dict[tuple, Config] = {}
        self.records_by_key: dict[tuple, list[TuningRecord]] = {}
        self.best_config: Config | None = None
        self.configs_timings: dict[Config, float] | None = None
        self.records: list[TuningRecord] = []
        self.last_key: tuple | None = None
        self.cache_hit: str | None = None  # None (tuned now), "memory" or "disk" for the last launch
        self.nargs: dict | None = None

    def __repr__(self) -> str:
        return f"Autotuner({self.fn!r}, {len(self.configs)} configs, key={self.keys})"

    # -- launching
    def run(self, *args, grid, **kwargs):
        if _CAPTURED is not None:
            return self._run_captured(args, kwargs, grid)
        named = self.named_args(args, kwargs)
        self.nargs = named
        machine = kwargs.get("machine")
        key = self.tuning_key(named, machine)
        self.last_key = key
        if key in self.cache:
            self.cache_hit = "memory"
        else:
            self.cache_hit = None
            stored = self._load(key, machine) if self._disk_enabled() else None
            if stored is not None:
                self.cache[key], self.records_by_key[key] = stored
                self.cache_hit = "disk"
            else:
                self.cache[key] = self._tune(key, args, kwargs, named, grid, machine)
        config = self.cache[key]
        self.best_config = config
        self.records = self.records_by_key.get(key, [])
        self.configs_timings = {r.config: self._score(r) for r in self.records}
        if self.cache_hit is None and env.get(PRINT_ENV) == "1":
            print(self.report(), file=sys.stdout, flush=True)
        full = self._launch_kwargs(kwargs, config)
        if config.pre_hook is not None:
            config.pre_hook(self.named_args(args, full))
        return self.fn.run(*args, grid=grid, **full)

    def default_config(self, args: tuple, kwargs: Mapping[str, object]) -> Config:
        """The config an untuned launch of these arguments runs: `default_rule`'s, else the first."""
        if self.default_rule is None:
            return self.configs[0]
        return self.default_rule(self.named_args(tuple(args), dict(kwargs)))

    def _run_captured(self, args, kwargs, grid):
        """Inside capture_launches(): run the default config untuned and record the launch."""
        before = tuple(strided_copy(a) if isinstance(a, np.ndarray) else a for a in args)
        kw_before = {k: (strided_copy(v) if isinstance(v, np.ndarray) else v) for k, v in kwargs.items()}
        config = self.default_config(args, kwargs)
        result = self.fn.run(*args, grid=grid, **self._launch_kwargs(kwargs, config))
        live = self.named_args(args, kwargs)
        old = self.named_args(before, kw_before)
        changed = [n for n, v in live.items() if isinstance(v, np.ndarray) and not _same_contents(v, old[n])]
        # arrays the launch did not change are kept by reference: a model's weights are not copied per launch
        names = list(self.arg_names)
        before = tuple(b if isinstance(b, np.ndarray) and names[i] in changed else a
                       for i, (a, b) in enumerate(zip(args, before)))
        kw_before = {k: (v if k in changed else kwargs[k]) for k, v in kw_before.items()}
        _CAPTURED.append(CapturedLaunch(self, before, kw_before, grid, changed))
        return result

    def warmup(self, *args, grid=None, **kwargs):
        """Compile every (pruned) config for these arguments; returns the compiled kernels."""
        named = self.named_args(args, kwargs)
        configs = self.configs
        if self.early_config_prune is not None:
            configs = list(self.early_config_prune(configs, named, **kwargs))
        return [self.fn.warmup(*args, grid=grid, **self._launch_kwargs(kwargs, c)) for c in configs]

    def tuning_key(self, named: Mapping[str, object], machine=None) -> tuple:
        """Key values, then the dtype of every argument with one, then the machine and objective."""
        values = tuple(_hashable(named.get(k)) for k in self.keys)
        dtypes = tuple(str(v.dtype) for v in named.values() if hasattr(v, "dtype") and not np.isscalar(v))
        return values + dtypes + (_machine_name(machine), self.objective)

    def _launch_kwargs(self, kwargs: Mapping, config: Config) -> dict:
        clash = sorted(set(kwargs) & set(config.kwargs))  # launch options given by the caller are overridden
        if clash:
            raise ValueError(f"Conflicting meta-parameters: {', '.join(clash)}. Make sure that you don't re-define "
                             "auto-tuned symbols.")
        return {**kwargs, **config.all_kwargs()}

    # -- pruning
    def prune_configs(self, kwargs, named, args=(), grid=None, saved=None) -> list[Config]:
        configs = list(self.configs)
        if self.early_config_prune is not None:
            configs = list(self.early_config_prune(configs, named, **kwargs))
            if not configs:
                raise RuntimeError(f"autotune {self.__name__}: early_config_prune removed every config")
        if self.perf_model is not None:
            top_k = self.configs_top_k
            if isinstance(top_k, float) and top_k <= 1.0:
                top_k = int(len(configs) * top_k)
            top_k = max(1, int(top_k))
            if len(configs) > top_k:
                if self.perf_model == "model":
                    estimates = [self._modeled(args, kwargs, c, grid, saved or {}) for c in configs]
                else:
                    estimates = [self.perf_model(**{**named, **kwargs, **c.all_kwargs()}) for c in configs]
                order = sorted(range(len(configs)), key=lambda i: (estimates[i], i))
                configs = [configs[i] for i in order[:top_k]]
        return configs

    def _modeled(self, args, kwargs, config, grid, saved) -> float:
        """Modeled seconds of one launch (perf_model="model"); inf if it fails."""
        rec = TuningRecord(config)
        self._trial(rec, args, kwargs, config, grid, "model", saved)
        return rec.modeled_seconds

    # -- tuning
    def _tune(self, key, args, kwargs, named, grid, machine) -> Config:
        for c in self.configs:
            self._launch_kwargs(kwargs, c)  # raises on a clash before anything runs
        saved = self._save_args(named)
        try:
            configs = self.prune_configs(kwargs, named, args, grid, saved)
        finally:
            self._restore(named, saved, zero=False)
        if len(configs) == 1:
            self.records_by_key[key] = [TuningRecord(configs[0])]
            return configs[0]
        records = [TuningRecord(c) for c in configs]
        try:
            guided = self.objective == "cpu" and self.model_top_k is not None and len(configs) > self.model_top_k
            if guided:
                for rec in records:
                    self._trial(rec, args, kwargs, rec.config, grid, "model-only", saved)
                ranked = sorted(range(len(records)), key=lambda i: (records[i].modeled_seconds, i))
                for i in sorted(ranked[:max(1, self.model_top_k)]):
                    self._trial(records[i], args, kwargs, records[i].config, grid, "cpu", saved)
            else:
                for rec in records:
                    self._trial(rec, args, kwargs, rec.config, grid, self.objective, saved)
        finally:
            self._restore(named, saved, zero=False)
        self.records_by_key[key] = records
        failed = [r for r in records if not r.ok]
        for r in failed:
            warnings.warn(f"autotune {self.__name__}: config {r.config} skipped: {r.error}", AutotuneWarning,
                          stacklevel=4)
        if len(failed) == len(records):
            raise RuntimeError(f"autotune {self.__name__}: every config failed:\n" +
                               "\n".join(f"  {r.config}: {r.error}" for r in records))
        best = min(range(len(records)), key=lambda i: (self._score(records[i]), i))
        if self._disk_enabled():
            self._store(key, machine, records[best].config, records)
        return records[best].config

    def _score(self, rec: TuningRecord) -> float:
        if not rec.ok:
            return math.inf
        return rec.cpu_seconds if self.objective == "cpu" else rec.modeled_seconds

    def _save_args(self, named) -> dict[str, np.ndarray]:
        saved = {}
        for name in dict.fromkeys(self.reset_to_zero + self.restore_value):
            value = named.get(name)
            if value is not None:
                saved[name] = _array_of(value, name).copy()
        return saved

    def _restore(self, named, saved, zero: bool) -> None:
        for name, copy in saved.items():
            target = _array_of(named[name], name)
            if zero and name in self.reset_to_zero:
                target[...] = 0
            else:
                target[...] = copy

    def _trial(self, rec: TuningRecord, args, kwargs, config: Config, grid, objective: str, saved) -> None:
        """Launch `config` once (model) or a few times (cpu) and fill `rec`; failures land in `rec.error`."""
        named = self.named_args(args, kwargs)
        full = {**kwargs, **config.all_kwargs()}
        full_named = self.named_args(args, full)

        def prepare() -> tuple:
            if self.user_pre_hook is not None:
                self.user_pre_hook(full_named, reset_only=False)
            else:
                self._restore(named, saved, zero=True)
            if config.pre_hook is not None:
                config.pre_hook(full_named)
            return args

        def finish(exc):
            if self.user_post_hook is not None:
                self.user_post_hook(full_named, exc)
            else:
                self._restore(named, saved, zero=False)

        trial = Trial(self.fn, args, full, grid, inputs=prepare, done=finish, do_bench=self.do_bench)
        if objective == "cpu":
            trial.run(rec, model=False, runs=3, more_runs=7, budget=0.2)
        else:  # one plain run for the records' CPU time, unless only the model is wanted
            trial.run(rec, model=True, runs=1 if objective == "model" else 0)

    # -- reporting
    def report(self) -> str:
        """The chosen config and the table of candidates of the last key (what WAVETILE_AUTOTUNE_PRINT shows)."""
        head = f"autotune {self.__name__} key={self.last_key}: best config {self.best_config}"
        return head + "\n" + format_table(self.records, self.objective)

    # -- disk cache
    def _disk_enabled(self) -> bool:
        if self.cache_results is False or env.get(CACHE_ENV, "1") == "0":
            return False
        return True

    def _disk_key(self, key: tuple, machine) -> str:
        from jit.compiler import model_fingerprint

        parts = [self.cache_key, [repr(k) for k in key], machine_fingerprint(machine), self.objective,
                 model_fingerprint(), self.model_top_k, [repr(c) for c in self.configs],
                 self.configs_top_k if self.perf_model is not None else None]
        return hashlib.sha256(json.dumps(parts, default=str).encode()).hexdigest()

    def _load(self, key, machine) -> tuple[Config, list[TuningRecord]] | None:
        files = cache.get(self._disk_key(key, machine))
        if not files or "autotune.json" not in files:
            return None
        try:
            data = json.loads(files["autotune.json"])
            best = Config.from_dict(data["best"])
            records = [TuningRecord.from_dict(r) for r in data["records"]]
        except (ValueError, KeyError, TypeError):
            return None
        match = next((c for c in self.configs if c == best), None)  # keep the config's pre_hook
        return (match or best), records

    def _store(self, key, machine, best: Config, records: list[TuningRecord]) -> None:
        data = {"kernel": self.__name__, "key": [repr(k) for k in key], "objective": self.objective,
                "best": best.to_dict(), "records": [r.to_dict() for r in records]}
        cache.put(self._disk_key(key, machine), {"autotune.json": json.dumps(data, default=_json_default).encode()})


@dataclasses.dataclass
class CapturedLaunch:
    """One autotuned launch seen by capture_launches(): inputs as they were before it (copies of the arrays it
    changed; the others by reference), and what it wrote."""

    kernel: Autotuner
    args: tuple
    kwargs: dict
    grid: object
    changed: list[str]  # names of the array arguments whose contents the launch changed


_CAPTURED: list[CapturedLaunch] | None = None


@contextlib.contextmanager
def capture_launches() -> Iterator[list[CapturedLaunch]]:
    """Inside the block, autotuned kernels run their default config without tuning, and each launch is
    recorded: how wavetile-tune turns a call of a library host function into a sweep problem."""
    global _CAPTURED
    previous, _CAPTURED = _CAPTURED, []
    try:
        yield _CAPTURED
    finally:
        _CAPTURED = previous


def strided_copy(array: np.ndarray, alignment: int = 1) -> np.ndarray:
    """A copy of `array` with its strides (a view into a fresh buffer spanning it), starting at a multiple of
    `alignment` bytes: a launch that was given a strided view (a slice of a larger projection output) and
    passes its strides as scalars reads the copy exactly as it read the original."""
    strides_ok = all(s >= 0 and s % array.itemsize == 0 for s in array.strides)
    if array.size == 0 or array.flags.c_contiguous or not strides_ok:
        shape, strides = array.shape, None
        span = array.nbytes
    else:
        shape, strides = array.shape, array.strides
        span = sum((n - 1) * s for n, s in zip(array.shape, array.strides)) + array.itemsize
    raw = np.empty(span + alignment, dtype=np.uint8)
    start = -raw.ctypes.data % alignment
    flat = raw[start:start + span].view(array.dtype)
    copy = flat.reshape(shape) if strides is None else np.lib.stride_tricks.as_strided(flat, shape, strides)
    copy[...] = array
    return copy


def _same_contents(a: np.ndarray, b: np.ndarray) -> bool:
    """Equal arrays (NaN equal to NaN); extension floats (bfloat16, fp8) compare as their bits, since numpy
    compares them element by element through Python-level casts (seconds for a real-size weight matrix)."""
    if a.dtype.kind not in "biufc" and a.itemsize in (1, 2, 4, 8) and a.dtype == b.dtype:
        return np.array_equal(a.view(f"u{a.itemsize}"), b.view(f"u{b.itemsize}"))
    return np.array_equal(a, b, equal_nan=True)


def capturing() -> bool:
    """True inside `capture_launches()`: host functions then launch their @autotune kernels, to be captured."""
    return _CAPTURED is not None


def fill_from_launch(rec: TuningRecord, launch) -> None:
    """Copy the simulator's figures of one launch (a LaunchRecord) into `rec`."""
    rec.modeled_seconds = float(launch.modeled_seconds)
    rec.bound = launch.bound
    rec.sampled = bool(getattr(launch, "sampled", False))
    rec.occupancy = float(getattr(launch, "occupancy", math.nan))
    counters = launch.counters or {}
    rec.l2_hit_rate = float(counters.get("l2_hit_rate", math.nan))
    rec.bank_conflicts = float(counters.get("shared_bank_conflicts", math.nan))


def format_table(records: Sequence[TuningRecord], objective: str = "model") -> str:
    """Candidates ranked best first: config, modeled time, bound, occupancy, L2 hit rate, conflicts, CPU time."""
    def score(r):
        return (math.inf if not r.ok else (r.cpu_seconds if objective == "cpu" else r.modeled_seconds))
    order = sorted(range(len(records)), key=lambda i: (score(records[i]), i))
    header = ("#", "config", "modeled us", "bound", "occupancy", "L2 hit", "bank confl", "CPU ms")
    rows = []
    for rank, i in enumerate(order, 1):
        r = records[i]
        if not r.ok:
            rows.append((str(rank), str(r.config), "failed", _last_line(r.error)[:80], "", "", "", ""))
            continue
        rows.append((str(rank), str(r.config), _num(r.modeled_seconds * 1e6, "{:.2f}") + ("~" if r.sampled else ""),
                     r.bound, _num(r.occupancy, "{:.2f}"), _num(r.l2_hit_rate, "{:.2f}"),
                     _num(r.bank_conflicts, "{:.0f}"), _num(r.cpu_seconds * 1e3, "{:.3f}")))
    widths = [max(len(h), *(len(row[j]) for row in rows)) if rows else len(h) for j, h in enumerate(header)]
    lines = ["  ".join(h.ljust(w) for h, w in zip(header, widths))]
    lines += ["  ".join(c.ljust(w) for c, w in zip(row, widths)) for row in rows]
    return "\n".join(lines)


def _last_line(text: str) -> str:
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return lines[-1] if lines else ""


def _num(value: float, fmt: str) -> str:
    return "-" if value is None or (isinstance(value, float) and (math.isnan(value) or math.isinf(value))) \
        else fmt.format(value)


def machine_fingerprint(machine=None) -> list:
    """Name and every compared field of the machine spec, stable across processes."""
    from simulator.specs import current_spec

    spec = current_spec(machine)
    fields = {}
    for f in dataclasses.fields(spec):
        if f.compare:
            value = getattr(spec, f.name)
            fields[f.name] = dict(sorted(value.items())) if isinstance(value, Mapping) else value
    return [spec.name, json.dumps(fields, sort_keys=True, default=str)]


def _machine_name(machine) -> str:
    from simulator.specs import current_spec

    return current_spec(machine).name


def _hashable(value):
    try:
        hash(value)
        return value
    except TypeError:
        return repr(value)


def _array_of(value, name: str) -> np.ndarray:
    if isinstance(value, np.ndarray):
        return value
    if hasattr(value, "__dlpack__"):
        return np.from_dlpack(value)
    raise TypeError(f"autotune: argument {name} must be an array to be reset or restored, got {type(value).__name__}")


def _json_default(value):
    if isinstance(value, (np.integer, np.floating)):
        return value.item()
    return str(value)


def run_recorded(fn, args: tuple, kwargs: Mapping, grid, cold_l2: bool = True):
    """Model one launch on the current machine and return its simulator LaunchRecord. Large grids run a
    sample of programs (outputs are then partly computed: callers restore what they need). cold_l2:
    empty the emulated L2 first, so every candidate starts from the same state (the model's L2
    otherwise carries over between launches; Triton's do_bench flushes L2 before each timing for the
    same reason)."""
    import simulator
    from jit import launcher

    kwargs = dict(kwargs)
    while isinstance(fn, Heuristics):  # model_launch takes the @jit function: apply the heuristics here
        kwargs = fn._with_values(args, kwargs)
        fn = fn.fn
    if cold_l2:
        simulator.reset_device_l2()
    return launcher.model_launch(fn, grid, *args, **kwargs)


@dataclasses.dataclass
class Trial:
    """One config tried on one launch: compiled outside any timing, modeled once from a cold emulated L2
    (`run_recorded`), timed on plain runs (median). The autotuner and wavetile-tune (jit.tune) both run
    configs through it; they differ only in how each run gets its inputs (`inputs`: arrays restored in
    place, or fresh copies) and what follows a run (`done`: restore, a user's post-hook)."""

    fn: object  # what launches: a @jit or @heuristics kernel
    args: tuple  # the call's arguments (the compile binds these)
    kwargs: Mapping  # constexprs and launch options: the config's over the call's
    grid: object
    inputs: Callable[[], tuple] | None = None  # the arguments of each run (default: `args`)
    done: Callable[[BaseException | None], None] | None = None  # after each run; with the error of a failed trial
    do_bench: Callable | None = None  # Triton's do_bench(fn) -> milliseconds, to time with instead of the loop

    def run(self, rec: TuningRecord, *, model: bool, runs: int = 0, more_runs: int = 0,
            budget: float = 0.0) -> tuple | None:
        """Fill `rec`: the modeled launch when `model`; the median CPU seconds of `runs` plain runs, and of up
        to `more_runs` more while `budget` seconds last. Returns the arguments of the last plain run (None when
        none ran or the trial failed); a failure is recorded in `rec.error`, never raised."""
        try:
            self.fn.warmup(*self.args, grid=self.grid, **self.kwargs)  # compile outside the timed region
            if model:
                launch = run_recorded(self.fn, self._inputs(), self.kwargs, self.grid)
                self._done(None)
                fill_from_launch(rec, launch)
            return self._time(rec, runs, more_runs, budget) if runs else None
        except Exception as e:  # noqa: BLE001 - a failing config is skipped and reported, never fatal
            rec.error = f"{type(e).__name__}: {e}".strip()
            rec.modeled_seconds = rec.cpu_seconds = math.inf
            try:
                self._done(e)
            except Exception:  # noqa: BLE001 - the config already failed; its restore error is secondary
                pass
            return None

    def _time(self, rec: TuningRecord, runs: int, more_runs: int, budget: float) -> tuple | None:
        if self.do_bench is not None:
            def call():
                self._run_once()
            rec.cpu_seconds = float(self.do_bench(call)) / 1e3  # Triton's do_bench returns milliseconds
            return None
        times, last = [], None
        deadline = time.perf_counter() + budget
        while len(times) < runs or (len(times) < runs + more_runs and time.perf_counter() < deadline):
            seconds, last = self._run_once()
            times.append(seconds)
        rec.cpu_seconds = statistics.median(times)
        return last

    def _run_once(self) -> tuple[float, tuple]:
        args = self._inputs()
        start = time.perf_counter()
        self.fn.run(*args, grid=self.grid, **self.kwargs)
        seconds = time.perf_counter() - start
        self._done(None)
        return seconds, args

    def _inputs(self) -> tuple:
        return self.args if self.inputs is None else self.inputs()

    def _done(self, exc: BaseException | None) -> None:
        if self.done is not None:
            self.done(exc)


__all__ = ["Autotuner", "AutotuneWarning", "CapturedLaunch", "Config", "Heuristics", "Trial", "TuningRecord",
           "autotune", "capture_launches", "capturing", "format_table", "heuristics", "machine_fingerprint",
           "run_recorded"]
