"""Autotuned variants of the library's kernels, built from each module's AUTOTUNE_CONFIGS, and the
library's tune problems for wavetile-tune (`library_problem`).

Host functions launch the plain `@jit` kernel with the machine's config-table pick by default, else the
family's untuned default (kernels._common.resolve: one compile per shape key, no tuning at run time);
`tune=True` launches the `@autotune` wrapper made here instead, which compiles and scores every config on the
first call for each key (modeled time on the current machine) and caches the choice.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

from jit import Config, autotune
from jit.autotune import capture_launches
from jit.tune import TuneProblem
from kernels.registry import all_cases

_LAUNCH_OPTIONS = ("num_warps", "num_stages")
_BUILDERS: dict[int, str] = {}  # id of an @autotune kernel -> "module:function" of its per-config problem builder


def as_configs(dicts: Sequence[Mapping[str, object]]) -> list[Config]:
    """AUTOTUNE_CONFIGS dicts (meta-parameters plus num_warps / num_stages) -> jit.Config objects."""
    return [Config({k: v for k, v in d.items() if k not in _LAUNCH_OPTIONS},
                   **{k: d[k] for k in _LAUNCH_OPTIONS if k in d}) for d in dicts]


def tuned(kernel, dicts: Sequence[Mapping[str, object]], key: Sequence[str],
          keep: Callable[[Mapping[str, object], Mapping[str, object]], bool] | None = None):
    """@autotune(configs, key)(kernel); `keep(config_kwargs, named_args)` drops configs invalid for a launch."""
    prune = None
    if keep is not None:
        prune = {"early_config_prune": lambda configs, named, **kw: [c for c in configs if keep(c.kwargs, named)]}
    return autotune(configs=as_configs(dicts), key=list(key), prune_configs_by=prune)(kernel)


def with_builder(tuned_kernel, builder: str):
    """Register `builder` ("module:function", f(problem, config dict) -> TuneProblem) for `tuned_kernel`: the
    family re-derives a captured launch for each config it sweeps (jit.tune.TuneProblem.builder), because the
    launch's arguments depend on the config. Returns `tuned_kernel`."""
    _BUILDERS[id(tuned_kernel)] = builder
    return tuned_kernel


def builder_of(tuned_kernel) -> str | None:
    """The per-config problem builder registered for `tuned_kernel`, or None (its captured launch serves all)."""
    return _BUILDERS.get(id(tuned_kernel))


def library_problem(name: str, options: dict) -> TuneProblem:
    """The tune problem of the registry Case whose op is `name` (wavetile-tune's default `--library`).

    The case's host function runs once with autotuning replaced by capture (jit.autotune.
    capture_launches): the autotuned launch it makes, with its inputs as they were, becomes the problem,
    and the arrays that launch wrote are the outputs. Options: shape=SUBSTRING or case=INDEX picks
    among the op's cases, kernel=NAME among the autotuned kernels the host function launches.
    """
    shape, index, kernel_name = options.pop("shape", None), options.pop("case", None), options.pop("kernel", None)
    if options:
        raise SystemExit(f"wavetile-tune: a library case takes shape=, case= and kernel=, not {sorted(options)}")
    cases = [c for c in all_cases() if c.op == name and (shape is None or str(shape) in c.shape)]
    if not cases:
        known = sorted({c.op for c in all_cases()})
        raise SystemExit(f"wavetile-tune: no kernel-library case {name!r}" + (f" with shape {shape!r}" if shape else "")
                         + f"; known: {', '.join(known)}")
    case = cases[int(index or 0)]
    with capture_launches() as launches:
        case.run()
    if kernel_name is not None:
        launches = [launch for launch in launches if launch.kernel.__name__ == kernel_name]
    if not launches:
        raise SystemExit(f"wavetile-tune: {name} ({case.shape}) launches no @autotune kernel"
                         + (f" named {kernel_name}" if kernel_name else ""))
    launch = launches[0]
    return TuneProblem(launch.kernel, args=launch.args, kwargs=launch.kwargs, grid=launch.grid,
                       outputs=launch.changed, rtol=max(case.rtol, 1e-6), atol=max(case.atol, 1e-6),
                       builder=builder_of(launch.kernel),
                       description=f"{case.op} {case.shape} {case.dtype}")
