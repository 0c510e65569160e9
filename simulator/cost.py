"""The cost model: exact counters + machine spec -> modeled kernel time and what bounds it.

A per-unit model of waves ("wave roofline + latency floor", research/simulator.md §4.3, extended with
what the H200 sweeps showed matters). With b resident programs per unit (occupancy: warps, shared
memory, registers up to the per-thread budget), a grid runs in waves of b x units programs; a last,
partial wave runs with fewer programs per unit on fewer units, which then share L2 and DRAM. Per wave,
on one unit, in cycles (per-program counts are launch totals / programs):

    tensor   b * sum_tiles F / (rate_d * tensor_efficiency * path)   / min(1, A / tensor_subcores)
             path = 1 for warpgroup MMAs (warps in groups of mma_async_warps, tile rows a multiple of
             mma_async_min_m), mma_sync_fraction for warp-level MMAs
    issue    max(b * max_pipe I_pipe * warp_size / lanes_pipe,
                 b * I / (schedulers * min(1, A / schedulers * warp_issue_ipc)),
                 I / num_warps / warp_issue_ipc)        (one warp alone stalls on its dependences)
    shared   b * (wavefronts / shared_wavefronts_per_clk + T * mma_transpose_cycles); T = elements of dot
             operands of a K-major-only type (mma_kmajor_types: warpgroup MMAs read them only K-major) that
             lie MN-major in memory, transposed through registers into shared memory at every execution
    l2       b * (sectors * sector_bytes + spill bytes) / (l2_bytes_per_s / clock / active_units)
    dram     b * dram_bytes / (dram_bytes_per_s * dram_efficiency / clock / active_units)
    latency  (1 + (rounds - dep) / overlap + dep) * L + barriers_per_warp * (barrier_cycles + exchange_cycles);
             rounds = the longest chain of dependent loads, dep = the round trips of loads whose addresses
             are loaded values (a page-table gather: never fetched ahead), overlap = num_stages - 1 for
             loops (software pipelining keeps that many iterations of loads in flight),
             L = h * l2_latency + (1 - h) * mem_latency
    atomics  b * (atomic_ops / atomic_ops_per_clk + atomic_serialized * atomic_serial_cycles)

where A = b * num_warps resident warps and I counts warp instructions (memory ones included). A
thread that needs more registers than its budget (the per-thread maximum, or the program's share of
the unit's registers) spills the rest: each spilled register costs spill_traffic local-memory
stores and reloads per program, on the memory pipe and through L2. T_wave = max + alpha * (sum -
max); the kernel takes launch_overhead_s + sum over waves / clock_hz, and at least
atomic_max_multiplicity * atomic_serial_cycles (one hot address serialises the whole grid). Every
parameter is a spec field, so a machine's model is data (presets.py documents each value and its
source); `python -m simulator.validate` scores it against measured H200 sweeps.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from simulator.counters import INSTRUCTION_CLASSES, Counters
from simulator.occupancy import Occupancy, Waves, occupancy, register_budget, waves
from simulator.specs import MachineSpec, ceil_div, current_spec

COMPONENTS = ("tensor", "issue", "shared", "l2", "dram", "latency", "atomics")
BOUNDS = COMPONENTS + ("launch",)


class NotLaunchable(ValueError):
    """The launch exceeds a hard limit of the machine (threads or shared memory per program)."""

    def __init__(self, message: str, counters: Counters) -> None:
        super().__init__(message)
        self.counters = counters.as_dict()


@dataclass(frozen=True)
class WaveTiming:
    """One wave of the modeled schedule: when it starts (after the launch overhead) and how long."""

    start_s: float
    seconds: float
    programs: int
    programs_per_unit: int
    active_units: int
    components: dict[str, float] = field(default_factory=dict)  # cycles per component


@dataclass(frozen=True)
class Estimate:
    """Modeled time of one launch on one machine.

    components: seconds per component summed over waves, plus "launch"; bound: the largest of
    them (one of BOUNDS); schedule: the waves, for traces.
    """

    seconds: float
    bound: str
    components: dict[str, float]
    occupancy: Occupancy
    waves: Waves
    schedule: tuple[WaveTiming, ...]
    machine: str
    units: int
    clock_hz: float

    @property
    def active_units(self) -> int:
        """Units that run at least one program."""
        return max((w.active_units for w in self.schedule), default=0)


def estimate(counters: Counters, grid: int | tuple[int, ...] | None = None,
             spec: MachineSpec | str | None = None) -> Estimate:
    """Modeled time of a launch whose programs did, on average, what `counters` says.

    grid: the launch grid (programs = its product); default counters.programs. When counters
    cover only sampled programs, counters.programs says how many, and the rest are assumed alike;
    counters.programs = 0 means the counters describe one program.
    """
    spec = current_spec(spec)
    programs = _programs(grid) if grid is not None else counters.programs
    if programs <= 0:
        raise ValueError("estimate needs a grid with at least one program")
    num_warps = counters.num_warps or 4
    occ = occupancy(spec, num_warps, counters.registers_per_thread, counters.shared_bytes_per_program)
    if not occ.launchable:
        raise NotLaunchable(f"launch cannot run on {spec.name}: {occ.limiter} limit exceeded "
                            f"(num_warps={num_warps}, shared={counters.shared_bytes_per_program} B, "
                            f"registers/thread={counters.registers_per_thread})", counters)
    plan = waves(programs, occ.programs_per_unit, spec.units)
    per_program = _PerProgram(counters, spec, num_warps)

    schedule, start = [], 0.0
    shapes = [(occ.programs_per_unit, spec.units, plan.full_waves)]
    if plan.tail_programs:
        per_unit = ceil_div(plan.tail_programs, spec.units)
        shapes.append((per_unit, min(spec.units, plan.tail_programs), 1))
    totals = dict.fromkeys(COMPONENTS, 0.0)
    for per_unit, units, count in shapes:
        if count == 0:
            continue
        cycles = _wave_components(per_program, spec, per_unit, units, num_warps)
        wave_cycles = _blend(cycles, spec.alpha)
        in_wave = plan.slots if per_unit == occ.programs_per_unit and units == spec.units else plan.tail_programs
        for _ in range(count):
            schedule.append(WaveTiming(start_s=start, seconds=wave_cycles / spec.clock_hz, programs=in_wave,
                                       programs_per_unit=per_unit, active_units=units, components=cycles))
            start += wave_cycles / spec.clock_hz
        for name in COMPONENTS:
            totals[name] += count * cycles[name] / spec.clock_hz

    contention = counters.atomic_max_multiplicity * spec.atomic_serial_cycles / spec.clock_hz
    body = max(start, contention)
    totals["atomics"] = max(totals["atomics"], contention)
    totals["launch"] = spec.launch_overhead_s
    bound = max(BOUNDS, key=lambda name: totals[name])
    return Estimate(seconds=spec.launch_overhead_s + body, bound=bound, components=totals, occupancy=occ,
                    waves=plan, schedule=tuple(schedule), machine=spec.name, units=spec.units,
                    clock_hz=spec.clock_hz)


class _PerProgram:
    """Average counts of one program, and the per-program cycle costs that do not depend on the wave."""

    def __init__(self, counters: Counters, spec: MachineSpec, num_warps: int) -> None:
        n = max(1, counters.programs)
        tensor, transposed = _tensor_cycles(counters, spec, num_warps)
        self.tensor_cycles = tensor / n
        self.transpose_cycles = transposed * spec.mma_transpose_cycles / n
        spilled = max(0, counters.registers_per_thread - register_budget(spec, num_warps))
        # every spilled register goes to local memory and back spill_traffic times per iteration of the
        # program's main loop (an accumulator that does not fit is stored and reloaded at every step)
        iterations = max(1.0, counters.memory_rounds / n)
        spill_instructions = spilled * spec.spill_traffic * num_warps * iterations
        pipes: dict[str, float] = {}
        for cls, count in counters.instructions.items():
            pipe = INSTRUCTION_CLASSES.get(cls, "alu")
            pipes[pipe] = pipes.get(pipe, 0.0) + count / n
        # global and atomic requests are per transaction group (4 per 128-lane MUSA warp instruction)
        groups = ceil_div(spec.warp_size, min(spec.transaction_lanes, spec.warp_size))
        global_instructions = (counters.load_requests + counters.store_requests + counters.atomic_requests) / groups
        pipes["memory"] = (pipes.get("memory", 0.0) + (global_instructions + counters.shared_requests) / n
                           + spill_instructions)
        self.pipe_cycles = max((count * spec.warp_size / spec.simt_lanes_per_clk[p] for p, count in pipes.items()),
                               default=0.0)
        self.instructions = sum(pipes.values())
        # one warp alone issues warp_issue_ipc instructions per clock (its dependent chains stall it)
        self.warp_chain_cycles = self.instructions / num_warps / spec.warp_issue_ipc
        self.wavefronts = counters.shared_wavefronts / n
        self.spill_bytes = spill_instructions * spec.warp_size * 4
        self.spill_footprint = spilled * 4 * num_warps * spec.warp_size  # local memory one program keeps
        self.shared_per_program = counters.shared_bytes_per_program
        self.l2_bytes = counters.global_sectors * spec.sector_bytes / n + self.spill_bytes
        self.dram_bytes = counters.dram_bytes / n
        self.atomic_cycles = (counters.atomic_ops / spec.atomic_ops_per_clk
                              + counters.atomic_serialized * spec.atomic_serial_cycles) / n
        rounds = counters.memory_rounds / n
        if not counters.memory_rounds and counters.load_requests:
            per_warp = counters.load_requests / n / num_warps
            rounds = math.ceil(per_warp / (spec.loads_in_flight_per_warp * max(1, counters.num_stages)))
        # software pipelining keeps num_stages - 1 iterations of loads in flight ahead of their use
        overlap = max(1, counters.num_stages - 1) if rounds > 1 else 1
        barriers_per_warp = counters.barriers / n / num_warps
        hit = counters.l2_hit_rate
        round_trip = hit * spec.l2_latency_cycles + (1 - hit) * spec.mem_latency_cycles
        # a load whose address is a loaded value cannot be fetched ahead with it: its round trip stays exposed
        dependent = counters.dependent_rounds / n
        self.latency_cycles = ((1 + (rounds - dependent) / overlap + dependent) * round_trip
                               + barriers_per_warp * (spec.barrier_cycles + spec.exchange_cycles))


def _tensor_cycles(counters: Counters, spec: MachineSpec, num_warps: int) -> tuple[float, float]:
    """Tensor-core cycles of the launch's dots, by the matrix instruction each tile shape can use, and the
    elements of operands that must be transposed on their way to shared memory.

    Tiles that can issue warpgroup MMAs (spec.async_mma) run at the full rate, others issue warp-level MMAs at
    mma_sync_fraction. An operand of a K-major-only type (mma_kmajor_types) laid out MN-major in memory is
    transposed through registers into shared memory at every execution, mma_transpose_cycles per element.
    fp32 operands without TF32 use the SIMT rate either way."""
    tiles = counters.tensor_tiles or {f"{d}:0:0:0": f for d, f in counters.tensor_flops.items()}
    cycles, transposed = 0.0, 0.0
    for key, flops in tiles.items():
        dtype, rows, cols, depth, *rest = key.split(":") + ["0"] * (3 - key.count(":"))
        operands = rest[0].split(",") if rest else []
        rate = spec.tensor_rate(dtype) * spec.tensor_efficiency
        if dtype not in ("fp32", "fp64") and int(rows) and not spec.async_mma(int(rows), num_warps):
            rate *= spec.mma_sync_fraction
        elif dtype in spec.mma_kmajor_types and int(rows):
            executions = flops / (2 * int(rows) * int(cols) * int(depth))
            sizes = (int(rows) * int(depth), int(depth) * int(cols))  # A is M x K, B is K x N
            transposed += executions * sum(size for size, where in zip(sizes, operands) if where == "mn")
        cycles += flops / rate
    return cycles, transposed


def _wave_components(p: _PerProgram, spec: MachineSpec, per_unit: int, units: int,
                     num_warps: int) -> dict[str, float]:
    """Cycles of each component for one wave with `per_unit` programs on each of `units` units."""
    warps = per_unit * num_warps
    l2_per_clk = spec.l2_bytes_per_s / spec.clock_hz / units
    dram_per_clk = spec.dram_bytes_per_s * spec.dram_efficiency / spec.clock_hz / units
    issue_rate = spec.issue_schedulers * min(1.0, warps / spec.issue_schedulers * spec.warp_issue_ipc)
    # spilled registers live in the unit's L1 while the resident programs' local memory fits beside their
    # shared memory; the rest goes out through the L2 to DRAM
    free = max(0.0, spec.local_cache_bytes - per_unit * p.shared_per_program)
    resident = per_unit * p.spill_footprint
    spill_dram = p.spill_bytes * (1 - min(1.0, free / resident)) if resident else 0.0
    return {
        "tensor": per_unit * p.tensor_cycles * spec.tensor_subcores / min(spec.tensor_subcores, warps),
        "issue": max(per_unit * p.pipe_cycles, per_unit * p.instructions / issue_rate, p.warp_chain_cycles),
        "shared": per_unit * (p.wavefronts / spec.shared_wavefronts_per_clk + p.transpose_cycles),
        "l2": per_unit * p.l2_bytes / l2_per_clk,
        "dram": per_unit * (p.dram_bytes + spill_dram) / dram_per_clk,
        "latency": p.latency_cycles,
        "atomics": per_unit * p.atomic_cycles,
    }


def _blend(cycles: dict[str, float], alpha: float) -> float:
    """max + alpha * (sum - max): alpha = 0 is a pure roofline, larger alpha less overlap."""
    top = max(cycles.values())
    return top + alpha * (sum(cycles.values()) - top)


def _programs(grid: int | tuple[int, ...]) -> int:
    if isinstance(grid, int):
        return grid
    return math.prod(grid)


# What drives each component, to share a launch's component time among its source lines.
_DRIVERS = {
    "tensor": lambda c: sum(c.tensor_flops.values()),
    "issue": lambda c: c.warp_instructions + c.global_requests + c.shared_requests + c.atomic_requests,
    "shared": lambda c: c.shared_wavefronts,
    "l2": lambda c: c.global_sectors,
    "dram": lambda c: c.dram_bytes,
    "latency": lambda c: c.load_requests + c.barriers,
    "atomics": lambda c: c.atomic_ops + c.atomic_serialized,
}


def attribute(result: Estimate, lines: dict) -> dict:
    """Modeled seconds per source line: each component's time is split among lines in proportion to
    the counter that drives it, then all lines are scaled to sum to the kernel time (launch excluded).
    A ranking heuristic for hot lines, not a second model."""
    raw = dict.fromkeys(lines, 0.0)
    for name, driver in _DRIVERS.items():
        weights = {key: float(driver(c)) for key, c in lines.items()}
        total = sum(weights.values())
        if total and result.components.get(name):
            for key, weight in weights.items():
                raw[key] += result.components[name] * weight / total
    body = max(0.0, result.seconds - result.components.get("launch", 0.0))
    scale = body / sum(raw.values()) if sum(raw.values()) else 0.0
    return {key: value * scale for key, value in raw.items()}
