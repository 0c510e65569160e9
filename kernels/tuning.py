"""Autotuned variants of the library's kernels, built from each module's AUTOTUNE_CONFIGS.

Host functions launch the plain `@jit` kernel with the first config by default (one compile, fast tests);
`tune=True` launches the `@autotune` wrapper made here instead, which compiles and scores every config on the
first call for each key (modeled time on the current machine) and caches the choice.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

from jit import Config, autotune

_LAUNCH_OPTIONS = ("num_warps", "num_stages")


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

