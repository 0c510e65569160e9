"""The library's per-machine config table: which config each autotuned kernel launches by default.

`python -m kernels.tune` writes `kernels/configs/<machine>.json`; host functions called without `config`
read it through `pick` instead of taking the first of their AUTOTUNE_CONFIGS. An entry is keyed by the
kernel (`module.name` of its @jit function) and its shape key: the values of the kernel's @autotune
`key` arguments plus the dtypes of its array arguments, e.g. `M=1 N=1024 K=1024 | bfloat16 bfloat16
bfloat16` for kernels.gemm.gemm_kernel.

Lookup rules (in this order):
1. exact: an entry with the same shape key;
2. nearest: among entries with the same dtypes and the same non-integer key values, the one whose
   integer key values are closest in log2 (sum over the values of |log2 a - log2 b|; ties go to the
   first entry in the file, which is sorted), so decode at M=3 takes the M=2 or M=4 pick;
3. default: the family's own untuned choice, the @autotune wrapper's `default_rule` when it has one (attention
   and paged decode take a smaller key block above head dim 128), else the first of its AUTOTUNE_CONFIGS (also
   when the table's config is not one of them any more, or the kernel's config pruning rejects it for these
   arguments). `python -m kernels.tune` measures its gains against the same default.
`last_pick(kernel)` says which rule the last launch used, `pick_counts()` how often each rule answered.
"""

from __future__ import annotations

import collections
import contextlib
import functools
import json
import math
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path

import numpy as np

import simulator
from jit import Config

TABLE_DIR = Path(__file__).resolve().parent / "configs"
EXACT, NEAREST, DEFAULT, FORCED = "table (exact)", "table (nearest)", "default (untuned choice)", "forced"

_FORCED: dict[str, Config] = {}
_LAST: dict[str, str] = {}
_COUNTS: collections.Counter = collections.Counter()


def kernel_id(tuned) -> str:
    """`module.name` of the @jit function under an @autotune wrapper: the table's name for a kernel."""
    base = tuned.jit_function
    return f"{base.fn.__module__.removeprefix('kernels.')}.{base.__name__}"


def shape_key(tuned, args: Sequence, meta: Mapping[str, object]) -> dict:
    """The key values and array dtypes of one launch of `tuned` (an @autotune kernel)."""
    named = tuned.named_args(tuple(args), dict(meta))
    values = {k: _plain(named.get(k)) for k in tuned.keys}
    dtypes = [str(v.dtype) for v in named.values() if isinstance(v, np.ndarray)]
    return {"values": values, "dtypes": dtypes}


def key_text(key: Mapping) -> str:
    """A shape key as one readable line: `M=1 N=1024 K=1024 | bfloat16 bfloat16 bfloat16`."""
    return " ".join(f"{k}={v}" for k, v in key["values"].items()) + " | " + " ".join(key["dtypes"])


def table_path(machine: str, directory: Path | None = None) -> Path:
    return (directory or TABLE_DIR) / f"{machine}.json"


@functools.cache
def _load_cached(path: str) -> dict:
    file = Path(path)
    if not file.exists():
        return {}
    data = json.loads(file.read_text())
    return data.get("kernels", {})


def load(machine: str, directory: Path | None = None) -> dict[str, list[dict]]:
    """The table of `machine`: kernel id -> entries ({"key", "config", ...}); {} when there is none."""
    return _load_cached(str(table_path(machine, directory)))


def save(machine: str, kernels: Mapping[str, list[dict]], meta: Mapping[str, object],
         directory: Path | None = None) -> Path:
    """Write the table of `machine` (entries sorted by kernel and key, so the file is deterministic)."""
    path = table_path(machine, directory)
    path.parent.mkdir(parents=True, exist_ok=True)
    head = json.dumps({**meta, "machine": machine}, indent=1)[:-2]
    blocks = []
    for name, entries in sorted(kernels.items()):
        lines = ",\n".join("   " + json.dumps(e) for e in sorted(entries, key=lambda e: key_text(e["key"])))
        blocks.append(f"  {json.dumps(name)}: [\n{lines}\n  ]")
    path.write_text(head + ',\n "kernels": {\n' + ",\n".join(blocks) + "\n }\n}\n")  # one entry per line
    _load_cached.cache_clear()
    return path


def lookup(entries: Sequence[dict], key: Mapping) -> tuple[dict | None, str]:
    """The entry the rules above choose for `key` among one kernel's entries, and which rule chose it."""
    for entry in entries:
        if entry["key"] == key:
            return entry, EXACT
    best, best_distance = None, math.inf
    for entry in entries:
        distance = _distance(entry["key"], key)
        if distance < best_distance:
            best, best_distance = entry, distance
    return (best, NEAREST) if best is not None else (None, DEFAULT)


def pick(tuned, configs: Sequence, args: Sequence, meta: Mapping[str, object]) -> Config:
    """The config a host function launches `tuned`'s kernel with when the caller gave none (see the rules)."""
    name = kernel_id(tuned)
    candidates = [c if isinstance(c, Config) else as_config(c) for c in configs]
    if name in _FORCED:
        _LAST[name] = FORCED
        return _FORCED[name]
    entries = load(simulator.current_spec().name).get(name)
    if entries:
        entry, rule = lookup(entries, shape_key(tuned, args, meta))
        chosen = Config.from_dict(entry["config"]) if entry else None
        if chosen in candidates and _allowed(tuned, chosen, args, meta):
            _LAST[name] = rule
            _COUNTS[rule] += 1
            return candidates[candidates.index(chosen)]
    _LAST[name] = DEFAULT
    _COUNTS[DEFAULT] += 1
    return default_config(tuned, candidates, args, meta)


def entry(tuned, args: Sequence, meta: Mapping[str, object]) -> dict | None:
    """The table entry the lookup rules give this launch of `tuned` (None: none), counting no pick: for a family
    that weighs its kernels' entries together (MoE's plan height, from each config's `config_us`)."""
    entries = load(simulator.current_spec().name).get(kernel_id(tuned))
    return lookup(entries, shape_key(tuned, args, meta))[0] if entries else None


def default_config(tuned, configs: Sequence, args: Sequence, meta: Mapping[str, object]) -> Config:
    """The config a launch of `tuned` takes when the table has none: its `default_rule`'s (if among `configs`),
    else the first of `configs`."""
    candidates = [c if isinstance(c, Config) else as_config(c) for c in configs]
    chosen = tuned.default_config(tuple(args), dict(meta))
    return candidates[candidates.index(chosen)] if chosen in candidates else candidates[0]


def with_default(tuned, rule: Callable[[Mapping[str, object]], Config]):
    """Give the @autotune kernel `tuned` its family's untuned choice, `rule(named arguments) -> Config`: what
    `pick` falls back to, capture runs and `python -m kernels.tune` measures gains against. Returns `tuned`."""
    tuned.default_rule = rule
    return tuned


def forced(tuned) -> Config | None:
    """The config `forcing` imposes on this kernel now, or None: a family whose kernels must agree on a
    meta-parameter (MoE's plan height) lets a checked kernel decide it."""
    return _FORCED.get(kernel_id(tuned))


def last_pick(tuned_or_id) -> str | None:
    """Which rule chose the config of the last table lookup for this kernel (None: no lookup yet)."""
    return _LAST.get(tuned_or_id if isinstance(tuned_or_id, str) else kernel_id(tuned_or_id))


def pick_counts() -> dict[str, int]:
    """How many lookups each rule answered since the process started (what `python -m kernels` reports)."""
    return dict(_COUNTS)


@contextlib.contextmanager
def forcing(kernel: str, config: Config) -> Iterator[None]:
    """Inside the block, host functions launch `kernel` (a kernel id) with `config`: how a config is checked
    against the op's numpy reference through the unchanged host function."""
    previous = _FORCED.get(kernel)
    _FORCED[kernel] = config
    try:
        yield
    finally:
        if previous is None:
            del _FORCED[kernel]
        else:
            _FORCED[kernel] = previous


# -- helpers


def _plain(value):
    """A key value as JSON keeps it (numpy scalars to Python, anything else to its repr)."""
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    if isinstance(value, (int, np.integer)):
        return int(value)
    if isinstance(value, (float, np.floating)):
        return float(value)
    return value if value is None or isinstance(value, str) else repr(value)


def _distance(a: Mapping, b: Mapping) -> float:
    """log2 distance of the integer key values; inf unless dtypes and every other value agree."""
    if a["dtypes"] != b["dtypes"] or a["values"].keys() != b["values"].keys():
        return math.inf
    total = 0.0
    for name, x in a["values"].items():
        y = b["values"][name]
        if isinstance(x, int) and isinstance(y, int) and not isinstance(x, bool) and not isinstance(y, bool):
            total += abs(math.log2(max(x, 1)) - math.log2(max(y, 1)))
        elif x != y:
            return math.inf
    return total


def as_config(d: Mapping[str, object]) -> Config:
    options = ("num_warps", "num_stages")
    return Config({k: v for k, v in d.items() if k not in options}, **{k: d[k] for k in options if k in d})


def _allowed(tuned, config: Config, args: Sequence, meta: Mapping[str, object]) -> bool:
    """Whether the kernel's own config pruning keeps `config` for these arguments (True when it has none)."""
    prune = getattr(tuned, "early_config_prune", None)
    if prune is None:
        return True
    named = tuned.named_args(tuple(args), dict(meta))
    return config in list(prune([config], named, **dict(meta)))
