"""Profiles: collect one record per kernel launch while a `with profile() as prof:` block is open.

The runtime calls `record_launch(record)` after every launch; it costs nothing when no profile
is open. A profile then renders what it saw: `table()` (one row per launch), `lines()` (hot
source lines), `export_chrome_trace(path)` (a Perfetto / chrome://tracing timeline of the
modeled schedule) and `roofline(path)` (a PNG, if matplotlib is installed).

WAVETILE_PROFILE=1 opens a process-wide profile at import and prints its table at exit.

The module is `profiles` so that `simulator.profile` can be the context manager itself (Triton-like
`with simulator.profile() as prof:`).
"""

from __future__ import annotations

import atexit
import contextlib
import os
import sys
import threading
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field

from simulator.cost import Estimate, estimate
from simulator.counters import Counters
from simulator.specs import MachineSpec, current_spec

ENV_VAR = "WAVETILE_PROFILE"

LineKey = tuple[str, int]


@dataclass
class LaunchRecord:
    """What one launch did and what the model makes of it.

    counters: Counters.as_dict() of the whole launch; lines: Counters per (file, line) of the
    kernel source; sampled: counters were measured on some programs and scaled to the grid
    (tables mark such launches with '~'); estimate: the cost model's result (schedule for traces).
    """

    kernel: str
    grid: tuple[int, ...]
    constexprs: dict[str, object]
    num_warps: int
    num_stages: int
    machine: str
    cpu_seconds: float
    modeled_seconds: float
    bound: str
    counters: dict[str, object]
    sampled: bool = False
    lines: dict[LineKey, Counters] = field(default_factory=dict)
    estimate: Estimate | None = None

    @classmethod
    def build(cls, kernel: str, grid: int | tuple[int, ...], counters: Counters, *,
              machine: MachineSpec | str | None = None, cpu_seconds: float = 0.0,
              constexprs: Mapping[str, object] | None = None, sampled: bool = False,
              lines: Mapping[LineKey, Counters] | None = None) -> LaunchRecord:
        """Run the cost model on `counters` and make the record (what the runtime usually calls)."""
        spec = current_spec(machine)
        grid = (grid,) if isinstance(grid, int) else tuple(grid)
        result = estimate(counters, grid, spec)
        return cls(kernel=kernel, grid=grid, constexprs=dict(constexprs or {}),
                   num_warps=counters.num_warps, num_stages=counters.num_stages, machine=spec.name,
                   cpu_seconds=cpu_seconds, modeled_seconds=result.seconds, bound=result.bound,
                   counters=counters.as_dict(), sampled=sampled, lines=dict(lines or {}), estimate=result)

    @property
    def totals(self) -> Counters:
        """The launch counters as a Counters record."""
        return Counters.from_dict(self.counters)

    @property
    def occupancy(self) -> float:
        return self.estimate.occupancy.fraction if self.estimate else 0.0


class Profile:
    """The launches seen while the profile was open, in launch order."""

    def __init__(self) -> None:
        self.launches: list[LaunchRecord] = []

    def table(self) -> str:
        """One aligned row per launch (see simulator.report.launch_table)."""
        from simulator.report import launch_table

        return launch_table(self.launches)

    def lines(self, top: int = 20) -> str:
        """The `top` source lines with the most modeled time (see simulator.report.line_table)."""
        from simulator.report import line_table

        return line_table(self.launches, top)

    def export_chrome_trace(self, path: str | os.PathLike[str]) -> None:
        """Write a Trace Event Format JSON file (open in ui.perfetto.dev or chrome://tracing)."""
        from simulator.trace import write_chrome_trace

        write_chrome_trace(self.launches, path)

    def roofline(self, path: str | os.PathLike[str]) -> None:
        """Save a roofline PNG of the launches (needs matplotlib)."""
        from simulator.roofline import plot_roofline

        plot_roofline(self.launches, path)

    def totals(self) -> Counters:
        """All launches' counters added up."""
        return sum((r.totals for r in self.launches), Counters())


_ACTIVE: list[Profile] = []
_LOCK = threading.Lock()


@contextlib.contextmanager
def profile() -> Iterator[Profile]:
    """`with profile() as prof:` collects every launch made inside the block (from any thread)."""
    prof = Profile()
    with _LOCK:
        _ACTIVE.append(prof)
    try:
        yield prof
    finally:
        with _LOCK:
            _ACTIVE.remove(prof)


def is_profiling() -> bool:
    """True when some profile is open (the runtime may skip counting work otherwise)."""
    return bool(_ACTIVE)


def record_launch(record: LaunchRecord) -> None:
    """Append `record` to every open profile; a no-op when none is open."""
    if not _ACTIVE:
        return
    with _LOCK:
        for prof in _ACTIVE:
            prof.launches.append(record)


def _install_env_profile() -> Profile | None:
    """WAVETILE_PROFILE=1: a profile open for the whole process, printed at exit."""
    if os.environ.get(ENV_VAR, "").strip().lower() in ("", "0", "false", "no", "off"):
        return None
    prof = Profile()
    _ACTIVE.append(prof)

    def _print_at_exit() -> None:
        if prof.launches:
            print(prof.table(), file=sys.stderr)

    atexit.register(_print_at_exit)
    return prof


GLOBAL_PROFILE = _install_env_profile()
