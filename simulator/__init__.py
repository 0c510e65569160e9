"""The emulated machine: specs, memory-system models, counters, cost model, profiles and traces.

Models hardware only; it knows nothing of the DSL or the JIT (they call into it).

    import simulator
    with simulator.machine("h200"):            # or kernel[grid](..., machine="h200"), or WAVETILE_MACHINE
        ...
    with simulator.profile() as prof:
        ...
    print(prof.table())

The runtime feeds per-warp addresses to `coalesce`, `bank_conflicts`, `atomic_contention` and an
`L2Cache`, adds the resulting `Counters`, and hands them to `LaunchRecord.build` + `record_launch`.
"""

from simulator.atomics import AtomicAccess, atomic_contention
from simulator.banks import SharedAccess, bank_conflicts
from simulator.coalescing import GlobalAccess, coalesce
from simulator.cost import BOUNDS, COMPONENTS, Estimate, WaveTiming, attribute, estimate
from simulator.counters import INSTRUCTION_CLASSES, Counters
from simulator.l2 import L2Cache, L2Stats
from simulator.memory import empty, mark_initialized
from simulator.occupancy import Occupancy, Waves, estimate_registers, occupancy, waves
from simulator.profiles import LaunchRecord, Profile, is_profiling, profile, record_launch
from simulator.recorder import LaunchCounters, device_l2, reset_device_l2
from simulator.specs import (
    DEFAULT_MACHINE,
    MachineSpec,
    current_spec,
    get_spec,
    machine,
    register_spec,
    registered_specs,
)

__all__ = [
    "AtomicAccess", "BOUNDS", "COMPONENTS", "Counters", "DEFAULT_MACHINE", "Estimate", "GlobalAccess",
    "INSTRUCTION_CLASSES", "L2Cache", "L2Stats", "LaunchCounters", "LaunchRecord", "MachineSpec",
    "Occupancy", "Profile", "SharedAccess", "WaveTiming", "Waves", "atomic_contention", "attribute",
    "bank_conflicts", "coalesce", "current_spec", "device_l2", "estimate", "estimate_registers", "get_spec",
    "is_profiling", "machine", "occupancy", "profile", "record_launch", "register_spec", "registered_specs",
    "reset_device_l2", "waves", "empty", "mark_initialized",
]
