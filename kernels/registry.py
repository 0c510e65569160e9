"""The library's table of runnable cases: `python -m kernels.check` checks them, `python -m kernels.bench` times them.

Each kernel module registers a function that yields `Case`s at representative shapes; one table
keeps the checker, the benchmark and the tests from spelling the same shapes three times.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

import numpy as np

import simulator


@dataclass
class Case:
    """One op at one shape: how to run it with wavetile and how to compute the same thing in numpy."""

    op: str  # "rope.neox", "norm.rmsnorm", ...
    shape: str  # human-readable problem size, e.g. "T=64 H=16 D=256"
    dtype: str  # "fp32", "fp16", "bf16", "int4", ...
    run: Callable[[], object]  # runs the wavetile host function; returns an array or a tuple of arrays
    reference: Callable[[], object]  # numpy reference with the same structure
    rtol: float = 1e-5
    atol: float = 1e-6
    min_bytes: int | None = None  # bytes the op must at least read + write (for "bytes moved vs minimum")
    notes: dict = field(default_factory=dict)  # extra figures to report (e.g. error vs unquantised fp32)

    def __post_init__(self) -> None:
        self.run = _from_cold_l2(self.run)


def _from_cold_l2(run: Callable[[], object]) -> Callable[[], object]:
    """`run` starting from an empty emulated L2, so a profile of a case (the checker's, kernels.bench's)
    sees its own traffic only, not a hit on data the previous case left in L2."""
    if getattr(run, "cold_l2", False):
        return run

    @functools.wraps(run)
    def cold():
        simulator.reset_device_l2()
        return run()

    cold.cold_l2 = True
    return cold


_PROVIDERS: list[Callable[[], Iterable[Case]]] = []


def register(provider: Callable[[], Iterable[Case]]) -> Callable[[], Iterable[Case]]:
    """Decorator for a module-level function that yields the module's Cases."""
    _PROVIDERS.append(provider)
    return provider


def all_cases() -> list[Case]:
    import kernels  # noqa: F401  (importing the package imports every family module)

    return [case for provider in _PROVIDERS for case in provider()]


def family(module: str) -> str:
    """A kernel module's family, the first word of its name: kernels.deltanet_conv and kernels.deltanet -> deltanet."""
    return module.rsplit(".", 1)[-1].split("_")[0]


def cases_of(families: Iterable[str]) -> list[Case]:
    """The cases registered by the modules of these families only (cheaper than all_cases() when few are wanted)."""
    import kernels  # noqa: F401  (importing the package imports every family module)

    wanted = set(families)
    return [case for provider in _PROVIDERS if family(provider.__module__) in wanted for case in provider()]


def _pairs(got, expected) -> list[tuple[np.ndarray, np.ndarray]]:
    """A case's outputs and reference outputs as float64 pairs (a case may return one array or a tuple)."""
    got = got if isinstance(got, tuple) else (got,)
    expected = expected if isinstance(expected, tuple) else (expected,)
    return [(np.asarray(g, np.float64), np.asarray(e, np.float64)) for g, e in zip(got, expected, strict=True)]


def max_error(got, expected) -> float:
    """Largest absolute difference over every output array of a case."""
    return max((float(np.max(np.abs(g - e))) for g, e in _pairs(got, expected) if g.size), default=0.0)


def check(case: Case, got, expected) -> bool:
    return all(np.allclose(g, e, rtol=case.rtol, atol=case.atol) for g, e in _pairs(got, expected))
