"""Checks a config against the op's numpy reference before `python -m kernels.tune` may choose it.

A sweep only compares configs with each other (at the model's shapes, on synthetic weights); a config is
trusted only when the library's own host functions, forced to launch it (config_table.forcing), reproduce
the references of the registered cases of its family (kernels.registry) that launch its kernel, at their small shapes.
Checks are executor tasks like the sweep's configs, named by kernel, config and case indices, and their
verdicts are stored in the compile cache ($WAVETILE_CACHE_DIR) so a rerun does not repeat them.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass

import simulator
from jit import Config
from jit.autotune import capture_launches
from kernels import config_table
from kernels.registry import Case, cases_of, check, family, max_error


def cases_by_kernel(kernels: set[str]) -> dict[str, list[tuple[str, str]]]:
    """Kernel id -> (family, case_name) of the registered cases, among those of the kernels' families, whose host
    functions launch it (kernels.ffn's case launches gemm.gemm_kernel too)."""
    found: dict[str, list[tuple[str, str]]] = {}
    for fam in sorted({family(kernel.rsplit(".", 1)[0]) for kernel in kernels}):
        for case in cases_of([fam]):
            with capture_launches() as launches:
                try:
                    case.run()
                except Exception:  # noqa: BLE001 - a case that fails under capture is the checker's to report
                    continue
            for name in dict.fromkeys(config_table.kernel_id(launch.kernel) for launch in launches):
                if name in kernels:
                    found.setdefault(name, []).append((fam, case_name(case)))
    return found


def case_name(case: Case) -> str:
    """How a check task names a case: op, shape and dtype (unique in the registry)."""
    return f"{case.op} [{case.shape}] {case.dtype}"


@dataclass(frozen=True)
class CheckTask:
    """One config of one kernel, checked on the named cases on `machine` (the warp width changes layouts)."""

    kernel: str
    config: dict
    cases: tuple[tuple[str, str], ...]  # (family, case_name), as cases_by_kernel gives them
    machine: str
    source_key: str  # the kernel's source hash: a verdict is kept only for the code it checked

    def cache_key(self) -> str:
        from jit.compiler import compiler_fingerprint

        parts = ["kernels.tune check", self.kernel, self.config, self.cases, self.machine, self.source_key,
                 compiler_fingerprint()]
        return hashlib.sha256(json.dumps(parts, sort_keys=True, default=str).encode()).hexdigest()


def run_check(task: CheckTask) -> tuple[bool, str]:
    """(passed, why): every case's output within its tolerance of its reference, else the first that is not."""
    import os

    os.environ["WAVETILE_MACHINE"] = task.machine
    families = sorted({fam for fam, _ in task.cases})
    cases = {case_name(c): c for c in cases_of(families)}  # fresh inputs every task: a case may update them in place
    with simulator.machine(task.machine), config_table.forcing(task.kernel, Config.from_dict(task.config)):
        for _, name in task.cases:
            case = cases[name]
            try:
                expected = case.reference()
                got = case.run()
            except Exception as e:  # noqa: BLE001 - a config that fails its check is reported, not raised
                return False, f"{case.op} {case.shape}: {type(e).__name__}: {e}"
            if not check(case, got, expected):
                return False, (f"{case.op} {case.shape}: max err {max_error(got, expected):.3g} against the "
                               f"reference (rtol {case.rtol:g}, atol {case.atol:g})")
    return True, "ok"


def stored(task: CheckTask) -> tuple[bool, str] | None:
    """A verdict an earlier run stored, or None."""
    from jit import cache

    files = cache.get(task.cache_key())
    if not files or "check.json" not in files:
        return None
    try:
        data = json.loads(files["check.json"])
        return bool(data["passed"]), str(data["why"])
    except (ValueError, KeyError):
        return None


def store(task: CheckTask, verdict: tuple[bool, str]) -> None:
    from jit import cache

    cache.put(task.cache_key(), {"check.json": json.dumps({"passed": verdict[0], "why": verdict[1]}).encode()})
