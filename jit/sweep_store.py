"""Sweep results on disk, one entry per config, so an interrupted `wavetile-tune` sweep resumes.

Entries live in the compiled-kernel disk cache (jit.cache, under $WAVETILE_CACHE_DIR) under a key of
everything that decides a config's result: the kernel's source hash, target, sizes, library resolver,
machine, seed, CPU runs, whether it was modeled, the compiler's and simulator's sources (jit.compiler.
model_fingerprint: a result of an older model is not reused) and the config itself.
"""

from __future__ import annotations

import hashlib
import io
import json

import numpy as np

from jit import cache
from jit.autotune import TuningRecord, machine_fingerprint

RECORD = "record.json"
OUTPUTS = "outputs.npz"


def kernel_source_key(kernel) -> str | None:
    """The source hash of the JIT function under an autotuner / heuristics wrapper (None if it has none)."""
    while kernel is not None and not hasattr(kernel, "is_wavetile_jit"):
        kernel = getattr(kernel, "fn", None)
    return None if kernel is None else kernel.cache_key


def entry_key(task_identity: dict, config: dict, machine: str, kernel_key: str | None) -> str:
    """The disk-cache key of one config's result."""
    import simulator
    from jit.compiler import model_fingerprint

    with simulator.machine(machine):
        fingerprint = machine_fingerprint()
    parts = ["sweep", task_identity, config, fingerprint, kernel_key, model_fingerprint()]
    return hashlib.sha256(json.dumps(parts, sort_keys=True, default=str).encode()).hexdigest()


def load(key: str) -> tuple[TuningRecord, dict[str, np.ndarray]] | None:
    """A stored result, or None when absent or unreadable (then the config simply runs again)."""
    files = cache.get(key)
    if not files or RECORD not in files or OUTPUTS not in files:
        return None
    try:
        record = TuningRecord.from_dict(json.loads(files[RECORD]))
        with np.load(io.BytesIO(files[OUTPUTS]), allow_pickle=False) as data:
            outputs = {name: data[name] for name in data.files}
    except (ValueError, KeyError, OSError):
        return None
    return record, outputs


def store(key: str, record: TuningRecord, outputs: dict[str, np.ndarray]) -> None:
    buffer = io.BytesIO()
    np.savez(buffer, **outputs)
    cache.put(key, {RECORD: json.dumps(record.to_dict(), default=str).encode(), OUTPUTS: buffer.getvalue()})
