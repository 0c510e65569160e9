"""`python -m kernels.tune`: tune every autotuned library kernel at the shapes Qwen3.5 models launch it with,
and write the chosen configs as this machine's config table (kernels/configs/<machine>.json).

    python -m kernels.tune                                   # mtt-s5000, every model and step, 2 local workers
    python -m kernels.tune --machine h200 --ops gemm,norm --executor dask --jobs 4
    python -m kernels.tune --models tiny --decode 1 --prefill 0 --executor dask://scheduler:8786

1. Shapes (kernels.tune_shapes): each model's decode steps (--decode batches) and prefill (--prefill tokens) run
   with the autotuner capturing launches; every distinct (kernel, shape key) is one problem. --ops keeps the
   kernels whose id (`module.name`, e.g. `gemm.gemm_kernel`) starts with one of its comma-separated prefixes.
2. Checks (kernels.tune_check): every config of every kernel runs the registered cases that launch the kernel
   and must match their numpy references; a config that does not is reported and never chosen.
3. Sweeps (jit.tune.sweep): every config of every problem is modeled on the machine, over any executor
   (`--executor local|dask|dask://HOST:PORT`), each result stored so an interrupted run resumes (--fresh: not).
4. The table: per problem, the checked config with the least modeled time (ties: the earlier config), merged into
   the machine's table (entries of kernels and keys not swept are kept); the report (configs tried, best vs
   default modeled time per kernel and per shape) is printed and written next to it as .md and .csv.
"""

from __future__ import annotations

import argparse
import csv
import json
import math
import re
import sys
import time
from collections.abc import Sequence
from concurrent.futures import Executor, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import simulator
from jit.executors import open_executor
from jit.tune import rank, sweep
from kernels import config_table, tune_check, tune_shapes


@dataclass
class Target:
    """One (kernel, shape key) to tune: the first step that launches it (what workers rebuild) and all of them."""

    problem: tune_shapes.Problem
    tuner: object  # the @autotune kernel
    steps: list[str] = field(default_factory=list)

    @property
    def kernel(self) -> str:
        return self.problem.kernel

    @property
    def key_text(self) -> str:
        return config_table.key_text(self.problem.key)


@dataclass
class Outcome:
    target: Target
    default_us: float
    best_us: float
    best: dict | None  # Config.to_dict() of the chosen config; None when no config ran correctly
    configs: int
    notes: list[str]
    config_us: list[float | None] = field(default_factory=list)  # per config its modeled time; None: not usable


def collect_targets(steps: Sequence[tune_shapes.Step], ops: Sequence[str] = (),
                    skipped: list[str] | None = None) -> list[Target]:
    """The distinct (kernel, shape key) problems of `steps`, kernels filtered by the `ops` prefixes, sorted. A step
    the model cannot run on this machine (a launch over a limit of the spec) is reported and skipped."""
    targets: dict[tuple[str, str], Target] = {}
    for step in steps:
        try:
            found = tune_shapes.problems(step)
        except Exception as e:  # noqa: BLE001 - a model that cannot run here (too big for a limit): skip its step
            print(f"kernels.tune: skipping {step}: {type(e).__name__}: {e}", file=sys.stderr, flush=True)
            if skipped is not None:
                skipped.append(f"{step}: {type(e).__name__}: {e}")
            continue
        for problem in found:
            if ops and not any(problem.kernel.startswith(prefix) for prefix in ops):
                continue
            ident = (problem.kernel, config_table.key_text(problem.key))
            if ident not in targets:
                tuner = tune_shapes.captured(step)[problem.launch].kernel
                targets[ident] = Target(problem, tuner)
            targets[ident].steps.append(str(step))
    return [targets[k] for k in sorted(targets)]


def check_configs(targets: Sequence[Target], machine: str, executor: Executor | None, fresh: bool
                  ) -> dict[tuple[str, int], tuple[bool, str]]:
    """(kernel, config index) -> (passed, why) for every config of every kernel of `targets`."""
    tuners = {t.kernel: t.tuner for t in targets}
    cases = tune_check.cases_by_kernel(set(tuners))
    tasks = {}
    for kernel, tuner in tuners.items():
        for i, config in enumerate(tuner.configs):
            tasks[(kernel, i)] = tune_check.CheckTask(kernel, config.to_dict(), tuple(cases.get(kernel, ())), machine,
                                                      tuner.cache_key)
    verdicts = {}
    todo = {}
    for ident, task in tasks.items():
        if not task.cases:
            verdicts[ident] = (False, "no registered case launches this kernel, so no reference to check it against")
            continue
        known = None if fresh else tune_check.stored(task)
        if known is not None:
            verdicts[ident] = known
        else:
            todo[ident] = task
    if executor is None:
        results = {ident: tune_check.run_check(task) for ident, task in todo.items()}
    else:
        futures = {ident: executor.submit(tune_check.run_check, task) for ident, task in todo.items()}
        results = {}
        for ident, future in futures.items():
            try:
                results[ident] = future.result()
            except Exception as e:  # noqa: BLE001 - the executor lost the task: unchecked, so not trusted
                results[ident] = (False, f"check lost by the executor: {type(e).__name__}: {e}")
    for ident, verdict in results.items():
        if not verdict[1].startswith("check lost"):
            tune_check.store(todo[ident], verdict)
    verdicts.update(results)
    return verdicts


def tune_target(target: Target, machine: str, verdicts: dict, executor: Executor | None, jobs: int,
                fresh: bool) -> Outcome:
    """Sweep every config of one target; choose the fastest that ran, matched the others and passed its check."""
    problem = tune_shapes.library_problem(target.problem.step.model, dict(target.problem.sizes))
    configs = list(target.tuner.configs)
    rows = sweep(target.problem.step.model, target.problem.sizes, machine, configs, jobs=1, cpu_runs=1,
                 progress=False, problem=problem, library=tune_shapes.LIBRARY, executor=executor,
                 workers=jobs if executor is not None else None, resume=not fresh)
    notes = []
    usable = []
    for i, row in enumerate(rows):
        passed, why = verdicts[(target.kernel, i)]
        if not row.record.ok:
            notes.append(f"config {i} failed: {row.record.error}")
        elif row.check.startswith("MISMATCH"):
            notes.append(f"config {i} disagrees with config 0 at this shape: {row.check}")
        elif not passed:
            notes.append(f"config {i} rejected: {why}")
        else:
            usable.append(row)
    first = rows[default_index(target)].record  # the host function's choice without a table entry
    default = first.modeled_seconds * 1e6 if first.ok else math.inf
    ranked = rank(usable, "model")
    times = [round(row.record.modeled_seconds * 1e6, 3) if any(row is u for u in usable) else None for row in rows]
    if not ranked:
        return Outcome(target, default, math.inf, None, len(configs), notes, times)
    best = ranked[0].record
    return Outcome(target, default, best.modeled_seconds * 1e6, best.config.to_dict(), len(configs), notes, times)


def default_index(target: Target) -> int:
    """Which of the target's configs its host function launches when the table has none (the family's default,
    kernels.config_table.default_config; the first for most kernels)."""
    launch = tune_shapes.captured(target.problem.step)[target.problem.launch]
    configs = list(target.tuner.configs)
    return configs.index(config_table.default_config(target.tuner, configs, launch.args, launch.kwargs))


def write_table(outcomes: Sequence[Outcome], machine: str, directory: Path | None) -> Path:
    """Merge the chosen configs into the machine's table: entries for the swept (kernel, key) pairs are replaced."""
    path = config_table.table_path(machine, directory)
    kernels = json.loads(path.read_text()).get("kernels", {}) if path.exists() else {}
    for o in outcomes:
        if o.best is None:
            continue
        entries = [e for e in kernels.get(o.target.kernel, []) if e["key"] != o.target.problem.key]
        entries.append({"key": o.target.problem.key, "config": o.best, "modeled_us": round(o.best_us, 3),
                        "default_us": round(o.default_us, 3) if math.isfinite(o.default_us) else None,
                        "config_us": o.config_us, "steps": o.target.steps})
        kernels[o.target.kernel] = entries
    meta = {"written_by": "python -m kernels.tune", "objective": "modeled time (simulator)",
            "key": "kernel id -> entries keyed by the @autotune key values and the array dtypes (config_table)"}
    return config_table.save(machine, kernels, meta, directory)


def report(outcomes: Sequence[Outcome], machine: str, earlier: Sequence[dict] = ()) -> tuple[str, list[dict]]:
    """Per kernel: shapes, configs tried, default vs best modeled time (summed over its shapes); and per shape rows:
    this run's, after the `earlier` rows (of kernels this run did not sweep, so an --ops run keeps the rest)."""
    rows = list(earlier) + [
        {"kernel": o.target.kernel, "shape_key": o.target.key_text, "steps": "; ".join(o.target.steps),
         "configs": o.configs, "default_us": round(o.default_us, 3), "best_us": round(o.best_us, 3),
         "best_config": json.dumps(o.best) if o.best else "", "notes": "; ".join(o.notes)} for o in outcomes]
    per_kernel: dict[str, list[dict]] = {}
    for row in rows:
        per_kernel.setdefault(row["kernel"], []).append(row)
    header = ("kernel", "shapes", "configs", f"default us ({machine})", "best us", "gain", "rejected")
    lines = [header]
    for kernel, group in sorted(per_kernel.items()):
        chosen = [r for r in group if r["best_config"]]
        default = sum(float(r["default_us"]) for r in chosen)
        best = sum(float(r["best_us"]) for r in chosen)
        rejected = len({n.split(":")[0] for r in group for n in notes_of(r)})
        gain = f"{100 * (1 - best / default):.1f}%" if default and math.isfinite(default) else "-"
        lines.append((kernel, str(len(group)), str(group[0]["configs"]), f"{default:.2f}", f"{best:.2f}", gain,
                      str(rejected)))
    widths = [max(len(row[i]) for row in lines) for i in range(len(header))]
    text = ["| " + " | ".join(c.ljust(w) for c, w in zip(row, widths)) + " |" for row in lines]
    text.insert(1, "|" + "|".join("-" * (w + 2) for w in widths) + "|")
    return "\n".join(text), sorted(rows, key=lambda r: r["kernel"])


def notes_of(row: dict) -> list[str]:
    """A report row's notes, one per config (they are joined with "; " and each starts with "config N ")."""
    return re.split(r"; (?=config \d+ )", row["notes"]) if row["notes"] else []


def earlier_rows(machine: str, directory: Path | None, swept: set[str]) -> list[dict]:
    """The rows of the machine's last report for kernels not in `swept` ([] without a report)."""
    path = config_table.table_path(machine, directory).with_suffix("")
    path = path.with_name(path.name + ".report.csv")
    if not path.exists():
        return []
    with open(path, newline="") as f:
        return [row for row in csv.DictReader(f) if row["kernel"] not in swept]


def write_report(summary: str, rows: list[dict], machine: str, directory: Path | None,
                 header: str) -> tuple[Path, Path]:
    base = config_table.table_path(machine, directory).with_suffix("")
    md, csv_path = base.with_name(base.name + ".report.md"), base.with_name(base.name + ".report.csv")
    detail = [f"| {r['kernel']} | {r['shape_key']} | {float(r['default_us']):.2f} | {float(r['best_us']):.2f} | "
              f"{r['best_config']} |" for r in rows]
    notes = [f"- {r['kernel']} `{r['shape_key']}`: {n}" for r in rows for n in notes_of(r)]
    md.write_text("\n".join([f"# Config table of {machine}", "", header, "", summary, "", "## Per shape", "",
                             "| kernel | shape key | default us | best us | best config |", "|---|---|---|---|---|",
                             *detail, "", "## Configs not chosen", "", *(notes or ["(none)"])]) + "\n")
    with open(csv_path, "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(rows[0]) if rows else ["kernel"])
        writer.writeheader()
        writer.writerows(rows)
    return md, csv_path


def _ints(text: str) -> list[int]:
    try:
        return [int(v) for v in text.split(",") if v.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated integers, got {text!r}") from None


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m kernels.tune", description=__doc__.split("\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--machine", default=None, help="machine spec (default: $WAVETILE_MACHINE or mtt-s5000)")
    p.add_argument("--ops", default="", help="comma-separated kernel id prefixes to tune (default: all)")
    p.add_argument("--models", default=",".join(tune_shapes.MODELS),
                   help=f"comma-separated models (default: {','.join(tune_shapes.MODELS)})")
    p.add_argument("--decode", type=_ints, default=list(tune_shapes.DECODE_BATCHES),
                   help="decode batch sizes M (default: 1,2,4,8)")
    p.add_argument("--prefill", type=int, default=tune_shapes.PREFILL_TOKENS,
                   help=f"prefill length in tokens, 0 for none (default {tune_shapes.PREFILL_TOKENS})")
    p.add_argument("--executor", default="local", metavar="local|dask|dask://HOST:PORT")
    p.add_argument("--jobs", type=int, default=2, help="worker processes (local pool or LocalCluster; default 2)")
    p.add_argument("--fresh", action="store_true", help="rerun every check and config instead of resuming")
    p.add_argument("--table-dir", type=Path, default=None, help="where the table goes (default kernels/configs)")
    p.add_argument("--count", action="store_true", help="print the problems and task count, tune nothing")
    return p.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    ns = parse_args(argv)
    try:
        machine = simulator.current_spec(ns.machine).name
    except KeyError as e:
        raise SystemExit(f"kernels.tune: --machine: {e.args[0]}") from None
    models = [m for m in ns.models.split(",") if m]
    steps = [tune_shapes.Step(m, "decode", b) for m in models for b in ns.decode]
    steps += [tune_shapes.Step(m, "prefill", ns.prefill) for m in models if ns.prefill > 0]
    ops = [o for o in ns.ops.split(",") if o]
    start = time.perf_counter()
    skipped: list[str] = []
    with simulator.machine(machine):
        targets = collect_targets(steps, ops, skipped)
    if not targets:
        raise SystemExit(f"kernels.tune: no autotuned kernel matches --ops {ns.ops!r} in {len(steps)} steps")
    kernels = {t.kernel: len(t.tuner.configs) for t in targets}
    n_sweep = sum(kernels[t.kernel] for t in targets)
    n_check = sum(kernels.values())
    print(f"kernels.tune on {machine}: {len(steps)} model steps, {len(kernels)} kernels, {len(targets)} shapes; "
          f"{n_check} reference checks + {n_sweep} modeled configs = {n_check + n_sweep} tasks "
          f"(found in {time.perf_counter() - start:.1f}s)", flush=True)
    if ns.count:
        for t in targets:
            print(f"  {t.kernel}  {t.key_text}  ({len(t.tuner.configs)} configs; {', '.join(t.steps)})")
        return 0
    with open_executor(ns.executor, ns.jobs) as executor:
        verdicts = check_configs(targets, machine, executor, ns.fresh)
        failed = sum(not v[0] for v in verdicts.values())
        print(f"checked {len(verdicts)} configs against the references: {len(verdicts) - failed} pass "
              f"({time.perf_counter() - start:.1f}s)", flush=True)
        outcomes = _sweep_all(targets, machine, verdicts, executor, ns.jobs, ns.fresh, start)
    elapsed = time.perf_counter() - start
    path = write_table(outcomes, machine, ns.table_dir)
    earlier = earlier_rows(machine, ns.table_dir, {t.kernel for t in targets}) if ops else []
    summary, rows = report(outcomes, machine, earlier)
    header = (f"`python -m kernels.tune --machine {machine}`: {len(steps)} model steps ({', '.join(models)}; decode "
              f"M={','.join(map(str, ns.decode))}, prefill {ns.prefill}), {len(targets)} shapes, "
              f"{n_check + n_sweep} tasks. Times are summed over each kernel's shapes (one launch each)."
              + (f" Kernels of --ops {ns.ops} swept now; the other rows are the last report's." if ops else "")
              + "".join(f"\n\nSkipped (cannot run on {machine}): {s}" for s in skipped))
    md, csv_path = write_report(summary, rows, machine, ns.table_dir, header)
    print(summary)
    for o in outcomes:
        for note in o.notes:
            print(f"  {o.target.kernel} {o.target.key_text}: {note}")
    print(f"{n_check + n_sweep} tasks in {elapsed:.1f}s; table {path}; report {md}, {csv_path}")
    return 0 if all(o.best is not None for o in outcomes) else 1


def _sweep_all(targets, machine, verdicts, executor, jobs, fresh, start) -> list[Outcome]:
    """Sweep every target; with an executor, several sweeps at once so that its workers stay busy."""
    def one(target: Target) -> Outcome:
        outcome = tune_target(target, machine, verdicts, executor, jobs, fresh)
        gain = f"{outcome.default_us:.2f} -> {outcome.best_us:.2f} us" if outcome.best else "no usable config"
        print(f"  {target.kernel} {target.key_text}: {gain} ({time.perf_counter() - start:.0f}s)", flush=True)
        return outcome

    if executor is None:
        with simulator.machine(machine):
            return [one(t) for t in targets]
    with ThreadPoolExecutor(max_workers=max(2, 2 * jobs)) as threads:
        return list(threads.map(one, targets))


if __name__ == "__main__":
    sys.exit(main())
