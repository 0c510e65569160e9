"""Atomics: how much same-address serialisation a batch of atomic warp instructions causes.

Atomics to distinct addresses proceed in parallel at the L2; lanes that hit the same address
are applied one after another. Per instruction we count the lanes, the longest same-address
chain, and the extra serial steps (active lanes - distinct addresses). Across the whole launch,
the most-hit address bounds the kernel from below (every program's update to one counter is
serialised), so that is reported too.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from simulator.counters import Counters
from simulator.rows import active_counts, as_lanes, longest_runs, sorted_distinct, split_groups
from simulator.specs import MachineSpec, current_spec


@dataclass(frozen=True)
class AtomicAccess:
    """Exact counts of a batch of atomic warp instructions; arrays are per instruction."""

    requests: np.ndarray
    ops: np.ndarray
    serialized: np.ndarray
    multiplicity: np.ndarray
    launch_multiplicity: int

    def to_counters(self) -> Counters:
        """These counts as a Counters record."""
        return Counters(
            atomic_requests=int(self.requests.sum()),
            atomic_ops=int(self.ops.sum()),
            atomic_serialized=int(self.serialized.sum()),
            atomic_max_multiplicity=self.launch_multiplicity,
        )


def atomic_contention(
    addresses: np.ndarray,
    mask: np.ndarray | None = None,
    spec: MachineSpec | str | None = None,
    elements: int = 1,
) -> AtomicAccess:
    """Same-address multiplicity of atomic warp instructions.

    addresses: int64 [instructions, warp_size] byte addresses of each lane's first element; mask: bool, True =
    active lane; elements: consecutive elements each lane updates (a vector atomic: Hopper adds 4 fp32 a lane).
    `launch_multiplicity` is the most operations on a single address over all rows given, so
    pass all of a launch's atomics in one call (or take the max of the calls' values).
    """
    spec = current_spec(spec)
    addr, active = as_lanes(addresses, mask)
    n, width = addr.shape
    ops = active_counts(addr.shape, active) * elements
    ordered, fresh, valid_sorted = sorted_distinct(addr.copy() if active is None else addr, active)
    distinct = fresh.sum(axis=1)
    multiplicity = longest_runs(fresh, valid_sorted)

    _, groups_active = split_groups(addr, active, spec.transaction_lanes)
    groups = -(-width // max(1, min(spec.transaction_lanes, width))) if width else 0
    if groups_active is None:
        requests = np.full(n, groups, dtype=np.int64)
    else:
        requests = groups_active.any(axis=1).reshape(n, groups).sum(axis=1)

    values = ordered.ravel() if valid_sorted is None else ordered[valid_sorted]
    launch = int(np.unique(values, return_counts=True)[1].max()) if values.size else 0
    return AtomicAccess(requests=requests, ops=ops, serialized=ops - distinct * elements,
                        multiplicity=multiplicity, launch_multiplicity=launch)
