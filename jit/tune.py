"""`python -m jit.tune` (`wavetile-tune`): sweep a kernel's configs on one problem and rank them.

    wavetile-tune tutorials/05_autotuning.py:matmul_kernel M=512 N=512 K=512 --machine h200 --jobs 2 \
        --csv sweep.csv --json sweep.json
    wavetile-tune norm.rmsnorm --machine mtt-s5000 --save        # a kernel-library op

Targets:
- `module:name` or `path/file.py:name`, where `name` is a tune-problem factory or an @autotune / @jit
  kernel that a factory was registered for:

      @tune_problem(matmul_kernel, name="tutorial.matmul")
      def matmul_problem(M=512, N=512, K=512, dtype="float16") -> TuneProblem:
          a, b, c = ...                     # inputs from a fixed seed: every worker builds the same
          return TuneProblem(matmul_kernel, args=(a, b, c, M, N, K, ...), grid=lambda meta: (...),
                             outputs=["c_ptr"])

  `NAME=VALUE` words are passed to the factory.
- a kernel-library name: a factory registered under that name, or what `--library` (default
  `kernels.tuning:library_problem`) makes of it: for the op of a `kernels.registry` Case (e.g.
  `norm.rmsnorm`), its host function runs once with the autotuner capturing its launch instead of
  tuning; `shape=`, `case=`, `kernel=` pick the case and kernel.

The config space is the decorator's (`@autotune(configs=...)`), or the problem's `configs`, or the
command line: `--space BLOCK_M=32,64` repeated (the cartesian product; num_warps / num_stages are
launch options), or `--configs file.json` (a list of Config.to_dict() objects).

Every config is modeled once under the simulator (modeled time, bound, occupancy, L2 hit rate, bank
conflicts; large grids are sampled, marked `~`) and run `--cpu-runs` times for CPU time; its outputs
are compared with those of the first config that ran. The table is ranked by the objective
(`--objective model`, the default, or `cpu`); failing and mismatching configs go last.

Configs run in this process, in `--jobs` local worker processes, or on Dask (`--executor dask`: a new
LocalCluster of `--jobs` processes; `--executor dask://HOST:PORT`: a running scheduler). Workers get
the problem by name (target, sizes, library resolver, machine, seed, config), never compiled code, and
compile into their own cache (or `--shared-cache DIR`). Every result is stored in $WAVETILE_CACHE_DIR
as it arrives, so a sweep that was interrupted resumes where it stopped (`--fresh` runs all again).
A config that fails is reported as failed; a worker that dies has its task rerun on another.

`--save` stores the winner in the autotune disk cache ($WAVETILE_CACHE_DIR, see jit.cache) under
exactly the key the kernel's own `@autotune` computes for these arguments on this machine: the next
launch of that kernel with the same key values, argument dtypes, machine, objective, kernel source,
config list and compiler version uses the saved config without tuning (`kernel.cache_hit == "disk"`).
That is how a kernel library picks it up: nothing to change in its code. Saving needs an `@autotune`
kernel and the same objective as its decorator.
"""

from __future__ import annotations

import argparse
import contextlib
import csv
import importlib
import importlib.util
import itertools
import json
import math
import os
import sys
import time
from collections.abc import Callable, Sequence
from concurrent.futures import Executor, as_completed
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from jit import sweep_store
from jit.autotune import (
    Autotuner,
    Config,
    KernelWrapper,
    Trial,
    TuningRecord,
    format_table,
    strided_copy,
)
from jit.executors import local_pool, open_executor, threads_per_worker


@dataclass
class TuneProblem:
    """One problem to sweep: the kernel, its launch arguments, the grid and which arguments are outputs."""

    kernel: object  # an Autotuner, a Heuristics or a JITFunction
    args: tuple
    grid: object  # tuple or callable of the meta-parameters
    outputs: Sequence[str]  # argument names whose contents every config must reproduce
    kwargs: dict = field(default_factory=dict)  # fixed constexprs and scalars that are not tuned
    configs: Sequence[Config] | None = None  # the config space when the kernel has none of its own
    rtol: float = 1e-3
    atol: float = 1e-3
    description: str = ""  # what the table header says about the problem (default: the sizes given)
    modeled_only: bool = False  # only the modeled launch runs (no CPU runs, no outputs): for real-size problems
    #                             whose outputs are checked elsewhere (kernels.tune checks them on small shapes)
    builder: str | None = None  # "module:function" f(problem, config dict) -> that config's own problem, for a
    #                             launch whose arguments depend on the config (rows padded to BLOCK_M); a name,
    #                             so a task still carries no code, and the compiler does not import the library


_PROBLEMS: dict[object, Callable[..., TuneProblem]] = {}


def tune_problem(kernel, name: str | None = None) -> Callable:
    """Register a factory `f(**sizes) -> TuneProblem` for `kernel` (and for `name`, a library name)."""

    def decorator(factory):
        _PROBLEMS[id(kernel)] = factory
        if name is not None:
            _PROBLEMS[name] = factory
        return factory

    return decorator


# -- resolving the target


def load_target(target: str):
    """`module:name` or `path/file.py:name` -> the object it names."""
    module_name, _, attr = target.rpartition(":")
    if module_name.endswith(".py") or os.sep in module_name:
        path = Path(module_name).resolve()
        if not path.exists():
            raise SystemExit(f"wavetile-tune: {path} does not exist")
        sys.path.insert(0, str(path.parent))
        name = "_wavetile_tune_" + "".join(ch if ch.isalnum() else "_" for ch in path.stem)
        spec = importlib.util.spec_from_file_location(name, path)
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    else:
        try:
            module = importlib.import_module(module_name)
        except ImportError as e:
            raise SystemExit(f"wavetile-tune: cannot import {module_name!r}: {e}") from None
    try:
        return getattr(module, attr)
    except AttributeError:
        raise SystemExit(f"wavetile-tune: {module_name} has no attribute {attr!r}") from None


LIBRARY = "kernels.tuning:library_problem"
"""What resolves a target without a colon: a `module:function` taking (name, options) and returning a
TuneProblem. A name, not an import: the compiler does not depend on the kernel library (which depends
on it); the library is imported only when a target needs it."""


def make_problem(target: str, sizes: dict, library: str = LIBRARY) -> TuneProblem:
    """The problem `target` names, built with `sizes` (see the module docstring)."""
    if ":" not in target:
        resolve = None if target in _PROBLEMS else load_target(library)  # importing it may register problems
        if target in _PROBLEMS:
            return _PROBLEMS[target](**sizes)
        return resolve(target, dict(sizes))
    obj = load_target(target)
    factory = _PROBLEMS.get(id(obj)) if (isinstance(obj, KernelWrapper) or hasattr(obj, "is_wavetile_jit")) else obj
    if factory is None or not callable(factory):
        raise SystemExit(f"wavetile-tune: no tune problem is registered for {target}; decorate a factory with "
                         "@jit.tune.tune_problem(kernel)")
    try:
        problem = factory(**sizes)
    except Exception as e:  # noqa: BLE001 - a bad size value: say which, without a traceback
        given = ", ".join(f"{k}={v!r}" for k, v in sizes.items()) or "no sizes"
        raise SystemExit(f"wavetile-tune: {target} failed with {given}: {type(e).__name__}: {e}") from None
    if not isinstance(problem, TuneProblem):
        raise SystemExit(f"wavetile-tune: {target} returned {type(problem).__name__}, not a TuneProblem")
    return problem


def config_space(problem: TuneProblem, space: Sequence[str] = (), configs_file: str | None = None) -> list[Config]:
    """The configs to sweep: the command line's, else the problem's, else the decorator's."""
    if configs_file:
        try:
            return [Config.from_dict(d) for d in json.loads(Path(configs_file).read_text())]
        except (OSError, ValueError, TypeError, KeyError, AttributeError) as e:
            raise SystemExit(f"wavetile-tune: --configs {configs_file}: {type(e).__name__}: {e}") from None
    if space:
        axes = []
        for item in space:
            name, _, values = item.partition("=")
            if not values:
                raise SystemExit(f"wavetile-tune: --space wants NAME=V1,V2,..., got {item!r}")
            axes.append((name.strip(), [_parse_value(v) for v in values.split(",")]))
        configs = []
        for combo in itertools.product(*(vals for _, vals in axes)):
            values = dict(zip((n for n, _ in axes), combo))
            launch = {k: values.pop(k) for k in ("num_warps", "num_stages") if k in values}
            configs.append(Config(values, **launch))
        return configs
    if problem.configs:
        return list(problem.configs)
    if isinstance(problem.kernel, Autotuner):
        return list(problem.kernel.configs)
    raise SystemExit("wavetile-tune: no config space: the kernel has no @autotune, the problem gives none, and "
                     "no --space / --configs was given")


def _check_configs_complete(problem: TuneProblem, configs: Sequence[Config]) -> None:
    """Every constexpr of the kernel must come from the config, the problem's kwargs or a default; a config
    space that leaves one out would fail every config with the same KeyError."""
    kernel = problem.kernel
    base = kernel.jit_function if isinstance(kernel, KernelWrapper) else kernel
    given = set(problem.kwargs) | set(base.arg_names[:len(problem.args)])
    wrapper = kernel
    while isinstance(wrapper, KernelWrapper):
        given |= set(getattr(wrapper, "values", {}))  # heuristics compute theirs
        wrapper = wrapper.fn
    needed = [p.name for p in base.params if p.name in base.constexprs and p.default is p.empty
              and p.name not in given]
    for config in configs:
        missing = [name for name in needed if name not in config.kwargs]
        if missing:
            raise SystemExit(f"wavetile-tune: config {config} does not set {', '.join(missing)}: constexpr "
                             f"parameters of {base.__name__} that neither the problem nor a default gives")


def _count(minimum: int) -> Callable[[str], int]:
    """An argparse type: an int of at least `minimum`."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not an integer") from None
        if value < minimum:
            raise argparse.ArgumentTypeError(f"must be at least {minimum}, got {value}")
        return value

    return parse


def _parse_value(text: str):
    text = text.strip()
    for parse in (int, float):
        try:
            return parse(text)
        except ValueError:
            pass
    return {"True": True, "False": False, "None": None}.get(text, text)


# -- running one config


def _runnable(kernel):
    """What to launch with a config's kwargs: below the autotuner (heuristics still apply)."""
    return kernel.fn if isinstance(kernel, Autotuner) else kernel


def run_config(problem: TuneProblem, config: Config, cpu_runs: int = 3, model: bool = True
               ) -> tuple[TuningRecord, dict]:
    """Model `config` once (unless `model` is False) and run it `cpu_runs` times on fresh copies of the
    problem's arrays (jit.autotune.Trial; not at all for a `modeled_only` problem); returns its record and the
    outputs of the last full run. A problem with a `builder` is first re-derived for `config`."""
    if problem.builder:
        problem = load_target(problem.builder)(problem, config.to_dict())
    rec = TuningRecord(config)
    full = {**problem.kwargs, **config.all_kwargs()}
    trial = Trial(_runnable(problem.kernel), problem.args, full, problem.grid, inputs=lambda: _fresh(problem.args))
    args = trial.run(rec, model=model, runs=0 if problem.modeled_only else max(1, cpu_runs))
    if problem.modeled_only and not rec.error:
        rec.cpu_seconds = math.nan
    if args is None:
        return rec, {}
    names = list(problem.kernel.arg_names)
    return rec, {n: np.array(args[names.index(n)], copy=True) for n in problem.outputs}


ALIGNMENT = 4096
"""Byte alignment of the arrays a config runs on. The emulated caches see real addresses, so modeled
numbers (L2 hit rate, time) would otherwise depend on where malloc put a copy, and differ between the
processes of a sweep."""


def _fresh(args: tuple) -> tuple:
    return tuple(_aligned_copy(a) if isinstance(a, np.ndarray) else a for a in args)


def _aligned_copy(array: np.ndarray) -> np.ndarray:
    """A copy of `array` (its strides kept) starting at a multiple of ALIGNMENT bytes."""
    return strided_copy(array, ALIGNMENT)


# -- tasks: what a worker needs to rebuild the launch by name (never compiled code)


@dataclass(frozen=True)
class SweepTask:
    """One config of a sweep, as any executor's worker receives it: the problem by name, the config as
    data. The worker builds the problem itself (once per process) and compiles into its own cache, or
    into `cache_dir` when one is shared."""

    index: int
    target: str
    sizes: dict
    library: str
    machine: str
    config: dict
    cpu_runs: int
    model: bool
    seed: int
    threads: int | None  # WAVETILE_NUM_THREADS of the worker; None keeps the worker's own
    cache_dir: str | None = None

    def identity(self) -> dict:
        """Everything but the config that decides its result (the result cache's key)."""
        return {"target": self.target, "sizes": self.sizes, "library": self.library, "machine": self.machine,
                "cpu_runs": self.cpu_runs, "model": self.model, "seed": self.seed}


_WORKER_PROBLEMS: dict[str, TuneProblem] = {}


def _worker_problem(task: SweepTask) -> TuneProblem:
    key = json.dumps(task.identity() | {"cpu_runs": None, "model": None}, sort_keys=True, default=str)
    if key not in _WORKER_PROBLEMS:
        np.random.seed(task.seed)  # factories drawing from numpy's global generator build the same inputs
        _WORKER_PROBLEMS[key] = make_problem(task.target, dict(task.sizes), task.library)
    return _WORKER_PROBLEMS[key]


def run_task(task: SweepTask) -> tuple[int, dict, dict]:
    """Run one task in a worker: (index, TuningRecord.to_dict(), outputs)."""
    import simulator

    if task.threads is not None:
        os.environ["WAVETILE_NUM_THREADS"] = str(task.threads)
    os.environ["WAVETILE_MACHINE"] = task.machine
    if task.cache_dir:
        os.environ["WAVETILE_CACHE_DIR"] = task.cache_dir
    with simulator.machine(task.machine):
        rec, outputs = run_config(_worker_problem(task), Config.from_dict(task.config), task.cpu_runs, task.model)
    return task.index, rec.to_dict(), outputs


# -- the sweep


@dataclass
class SweepRow:
    record: TuningRecord
    check: str  # "ref" (the reference config), "ok", "MISMATCH (max err ...)", "-" (failed)


def sweep(target: str, sizes: dict, machine: str, configs: list[Config], jobs: int = 1, cpu_runs: int = 3,
          progress: bool = True, problem: TuneProblem | None = None, model: bool = True,
          library: str = LIBRARY, executor: Executor | None = None, workers: int | None = None,
          seed: int = 0, cache_dir: str | None = None, resume: bool = False) -> list[SweepRow]:
    """Run every config and check outputs against the first valid one.

    Configs run on `executor` (any concurrent.futures.Executor: a process pool, Dask's) when given, else
    in a local process pool of `jobs` workers when `jobs` > 1, else in this process on `problem` (or
    the one `target` names). Workers rebuild the problem by name (see SweepTask); `workers` is how many
    share this machine's cores (default `jobs` for a local pool; for an `executor` without `workers`,
    each keeps its own thread setting), `cache_dir` a compile cache they share. A task lost
    with its executor (a worker that died more often than Dask retries) is reported as a failed config.
    With `resume`, every result is stored on disk (jit.sweep_store) and configs stored already are not
    run again.
    """
    import simulator

    with simulator.machine(machine):
        problem = problem or make_problem(target, sizes, library)
    threads = threads_per_worker(workers or jobs) if executor is None or workers else None
    tasks = [SweepTask(i, target, dict(sizes), library, machine, c.to_dict(), cpu_runs, model, seed, threads,
                       cache_dir) for i, c in enumerate(configs)]
    kernel_key = sweep_store.kernel_source_key(problem.kernel)
    keys = [sweep_store.entry_key(t.identity(), t.config, machine, kernel_key) for t in tasks]
    results: list = [None] * len(configs)
    bar = _progress(len(configs), enabled=progress)

    def finish(i: int, record: TuningRecord, outputs: dict, keep: bool = True) -> None:
        record.config = configs[i]
        results[i] = (record, outputs)
        if resume and keep:
            sweep_store.store(keys[i], record, outputs)
        bar.update(1)

    todo = []
    for task in tasks:
        stored = sweep_store.load(keys[task.index]) if resume else None
        if stored is not None:
            finish(task.index, *stored, keep=False)
        else:
            todo.append(task)
    with contextlib.ExitStack() as stack:
        if executor is None and jobs > 1 and todo:
            executor = stack.enter_context(local_pool(jobs))
        if executor is None:
            with simulator.machine(machine):
                for task in todo:
                    finish(task.index, *run_config(problem, configs[task.index], cpu_runs, model))
        else:
            futures = {executor.submit(run_task, task): task.index for task in todo}
            for future in as_completed(futures):
                i = futures[future]
                try:
                    _, rec, outputs = future.result()
                except Exception as e:  # noqa: BLE001 - the executor lost the task; the sweep reports it
                    lost = TuningRecord(configs[i], error=f"lost by the executor: {type(e).__name__}: {e}")
                    finish(i, lost, {}, keep=False)
                else:
                    finish(i, TuningRecord.from_dict(rec), outputs)
    bar.close()
    return _check(results, problem)


def _check(results, problem: TuneProblem) -> list[SweepRow]:
    rows, reference = [], None
    for rec, outputs in results:
        if not rec.ok:
            rows.append(SweepRow(rec, "-"))
            continue
        if reference is None:
            reference = outputs
            rows.append(SweepRow(rec, "ref"))
            continue
        worst, bad = 0.0, False
        for name, ref in reference.items():
            got = outputs[name].astype(np.float64)
            ref64 = ref.astype(np.float64)
            worst = max(worst, float(np.max(np.abs(got - ref64))) if got.size else 0.0)
            bad |= not np.allclose(got, ref64, rtol=problem.rtol, atol=problem.atol, equal_nan=True)
        rows.append(SweepRow(rec, f"MISMATCH (max err {worst:.3g})" if bad else "ok"))
    return rows


def rank(rows: list[SweepRow], objective: str) -> list[SweepRow]:
    """Best first; failed and mismatching configs last; ties keep the config order."""
    def score(i):
        r = rows[i]
        if not r.record.ok or r.check.startswith("MISMATCH"):
            return (1, math.inf, i)
        value = r.record.cpu_seconds if objective == "cpu" else r.record.modeled_seconds
        return (0, value, i)
    return [rows[i] for i in sorted(range(len(rows)), key=score)]


def table(rows: list[SweepRow], objective: str) -> str:
    """The ranked table with a check column appended."""
    text = format_table([r.record for r in rows], objective).splitlines()
    checks = ["check"] + [r.check for r in rows]
    width = max(len(line) for line in text)
    return "\n".join(line.ljust(width) + "  " + c for line, c in zip(text, checks))


def _row_dict(rank_: int, row: SweepRow) -> dict:
    r = row.record
    return {"rank": rank_, "config": str(r.config), **{f"meta.{k}": v for k, v in r.config.kwargs.items()},
            "num_warps": r.config.num_warps, "num_stages": r.config.num_stages,
            "modeled_us": r.modeled_seconds * 1e6, "bound": r.bound, "occupancy": r.occupancy,
            "l2_hit_rate": r.l2_hit_rate, "bank_conflicts": r.bank_conflicts, "cpu_ms": r.cpu_seconds * 1e3,
            "sampled": r.sampled, "check": row.check, "error": r.error}


def write_csv(rows: list[SweepRow], path: str) -> None:
    dicts = [_row_dict(i, r) for i, r in enumerate(rows, 1)]
    fields = list(dict.fromkeys(k for d in dicts for k in d))
    with open(path, "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=fields)
        writer.writeheader()
        writer.writerows(dicts)


def write_json(rows: list[SweepRow], path: str, meta: dict) -> None:
    data = {**meta, "rows": [_row_dict(i, r) for i, r in enumerate(rows, 1)]}
    Path(path).write_text(json.dumps(data, indent=1, default=lambda v: str(v)) + "\n")


def save_winner(problem: TuneProblem, winner: TuningRecord, rows: list[SweepRow], machine: str,
                objective: str) -> str:
    """Store the winner under the kernel's own autotune cache key (see the module docstring)."""
    import simulator

    tuner = problem.kernel
    if not isinstance(tuner, Autotuner):
        raise SystemExit("wavetile-tune: --save needs an @autotune kernel (its cache is where the winner goes)")
    if tuner.objective != objective:
        raise SystemExit(f"wavetile-tune: --save: the kernel tunes for objective {tuner.objective!r}, "
                         f"the sweep ranked by {objective!r}")
    with simulator.machine(machine):
        named = tuner.named_args(problem.args, problem.kwargs)
        key = tuner.tuning_key(named)
        tuner._store(key, None, winner.config, [r.record for r in rows])
        return tuner._disk_key(key, None)


class _SimpleBar:
    def __init__(self, total: int, enabled: bool):
        self.total, self.done, self.enabled, self.start = total, 0, enabled and total > 0, time.perf_counter()

    def update(self, n: int) -> None:
        self.done += n
        if self.enabled:
            filled = int(30 * self.done / self.total)
            elapsed = time.perf_counter() - self.start
            sys.stderr.write(f"\r[{'#' * filled}{'.' * (30 - filled)}] {self.done}/{self.total} {elapsed:.1f}s")
            sys.stderr.flush()

    def close(self) -> None:
        if self.enabled:
            sys.stderr.write("\n")


def _progress(total: int, enabled: bool):
    if enabled:
        try:
            from tqdm import tqdm

            return tqdm(total=total, desc="configs", file=sys.stderr)
        except ImportError:
            pass
    return _SimpleBar(total, enabled)


# -- command line


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="wavetile-tune", description=__doc__.split("\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("target", help="module:name, path/file.py:name, or a kernel-library problem name")
    p.add_argument("sizes", nargs="*", help="problem sizes and options for the problem factory, NAME=VALUE")
    p.add_argument("--machine", default=None, help="machine spec (default: $WAVETILE_MACHINE or the default)")
    p.add_argument("--space", action="append", default=[], metavar="NAME=V1,V2",
                   help="config axis (repeat; cartesian product); num_warps/num_stages are launch options")
    p.add_argument("--configs", default=None, help="JSON file: a list of Config.to_dict() objects")
    p.add_argument("--objective", choices=("model", "cpu"), default="model")
    p.add_argument("--jobs", type=_count(1), default=1, help="worker processes (local pool or LocalCluster)")
    p.add_argument("--executor", default="local", metavar="local|dask|dask://HOST:PORT",
                   help="where configs run: a local process pool, a new Dask LocalCluster of --jobs workers, "
                        "or a running Dask scheduler")
    p.add_argument("--shared-cache", default=None, metavar="DIR",
                   help="compile cache directory every worker uses (default: each worker's own)")
    p.add_argument("--seed", type=int, default=0, help="seed of numpy's global generator when workers build "
                                                       "the problem")
    p.add_argument("--fresh", action="store_true",
                   help="run every config again instead of resuming from results stored by an earlier sweep")
    p.add_argument("--cpu-runs", type=_count(1), default=3, help="timed CPU runs per config (median)")
    p.add_argument("--csv", default=None, help="write the ranked table as CSV")
    p.add_argument("--json", default=None, help="write the ranked table as JSON")
    p.add_argument("--save", action="store_true", help="store the winner in the kernel's autotune cache")
    p.add_argument("--no-model", action="store_true", help="skip the simulator (CPU objective only)")
    p.add_argument("--no-progress", action="store_true")
    p.add_argument("--library", default=LIBRARY, metavar="MODULE:FUNCTION",
                   help=f"resolves targets without a colon (default {LIBRARY})")
    return p.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    import simulator

    ns = parse_args(argv)
    if ns.no_model and ns.objective == "model":
        raise SystemExit("wavetile-tune: --no-model needs --objective cpu")
    sizes = {}
    for item in ns.sizes:
        name, eq, value = item.partition("=")
        if not eq:
            raise SystemExit(f"wavetile-tune: sizes are NAME=VALUE, got {item!r}")
        sizes[name] = _parse_value(value)
    try:
        machine = simulator.current_spec(ns.machine).name
    except KeyError as e:
        raise SystemExit(f"wavetile-tune: --machine: {e.args[0]}") from None
    with simulator.machine(machine):
        problem = make_problem(ns.target, sizes, ns.library)
    configs = config_space(problem, ns.space, ns.configs)
    _check_configs_complete(problem, configs)
    start = time.perf_counter()
    with open_executor(ns.executor, ns.jobs) as executor:
        rows = sweep(ns.target, sizes, machine, configs, jobs=ns.jobs, cpu_runs=ns.cpu_runs,
                     progress=not ns.no_progress, problem=problem, model=not ns.no_model, library=ns.library,
                     executor=executor, workers=None if ns.executor.startswith("dask://") else ns.jobs,
                     seed=ns.seed, cache_dir=ns.shared_cache, resume=not ns.fresh)
    elapsed = time.perf_counter() - start
    ranked = rank(rows, ns.objective)
    size_text = problem.description or " ".join(ns.sizes) or "(defaults)"
    print(f"{problem.kernel.__name__} {size_text} on {machine}: {len(configs)} configs in {elapsed:.1f}s, "
          f"ranked by {ns.objective} time")
    print(table(ranked, ns.objective))
    ok = [r for r in ranked if r.record.ok and not r.check.startswith("MISMATCH")]
    if not ok:
        print("wavetile-tune: no config ran correctly", file=sys.stderr)
        return 1
    print(f"best: {ok[0].record.config}")
    meta = {"kernel": problem.kernel.__name__, "target": ns.target, "sizes": sizes, "machine": machine,
            "objective": ns.objective, "seconds": elapsed, "best": ok[0].record.config.to_dict()}
    if ns.csv:
        write_csv(ranked, ns.csv)
    if ns.json:
        write_json(ranked, ns.json, meta)
    if ns.save:
        key = save_winner(problem, ok[0].record, ranked, machine, ns.objective)
        print(f"saved the winner to the autotune cache (entry {key[:16]}...)")
    return 0 if all(not r.check.startswith("MISMATCH") for r in ranked) else 2


if __name__ == "__main__":  # run through the imported module, so problems register in one registry
    from jit.tune import main as _main

    sys.exit(_main())
