"""Occupancy: how many programs fit on one compute unit at once, and how many waves a grid takes.

Rule (research/simulator.md §3.3, CUDA Best Practices §11.1.1), with the warp width taken from
the spec:

    programs = min(max_programs_per_unit,
                   floor(max_warps_per_unit / num_warps),
                   floor(registers_per_unit / (num_warps * registers_per_warp)),
                   floor(shared_bytes_per_unit / (shared_bytes + shared_reserved)))
    registers_per_warp = ceil(warp_size * registers_per_thread / alloc_unit) * alloc_unit

A program that exceeds a per-program limit (threads, registers, shared memory) cannot launch:
`programs_per_unit` is 0 and `limiter` names the limit. The simpler calculator above ignores the
per-sub-partition register split of NVIDIA's official one.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from simulator.specs import MachineSpec, ceil_div, current_spec


@dataclass(frozen=True)
class Occupancy:
    """Resident programs per unit and what limits them."""

    programs_per_unit: int
    warps_per_program: int
    limiter: str
    limits: dict[str, int]
    max_warps_per_unit: int

    @property
    def active_warps(self) -> int:
        return self.programs_per_unit * self.warps_per_program

    @property
    def fraction(self) -> float:
        """Resident warps / the unit's warp slots (the usual 'occupancy')."""
        return self.active_warps / self.max_warps_per_unit

    @property
    def launchable(self) -> bool:
        return self.programs_per_unit > 0


@dataclass(frozen=True)
class Waves:
    """How a grid of programs is cut into waves of `slots` = programs_per_unit x units."""

    programs: int
    slots: int
    full_waves: int
    tail_programs: int

    @property
    def count(self) -> int:
        return self.full_waves + (1 if self.tail_programs else 0)

    @property
    def tail_utilisation(self) -> float:
        """Fraction of slots busy in the last wave (1.0 when the grid fills every wave)."""
        if not self.tail_programs:
            return 1.0
        return self.tail_programs / self.slots

    @property
    def utilisation(self) -> float:
        """Programs / (waves x slots): how much of the machine the grid uses on average."""
        return self.programs / (self.count * self.slots) if self.count else 0.0


def occupancy(
    spec: MachineSpec | str | None = None,
    num_warps: int = 4,
    registers_per_thread: int = 0,
    shared_bytes_per_program: int = 0,
) -> Occupancy:
    """Resident programs per unit for one launch configuration (registers 0 = unknown, not limiting)."""
    spec = current_spec(spec)
    if num_warps <= 0:
        raise ValueError(f"num_warps must be positive, got {num_warps}")
    registers = min(registers_per_thread, register_budget(spec, num_warps))  # the rest spills
    per_warp = ceil_div(spec.warp_size * registers, spec.register_alloc_unit) * spec.register_alloc_unit
    per_program_registers = num_warps * per_warp
    shared = shared_bytes_per_program + spec.shared_reserved_per_program

    limits = {
        "programs": spec.max_programs_per_unit,
        "warps": spec.max_warps_per_unit // num_warps,
        "registers": spec.registers_per_unit // per_program_registers if per_program_registers else
        spec.max_programs_per_unit,
        "shared": spec.shared_bytes_per_unit // shared if shared else spec.max_programs_per_unit,
    }
    blockers = {
        "threads": num_warps * spec.warp_size > spec.max_threads_per_program,
        "shared": shared_bytes_per_program > spec.shared_bytes_per_program_max,
    }
    for name, blocked in blockers.items():
        if blocked:
            limits[name] = 0
    limiter = min(limits, key=lambda k: (limits[k], _PRIORITY.index(k) if k in _PRIORITY else 99))
    return Occupancy(programs_per_unit=max(0, min(limits.values())), warps_per_program=num_warps,
                     limiter=limiter, limits=limits, max_warps_per_unit=spec.max_warps_per_unit)


# When limits tie, name the hardware maximum first (nothing to fix), then what a user can change.
_PRIORITY = ("threads", "warps", "programs", "shared", "registers")


def waves(programs: int, programs_per_unit: int, units: int) -> Waves:
    """Full waves and the tail of a grid of `programs` on `units` units."""
    if programs_per_unit <= 0:
        raise ValueError("no program fits on a unit (programs_per_unit is 0)")
    slots = programs_per_unit * units
    return Waves(programs=programs, slots=slots, full_waves=programs // slots,
                 tail_programs=programs % slots)


# A register estimate from the bytes of tile values live at once (jit.gpu_resources.register_bytes): Triton's
# register counts on the H200 sweep's calibration configs fit `base + share * bytes / (4 * threads)` with these
# (benchmarks/gpu/fit_registers.py, simulator/data/h200_compile_facts.jsonl): the allocator keeps about 45 % of
# what the liveness sweep counts (it reuses and recomputes the rest), plus registers for addresses, indices and
# loop state.
REGISTER_BASE = 16
REGISTER_SHARE = 0.45
# How far the estimate misses one kernel's configs apart: the robust standard deviation (1.4826 x the median
# absolute deviation) of log(Triton's count / the estimate) about each calibration kernel's own median, 0.130
# (benchmarks/gpu/fit_registers.py prints it). A kernel-wide miss shifts all of its configs alike; this spread is
# what can put one config on the wrong side of the spill or occupancy step, so the cost model averages over it.
REGISTER_SPREAD = 0.13


def estimate_registers(live_bytes_per_program: int, num_warps: int, spec: MachineSpec | str | None = None,
                       base: int = REGISTER_BASE, share: float = REGISTER_SHARE) -> int:
    """Registers per thread for `live_bytes_per_program` bytes of live tile values. Not clamped: what exceeds
    the machine's per-thread budget (`register_budget`) spills to local memory, it does not stop the launch."""
    spec = current_spec(spec)
    threads = num_warps * spec.warp_size
    return base + math.ceil(share * max(0, live_bytes_per_program) / (4 * threads))


def register_target(spec: MachineSpec, num_warps: int) -> int:
    """Registers a thread can have while a unit still holds as many warps of such programs as its warp and program
    limits allow: the GPU compiler's target. Past it, Triton's H200 build schedules a loop's loads apart, waiting for
    some before issuing the rest, to need fewer (its machine code: one wait a body below the target, several above;
    64 registers for 1-warp programs, 32 for larger ones; simulator/data/h200_sass_loops.jsonl, and the same PTX
    rebuilt for other program sizes: benchmarks/gpu/register_target.py)."""
    warps = min(spec.max_warps_per_unit, spec.max_programs_per_unit * num_warps) // num_warps * num_warps
    unit = max(1, spec.register_alloc_unit // spec.warp_size)
    per_thread = spec.registers_per_unit // max(1, warps * spec.warp_size) // unit * unit
    return min(register_budget(spec, num_warps), max(unit, per_thread))


def gather_waits(spec: MachineSpec, num_warps: int) -> float:
    """Round trips the body of a loop that gathers (loads through indices it loads: a paged KV cache's page table, a
    MoE combine's expert rows) waits for its loads once its registers pass register_target: the indexed loads can
    only issue as their indices arrive, and squeezed into fewer registers they issue a few at a time, the more so
    the fewer warps hold them (spec.serialized_gather_waits, the machine code's medians by warps)."""
    table = spec.serialized_gather_waits
    return table[max(warps for warps in table if warps <= max(1, num_warps))]


def register_budget(spec: MachineSpec, num_warps: int) -> int:
    """Registers one thread can get: the per-thread maximum, or the program's share of its budget
    (a 1,024-thread program gets 64 of 65,536), in whole allocation units per warp."""
    per_thread = spec.registers_per_program // max(1, num_warps * spec.warp_size)
    unit = max(1, spec.register_alloc_unit // spec.warp_size)
    return max(unit, min(spec.max_registers_per_thread, per_thread // unit * unit))
