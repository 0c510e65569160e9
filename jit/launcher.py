"""The router: which executor runs a launch, decided in this one place.

A launch (jit.launch.Launch, bound once) goes to one of four executors:

- `native`: the compiled code, on CPU threads (jit.native);
- `profiled`: the compiled code plus its instrumented variant, recorded for the open profile
  (jit.profiler; a `with simulator.profile()` block or WAVETILE_PROFILE=1);
- `interpreter`: the numpy interpreter of the IR the compiler would lower (`interpret=True` or
  WAVETILE_INTERPRET=1; also WAVETILE_SANITIZE, whose sanitizers live in the interpreter);
- `eager`: the kernel's own Python with numpy-backed `tl` ops (`interpret="eager"`).

`route` reads only the launch options and the environment, so the plan fast path (jit.plans) asks it too
before it runs a plan natively. `model_launch` and `model_only` are the public entries of modeled launches.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping

from jit import env, interpreter, native
from jit.arguments import refuse_read_only
from jit.launch import Launch

NATIVE, PROFILED, INTERPRETER, EAGER = "native", "profiled", "interpreter", "eager"
_TRUE = ("1", "true", "ir", "yes", "on")
_FALSE = ("0", "false", "off", "no")


def route(options: Mapping) -> str:
    """The executor for a launch with these launch options, under the current environment."""
    value = options.get("interpret")
    if value is None:
        value = env.get("WAVETILE_INTERPRET", "")
    if value in (None, "") and env.get("WAVETILE_SANITIZE", "") not in ("", "0"):
        value = "1"  # the sanitizers live in the interpreter
    if value in (None, "", False):
        return PROFILED if profiling() else NATIVE
    if value is True or str(value).lower() in _TRUE:
        return INTERPRETER
    if str(value).lower() == "eager":
        return EAGER
    if str(value).lower() in _FALSE:
        return PROFILED if profiling() else NATIVE
    raise ValueError(f"interpret must be True, False or 'eager', got {value!r}")


def profiling() -> bool:
    """A profile can only be open once the simulator is imported; when WAVETILE_PROFILE is set at all,
    importing it lets simulator.profiles read the value (the one place that parses it)."""
    sim = sys.modules.get("simulator")
    if sim is None and env.get("WAVETILE_PROFILE"):
        import simulator as sim
    return sim is not None and sim.is_profiling()


def run(launch: Launch):
    """Run a bound launch on the executor `route` picks; returns what that executor returns (the
    CompiledKernel for compiled code, the sanitizer report or None for the interpreters)."""
    env.check_machine()
    return EXECUTORS[route(launch.options)](launch)


def _native(launch: Launch):
    kernel = launch.compiled()
    refuse_read_only(launch.name, launch.runtime, kernel.written)
    if launch.programs:
        native.execute(kernel, launch.grid, launch.runtime, launch.name)
    return kernel


def _profiled(launch: Launch):
    kernel = launch.compiled()
    refuse_read_only(launch.name, launch.runtime, kernel.written)
    if launch.programs:
        from jit import profiler  # (imports the simulator: only once something is profiled or modeled)

        profiler.profiled_launch(launch, kernel)
    return kernel


def _interpreted(launch: Launch):
    return interpreter.run(launch, "ir")


def _eager(launch: Launch):
    return interpreter.run(launch, "eager")


EXECUTORS: dict[str, Callable[[Launch], object]] = {NATIVE: _native, PROFILED: _profiled,
                                                    INTERPRETER: _interpreted, EAGER: _eager}
"""Each route's executor: a function of the bound launch."""


def model_launch(kernel, grid, *args, machine=None, sample: int | bool | None = None,
                 shared_padding: int | None = None, record: bool = False, **kwargs):
    """Model one launch on the emulated machine without computing every output; returns its LaunchRecord.

    `kernel` is a @jit function, `grid` and `args` / `kwargs` (constexprs, num_warps, num_stages) are
    what `kernel[grid](*args, **kwargs)` would take. Only a sample of the programs runs (instrumented):
    sample=None picks one automatically for large grids (jit.sampling), an int asks for that many
    programs, False runs them all. The outputs are left partly computed. The record's
    `modeled_seconds`, `bound` and `counters` are what an autotuner compares; `sampled` says whether
    the counters were scaled from a sample. record=True also adds it to open profiles.
    """
    from jit import profiler

    return profiler.model_launch(kernel, grid, args, kwargs, machine=machine, sample=sample,
                                 shared_padding=shared_padding, record=record)


def model_only(run_fully=(), measure_fully=()):
    """Context manager: profiled launches inside run only their measured programs (see jit.profiler.model_only);
    for modeling whole models at real sizes, where computing every output would take the CPU hours."""
    from jit import profiler

    return profiler.model_only(run_fully, measure_fully)
