"""The cost model: exact counters + machine spec -> modeled kernel time and what bounds it.

A per-unit model of waves (research/simulator.md §4.3, extended with what the H200 sweeps, Nsight Compute
counters and microbenchmarks showed matters). With b resident programs per unit (occupancy: warps, shared
memory, registers up to the per-thread budget), a grid runs in waves of b x units programs; a last,
partial wave runs with fewer programs per unit on fewer units, which then share L2 and DRAM. Per wave,
on one unit, in cycles (per-program counts are launch totals / programs):

    tensor   b * sum_tiles F / (rate_d * tensor_efficiency * path)   / min(1, A / tensor_subcores)
             path = 1 for warpgroup MMAs (warps in groups of mma_async_warps, tile rows a multiple of
             mma_async_min_m), mma_sync_fraction for warp-level MMAs
    issue    max(b * max_pipe I_pipe * warp_size / lanes_pipe, b * I / (schedulers * min(1, A / schedulers *
             warp_issue_ipc)))
    shared   b * (wavefronts / shared_wavefronts_per_clk + T * mma_transpose_cycles); T = 32-bit words of dot
             operands of a K-major-only type (mma_kmajor_types: warpgroup MMAs read them only K-major) that
             lie MN-major in memory, transposed through registers into shared memory at every execution
    l1       b * max(lines / l1_lines_per_clk, W / l1_wavefronts_per_clk, S / split_pieces_per_clk); lines = the
             128-B lines each global load request touches (their tags; stores pass through to the L2, whose term
             they load), W = the wavefronts the L1's data banks take to serve them (one word a bank each: a load
             down 32 rows whose words share a bank takes 32, one whose words spread over the banks a few), S = the
             pieces of sectors that single store instructions of a run the unit does not merge write
             (Counters.store_split_sectors): the loads' tags and data and the stores' pieces go by separate paths
    l2       b * ((sectors - L1 hits - M) * sector_bytes + P * (l2_bytes_per_s / l2_partial_writes_per_s
             - sector_bytes) + spill bytes) / (l2_bytes_per_s / clock / active_units) + b * M * sector_bytes /
             (l2_load_bytes_per_s / clock / active_units); P = store sectors written only in part, M = the L1 misses
             of loads that are not copied asynchronously by a software-pipelined loop (they pass through the L1)
    dram     b * dram_bytes / (dram_bytes_per_s * dram_efficiency / clock / active_units)
    latency  one program's own path: per memory phase (Counters.phase_rounds: the loads of one loop, the
             iterations a GPU build keeps in flight, the round trips an iteration waits for), rounds x
             (trip / u + work) when its loads wait every iteration (u: the copies of a loop body the backend
             unrolls, whose loads issue together: all trips of a small constant-trip loop, 4 of a small body
             otherwise, 1 when the body writes memory or waits at a barrier, or outside loops), rounds x
             max(work, (trip + work) / depth) + trip when they are software-pipelined (the copies for iteration
             i + depth issue once iteration i's work is done, so two stages overlap nothing); either way an
             iteration's loads take at least b x the L1 cycles of one program's round (its share, by bytes, of the
             program's l1 term: the unit's L1 serves the resident programs' rounds in turn);
             trip = (L^p + Q^p)^(1/p) + (chain - 1) L:
             the unloaded round trip L of the level the loads come from and the time Q the bandwidth takes to
             serve the bytes every resident program keeps in flight (Little's law, fitted to the measured curve;
             a pipelined program keeps min(depth, trip / period) iterations in flight, solved as a fixed point,
             not depth when its work is the longer); work = the phase's
             other instructions / (num_warps * warp_issue_ipc) + its dots at the unit's tensor rate. The main
             loop (the plain loop that moves the most bytes) takes at least W unloaded round trips a body:
             W = serialized_load_waits where the program's registers pass the compiler's target
             (occupancy.register_target: the build then schedules the loads apart to need fewer), more for a
             loop that gathers through indices it loads (chain > 1: occupancy.gather_waits), the machine
             code's count where that is known (Counters.loop_load_waits). Plus the rest of the program's work,
             its memory instructions one after another through the unit's memory pipe (simt_lanes_per_clk
             "memory": alone on a unit, a program still issues its loads and stores no faster), barriers
             (barrier_cycles) and cross-warp exchanges (exchange_cycles)
             per warp and their shared-memory wavefronts (every warp of the program waits at the barrier
             for all of them: Counters.exchange_wavefronts / shared_wavefronts_per_clk), the reloads of
             registers spilled past the L1 (an L2 round trip each), and the drain of its last stores and
             atomics (an L2 round trip after the atomics queued ahead of them), and per warp the round trips
             of its fenced atomics after the first (atomic_round_cycles: each waits for the last)
    atomics  b * (units * max(ops / atomic_ops_per_clk + R / atomic_line_requests_per_clk, H * atomic_line_cycles)
             + atomic_serialized * atomic_serial_cycles); ops = atomic element operations, R = the line requests of
             atomic warp instructions (one per line an instruction touches), at the relaxed rates for relaxed
             atomics; H = the program's share of the requests to the launch's hottest line

where A = b * num_warps resident warps and I counts warp instructions (memory ones included). A
thread that needs more registers than its budget (the per-thread maximum, or the program's share of
the unit's registers) spills the rest: each spilled register costs spill_traffic local-memory
stores and reloads per iteration, on the memory pipe and through L2. The registers are an estimate
(jit.gpu_resources): the modeled time is the expectation over its config-to-config spread (REGISTER_SPREAD,
five Gauss-Hermite points; downward only where the estimate spills already), so a config near the spill or
occupancy step pays for the chance of falling on its far side. T_wave = max + alpha * (sum -
max); the kernel takes launch_overhead_s + sum over waves / clock_hz, and at least programs x
program_start_cycles / units (the block scheduler starts programs at a fixed rate: "dispatch"), at least
atomic_max_multiplicity * atomic_serial_cycles (one hot address serialises the whole grid) and
atomic_hot_line_requests * atomic_line_cycles (one line serves its requests one after another). When the
programs' work varies along the grid's first dim (Counters.row_work: causal attention, a paged decode's
sequences), the waves give way to the slots filling in launch order: each program takes the first slot
that frees up, for the wave time of a program with its work (the average program's counts scaled by
it). Every parameter is a spec field, so a machine's model is data (presets.py documents each value
and its source); `python -m simulator.validate` scores it against measured H200 sweeps.
"""

from __future__ import annotations

import dataclasses
import heapq
import math
from dataclasses import dataclass, field

import numpy as np

from simulator.counters import INSTRUCTION_CLASSES, ROW_BUCKETS, Counters, phase_fields
from simulator.occupancy import (
    REGISTER_SPREAD,
    Occupancy,
    Waves,
    gather_waits,
    occupancy,
    register_budget,
    register_target,
    waves,
)
from simulator.specs import OPERAND_BYTES, SIMT_DOT_TYPES, MachineSpec, ceil_div, current_spec

COMPONENTS = ("tensor", "issue", "shared", "l1", "l2", "dram", "latency", "atomics")
BOUNDS = COMPONENTS + ("dispatch", "launch")
_FIXED_POINT_STEPS = 20  # a pipelined phase's bytes in flight settle within a few steps (_Phase.pipelined)


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


# Gauss-Hermite nodes (in standard deviations) and weights of a normal distribution, five points
_SPREAD_NODES, _SPREAD_WEIGHTS = np.polynomial.hermite_e.hermegauss(5)
_SPREAD_WEIGHTS = _SPREAD_WEIGHTS / _SPREAD_WEIGHTS.sum()


def estimate(counters: Counters, grid: int | tuple[int, ...] | None = None,
             spec: MachineSpec | str | None = None, register_spread: float = REGISTER_SPREAD) -> Estimate:
    """Modeled time of a launch whose programs did, on average, what `counters` says.

    grid: the launch grid (programs = its product); default counters.programs. When counters
    cover only sampled programs, counters.programs says how many, and the rest are assumed alike;
    counters.programs = 0 means the counters describe one program.

    The registers a thread needs are an estimate (jit.gpu_resources) whose error spreads about
    register_spread in log terms from one config of a kernel to the next, and time is a step function of them
    (where they spill, how many programs fit): the modeled time is its expectation over that spread, so a config
    near a step is charged the chance that it falls on the far side. A config the estimate already spills is
    taken only downward: the spill charge grows with every register past the budget, where Triton's build spills
    its least-used values first (attention's 128 x 64 tile on 4 warps, estimated at 284 registers, spills 20
    bytes and runs 1.5x slower than the best, modeled 1.45x; at 338 registers the model would charge 56x).
    Occupancy, bound and the schedule's shape are those of the estimate itself; the schedule and components are
    scaled to the expectation.
    """
    spec = current_spec(spec)
    point = _estimate(counters, grid, spec)
    registers = counters.registers_per_thread
    if register_spread <= 0 or registers <= 0:
        return point
    num_warps = point.occupancy.warps_per_program
    budget = register_budget(spec, num_warps)

    target = register_target(spec, num_warps)

    def step(count: int) -> tuple[int, int, bool]:  # all the time depends on registers through
        return (occupancy(spec, num_warps, count, counters.shared_bytes_per_program).programs_per_unit,
                max(0, count - budget), count > target)

    times = {step(registers): point.seconds}
    seconds = 0.0
    for z, weight in zip(_SPREAD_NODES, _SPREAD_WEIGHTS):
        count = max(1, round(registers * math.exp(register_spread * z)))
        if registers > budget:  # spilling already: only the chance of spilling less
            count = min(count, registers)
        key = step(count)
        if key not in times:
            times[key] = _estimate(dataclasses.replace(counters, registers_per_thread=count), grid, spec).seconds
        seconds += weight * times[key]
    body = point.seconds - point.components["launch"]
    scale = (seconds - point.components["launch"]) / body if body > 0 else 1.0
    return dataclasses.replace(
        point, seconds=seconds, schedule=_scaled(point.schedule, scale),
        components={name: value * scale if name in COMPONENTS else value for name, value in point.components.items()})


def _scaled(schedule, factor: float) -> tuple[WaveTiming, ...]:
    """The waves stretched by `factor`, start times and durations alike."""
    return tuple(dataclasses.replace(w, start_s=w.start_s * factor, seconds=w.seconds * factor) for w in schedule)


def _estimate(counters: Counters, grid: int | tuple[int, ...] | None, spec: MachineSpec) -> Estimate:
    """estimate at the counters' own register count."""
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

    weights = _row_weights(counters, grid if grid is not None else (programs,), programs)
    if weights is not None:  # programs of unequal work: the slots are filled in launch order as they free up
        per_unit = min(occ.programs_per_unit, ceil_div(programs, spec.units))
        units = min(spec.units, programs)
        levels, which = np.unique(np.round(weights, 2), return_inverse=True)  # programs of like work, modeled once
        durations = np.array([_blend(_wave_components(_PerProgram(counters.scaled(level), spec, num_warps), spec,
                                                      per_unit, units, num_warps), spec.alpha) for level in levels])
        scheduled = _makespan(durations[which] / spec.clock_hz, per_unit * units)
        schedule = list(_scaled(schedule, scheduled / start))
        totals = {name: value * scheduled / start for name, value in totals.items()}
        start = scheduled
    contention = max(counters.atomic_max_multiplicity * spec.atomic_serial_cycles,
                     counters.atomic_hot_line_requests * spec.atomic_line_cycles) / spec.clock_hz
    # the block scheduler starts programs at a fixed rate: a floor under grids of many short programs
    dispatch = programs * spec.program_start_cycles / (spec.units * spec.clock_hz)
    body = max(start, contention, dispatch)
    totals["atomics"] = max(totals["atomics"], contention)
    totals["dispatch"] = dispatch
    totals["launch"] = spec.launch_overhead_s
    bound = max(BOUNDS, key=lambda name: totals[name])
    return Estimate(seconds=spec.launch_overhead_s + body, bound=bound, components=totals, occupancy=occ,
                    waves=plan, schedule=tuple(schedule), machine=spec.name, units=spec.units,
                    clock_hz=spec.clock_hz)


MAX_SCHEDULED = 1 << 17  # launches with more programs of unequal work are modeled as equal waves


def _row_weights(counters: Counters, grid: tuple[int, ...], programs: int) -> np.ndarray | None:
    """Each program's work relative to the mean, in launch order (the first grid dim varies fastest), from
    counters.row_work; None when every program does the same. Buckets no measured program fell in take the
    nearest measured bucket's work."""
    if not counters.row_work or programs > MAX_SCHEDULED:
        return None
    rows = grid[0] if isinstance(grid, tuple) else grid
    buckets = min(rows, ROW_BUCKETS)
    measured = sorted(int(b) for b in counters.row_work)
    per_program = np.array([counters.row_work[str(b)] / max(1, counters.row_programs.get(str(b), 1)) for b in measured])
    row_bucket = np.arange(rows) * buckets // rows
    nearest = np.abs(row_bucket[:, None] - np.array(measured)[None, :]).argmin(axis=1)
    work = np.tile(per_program[nearest], programs // rows)
    return work / work.mean() if work.mean() > 0 else None


def _makespan(durations: np.ndarray, slots: int) -> float:
    """When the last of `durations` (in launch order) ends, each program taking the first slot that frees up."""
    if durations.size <= slots:
        return float(durations.max())
    free = list(durations[:slots])
    heapq.heapify(free)
    for duration in durations[slots:]:
        heapq.heapreplace(free, free[0] + duration)
    return float(max(free))


class _PerProgram:
    """Average counts of one program, and the per-program cycle costs that do not depend on the wave."""

    def __init__(self, counters: Counters, spec: MachineSpec, num_warps: int) -> None:
        n = max(1, counters.programs)
        tensor, transposed = _tensor_cycles(counters, spec, num_warps)
        self.tensor_cycles = tensor / n
        flops = sum(counters.tensor_flops.values())
        self.tensor_per_flop = tensor / flops if flops else 0.0
        self.transpose_cycles = transposed * spec.mma_transpose_cycles / n
        spilled = max(0, counters.registers_per_thread - register_budget(spec, num_warps))
        keys = [key for key in counters.phase_rounds if counters.phase_rounds[key]]
        self.phases = [_Phase.of(key, counters, n) for key in keys]
        # the main loop (the plain looped phase that moves the most bytes) waits for its loads that many times a body:
        # the compiler's count where its machine code is known, else, where the registers pass the compiler's target
        # (it then schedules the loads apart), serialized_load_waits or, for a loop that gathers, gather_waits;
        # else once
        plain = [phase for phase in self.phases if phase.looped and not phase.depth]
        self.main_loop = max(plain, key=lambda phase: phase.rounds * phase.bytes) if plain else None
        squeezed = counters.registers_per_thread > register_target(spec, num_warps)
        gathers = self.main_loop is not None and self.main_loop.chain > 1
        waits = gather_waits(spec, num_warps) if gathers else spec.serialized_load_waits
        self.loop_load_waits = counters.loop_load_waits or (waits if squeezed else 0)
        # the L1's cycles for one program's loads (their tags and their data banks' wavefronts, whichever take
        # longer), and for one round of each phase: the program's, shared among its phases by the bytes they load
        self.l1_load_cycles = max(counters.load_lines / spec.l1_lines_per_clk,
                                  counters.load_wavefronts / spec.l1_wavefronts_per_clk) / n
        loaded = sum(counters.phase_bytes.get(key, 0) for key in keys)
        self.l1_rounds = [self.l1_load_cycles * counters.phase_bytes.get(key, 0) / loaded / phase.rounds
                          if loaded else 0.0 for key, phase in zip(keys, self.phases)]
        # every spilled register goes to local memory and back spill_traffic times per iteration of the
        # program's main loop (an accumulator that does not fit is stored and reloaded at every step)
        iterations = max([1.0] + [phase.rounds for phase in self.phases])
        self.spill_reloads = spilled * spec.spill_traffic * iterations  # per thread
        spill_instructions = self.spill_reloads * num_warps
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
        # the unit's memory pipe takes the program's memory instructions one after another, on its own path too
        self.memory_issue_cycles = pipes["memory"] * spec.warp_size / spec.simt_lanes_per_clk["memory"]
        self.instructions = sum(pipes.values())
        self.memory_instructions = pipes["memory"]  # issued inside the memory phases, not after them
        self.num_warps = num_warps
        self.wavefronts = counters.shared_wavefronts / n
        self.split_pieces = counters.store_split_sectors / n
        self.spill_bytes = spill_instructions * spec.warp_size * 4
        self.spill_footprint = spilled * 4 * num_warps * spec.warp_size  # local memory one program keeps
        self.shared_per_program = counters.shared_bytes_per_program
        # a store that writes part of a sector ties the L2 up as long as l2_bytes_per_s / l2_partial_writes_per_s
        # bytes of whole sectors would
        partial_extra = max(0.0, spec.l2_bytes_per_s / spec.l2_partial_writes_per_s - spec.sector_bytes)
        # loads a loop copies asynchronously bypass the L1 (at l2_bytes_per_s); the other loads' misses come
        # through it, at l2_load_bytes_per_s
        missed = (counters.load_sectors - counters.l1_hit_sectors) * spec.sector_bytes / n
        copied = sum(phase.rounds * phase.bytes for phase in self.phases if phase.depth)
        self.l2_load_bytes = max(0.0, missed - copied)
        self.l2_bytes = ((counters.global_sectors - counters.l1_hit_sectors) * spec.sector_bytes / n
                         - self.l2_load_bytes + counters.store_partial_sectors * partial_extra / n + self.spill_bytes)
        self.dram_bytes = (counters.dram_bytes + counters.dram_short_run_bytes) / n  # short runs waste bandwidth
        self.atomic_cycles = _atomic_cycles(counters, spec) / n  # GPU-wide, at the L2
        # the hottest line's requests, shared by the programs (a histogram's every program adds to its bins)
        self.hot_line_cycles = counters.atomic_hot_line_requests * spec.atomic_line_cycles / n
        self.atomic_serial = counters.atomic_serialized * spec.atomic_serial_cycles / n
        # a warp's fenced atomic waits for the round trip of the one before it
        self.atomic_waits = max(0.0, counters.atomic_fenced_requests / n / num_warps - 1) * spec.atomic_round_cycles
        self.barrier_cycles = (counters.barriers * spec.barrier_cycles
                               + counters.exchanges * spec.exchange_cycles) / n / num_warps
        # between an exchange's barriers the warps wait for all of its wavefronts, served one after another
        self.exchange_wavefronts = counters.exchange_wavefronts / n
        # a program's slot frees once its last stores are acknowledged by the L2
        self.drains = bool(counters.store_requests or counters.atomic_requests)

    def critical_path(self, spec: MachineSpec, per_unit: int, units: int) -> float:
        """Cycles one program takes by itself when `per_unit` programs share each of `units` units: its memory
        phases' round trips (Little's law: the bytes all resident programs keep in flight queue at the L2 and
        DRAM bandwidths), the work of each iteration (after its loads arrive, or overlapped with the loads of
        later iterations when they are pipelined), the rest of its work, the issue of its memory instructions and
        its barriers. Work is instruction issue (one warp issues warp_issue_ipc instructions per clock on average:
        its dependent chains stall it) and the program's own dots at the unit's tensor rate. A round's loads arrive
        no sooner than the unit's L1 serves the rounds of all its resident programs (a matmul whose B tile is read
        down its rows, 32 lines a warp load, on one 8-warp program a unit: loads, then shared-memory stores and the
        MMAs, in turn). A body of the main loop takes at least loop_load_waits unloaded round trips (the compiler's
        waits for its loads)."""
        per_warp = 1.0 / (self.num_warps * spec.warp_issue_ipc)
        cycles, phase_work, phase_flops = 0.0, 0.0, 0.0
        for phase, l1_round in zip(self.phases, self.l1_rounds):
            work = phase.work * per_warp + phase.flops * self.tensor_per_flop
            served = per_unit * l1_round  # the unit's L1 serves the resident programs' rounds in turn
            if phase.depth:
                period, trip = phase.pipelined(spec, per_unit * units, work)
                cycles += phase.rounds * max(period, served) + trip
            else:
                copies = phase.unrolled(spec, self.num_warps)
                trip = phase.round_trip(spec, per_unit * units, copies) / copies
                if phase is self.main_loop:  # each wait at least an unloaded round trip
                    trip = max(trip, self.loop_load_waits / copies * phase.latency(spec))
                cycles += phase.rounds * (max(trip, served) + work)
            phase_work += phase.work * phase.rounds
            phase_flops += phase.flops * phase.rounds
        rest = (max(0.0, self.instructions - self.memory_instructions - phase_work) * per_warp
                + max(0.0, self.tensor_cycles - phase_flops * self.tensor_per_flop))
        return (cycles + rest + self.memory_issue_cycles + self.barrier_cycles
                + self.exchange_wavefronts / spec.shared_wavefronts_per_clk + self.atomic_waits
                + self.drain(spec, per_unit * units))

    def drain(self, spec: MachineSpec, resident: int) -> float:
        """Cycles until a program's last stores and atomics are acknowledged: an L2 round trip, after the atomics
        every resident program has queued at the L2."""
        if not self.drains:
            return 0.0
        return spec.l2_round_cycles + resident * self.atomic_cycles


@dataclass(frozen=True)
class _Phase:
    """One memory phase of an average program (Counters.phase_rounds): rounds, bytes and DRAM share per round,
    iterations in flight, dependent round trips per iteration, the other warp instructions and the load instructions
    per round, whether its loads are a loop's, whether they wait for the previous iteration's, whether the loop's
    trip count is a compile-time constant, and whether its body writes memory or waits at a barrier."""

    rounds: float
    bytes: float
    dram_share: float
    depth: int
    chain: int
    work: float
    accesses: float
    flops: float
    looped: bool
    serial: bool
    constant: bool
    ordered: bool

    @staticmethod
    def of(key: str, counters: Counters, programs: int) -> _Phase:
        loop, depth, chain, flags = phase_fields(key)
        executions = counters.phase_rounds[key]
        moved = max(0, counters.phase_bytes.get(key, 0) - counters.phase_l1_bytes.get(key, 0))  # reaching the L2
        return _Phase(rounds=executions / programs, bytes=moved / executions,
                      dram_share=min(1.0, counters.phase_dram_bytes.get(key, 0) / moved) if moved else 0.0,
                      depth=depth, chain=chain, work=counters.phase_instructions.get(key, 0) / executions,
                      accesses=counters.phase_accesses.get(key, 0) / executions,
                      flops=counters.phase_flops.get(key, 0) / executions, looped=loop != "-",
                      serial="serial" in flags, constant="constant" in flags,
                      ordered="ordered" in flags)

    def unrolled(self, spec: MachineSpec, num_warps: int) -> float:
        """Iterations of a loop that is not software-pipelined whose loads a warp has in flight at once: the backend
        unrolls a loop of known trip count fully when trips x body fit unroll_full_instructions, and a small body
        unroll_copies times otherwise (Triton's machine code on the H200), a body counting its load instructions
        (unroll_load_instructions each) with its other instructions: one-element loads past an unaligned bound make
        it long. The copies' independent loads issue together, unless the body writes memory or waits at a barrier:
        a copy's loads may not move above the previous copy's write or barrier."""
        if not self.looped or self.serial or self.ordered:
            return 1.0
        per_warp = max(1.0, (self.work + spec.unroll_load_instructions * self.accesses) / max(1, num_warps))
        if self.constant and self.rounds * per_warp <= spec.unroll_full_instructions:
            return max(1.0, self.rounds)
        copies = spec.unroll_copies if per_warp <= spec.unroll_instructions else 1.0
        return float(min(max(1.0, self.rounds), copies))

    def pipelined(self, spec: MachineSpec, resident: int, work: float) -> tuple[float, float]:
        """(cycles per iteration, round trip) of a software-pipelined phase: the copies for iteration i + depth
        issue once iteration i's work is done and must arrive before iteration i + depth starts, so an iteration
        takes max(work, (trip + work) / depth). By Little's law a program keeps trip / period iterations in
        flight (at most depth); the round trip depends on what all resident programs keep in flight, so the two
        are solved together, from depth down (the sequence falls monotonically to the fixed point)."""
        in_flight, period, trip = float(self.depth), 0.0, 0.0
        for _ in range(_FIXED_POINT_STEPS):
            trip = self.round_trip(spec, resident, in_flight)
            period = max(work, (trip + work) / self.depth)
            settled = min(float(self.depth), trip / period)
            if abs(settled - in_flight) <= 1e-3 * in_flight:
                break
            in_flight = settled
        return period, trip

    def latency(self, spec: MachineSpec) -> float:
        """Unloaded round trip of one of its loads, from DRAM or the L2 by its DRAM share."""
        return self.dram_share * spec.dram_round_cycles + (1 - self.dram_share) * spec.l2_round_cycles

    def round_trip(self, spec: MachineSpec, resident: int, rounds_in_flight: float) -> float:
        """Cycles from issuing one iteration's loads to their arrival while `resident` programs each keep
        `rounds_in_flight` iterations' loads in flight: the unloaded latency of the level they come from and the time
        the bandwidth takes to serve all the bytes in flight, combined as measured
        (simulator/data/h200_memory_curve.json); loads whose addresses wait for other loads (chain > 1) add their
        unloaded round trips first."""
        in_flight = resident * rounds_in_flight * self.bytes
        dram, latency = self.dram_share, self.latency(spec)
        dram_queue = in_flight * dram / (spec.dram_bytes_per_s * spec.dram_efficiency / spec.clock_hz)
        # asynchronous copies of pipelined loads bypass the L1; plain loads pass through it, at less bandwidth
        l2_queue = in_flight / ((spec.l2_bytes_per_s if self.depth else spec.l2_load_bytes_per_s) / spec.clock_hz)
        if dram_queue >= l2_queue:
            trip = _norm(latency, dram_queue, spec.dram_queue_exponent)
        else:
            trip = _norm(latency, l2_queue, spec.l2_queue_exponent)
        return trip + (self.chain - 1) * latency


def _norm(a: float, b: float, p: float) -> float:
    return (a ** p + b ** p) ** (1.0 / p)


def _tensor_cycles(counters: Counters, spec: MachineSpec, num_warps: int) -> tuple[float, float]:
    """Tensor-core cycles of the launch's dots, by the matrix instruction each tile shape can use, and the
    elements of operands that must be transposed on their way to shared memory.

    Tiles that can issue warpgroup MMAs (spec.async_mma) run at the full rate, others issue warp-level MMAs at
    mma_sync_fraction. An operand of a K-major-only type (mma_kmajor_types) laid out MN-major in memory is
    transposed through registers into shared memory at every execution, mma_transpose_cycles per 32-bit word
    (an fp32 element, four int8: Triton's W8A8 matmul on the H200 transposes B about 4 elements a clock, where
    TF32 moves one, holdout10).
    fp32 operands without TF32 use the SIMT rate either way."""
    tiles = counters.tensor_tiles or {f"{d}:0:0:0": f for d, f in counters.tensor_flops.items()}
    cycles, transposed = 0.0, 0.0
    for key, flops in tiles.items():
        dtype, rows, cols, depth, *rest = key.split(":") + ["0"] * (3 - key.count(":"))
        operands = rest[0].split(",") if rest else []
        rate = spec.tensor_rate(dtype) * spec.tensor_efficiency
        if dtype not in SIMT_DOT_TYPES and int(rows) and not spec.async_mma(int(rows), num_warps):
            rate *= spec.mma_sync_fraction
        elif dtype in spec.mma_kmajor_types and int(rows):
            executions = flops / (2 * int(rows) * int(cols) * int(depth))
            sizes = (int(rows) * int(depth), int(depth) * int(cols))  # A is M x K, B is K x N
            words = OPERAND_BYTES.get(dtype, 4) / 4  # moved a 32-bit word at a time: four int8 per fp32's cost
            transposed += executions * words * sum(size for size, where in zip(sizes, operands) if where == "mn")
        cycles += flops / rate
    return cycles, transposed


def _atomic_cycles(counters: Counters, spec: MachineSpec) -> float:
    """Cycles the L2 takes over a launch's atomics spread over many lines, fenced and relaxed at their own rates
    (the line requests shared in proportion to the operations)."""
    if not counters.atomic_ops:
        return 0.0
    relaxed = counters.atomic_relaxed_ops / counters.atomic_ops
    requests = counters.atomic_line_requests
    return ((counters.atomic_ops - counters.atomic_relaxed_ops) / spec.atomic_ops_per_clk
            + counters.atomic_relaxed_ops / spec.atomic_relaxed_ops_per_clk
            + requests * (1 - relaxed) / spec.atomic_line_requests_per_clk
            + requests * relaxed / spec.atomic_relaxed_line_requests_per_clk)


def _wave_components(p: _PerProgram, spec: MachineSpec, per_unit: int, units: int,
                     num_warps: int) -> dict[str, float]:
    """Cycles of each component for one wave with `per_unit` programs on each of `units` units."""
    warps = per_unit * num_warps
    l2_per_clk = spec.l2_bytes_per_s / spec.clock_hz / units
    l2_load_per_clk = spec.l2_load_bytes_per_s / spec.clock_hz / units
    dram_per_clk = spec.dram_bytes_per_s * spec.dram_efficiency / spec.clock_hz / units
    issue_rate = spec.issue_schedulers * min(1.0, warps / spec.issue_schedulers * spec.warp_issue_ipc)
    # spilled registers live in the unit's L1 while the resident programs' local memory fits beside their
    # shared memory; the rest goes out through the L2 to DRAM
    free = max(0.0, spec.local_cache_bytes - per_unit * p.shared_per_program)
    resident = per_unit * p.spill_footprint
    spilled_out = 1 - min(1.0, free / resident) if resident else 0.0
    spill_dram = p.spill_bytes * spilled_out
    # a thread waits for each reload of a register spilled past the L1 (they follow the code's dependences)
    spill_wait = p.spill_reloads * spilled_out * spec.l2_round_cycles
    return {
        "tensor": per_unit * p.tensor_cycles * spec.tensor_subcores / min(spec.tensor_subcores, warps),
        "issue": max(per_unit * p.pipe_cycles, per_unit * p.instructions / issue_rate),
        "shared": per_unit * (p.wavefronts / spec.shared_wavefronts_per_clk + p.transpose_cycles),
        "l1": per_unit * max(p.l1_load_cycles, p.split_pieces / spec.split_pieces_per_clk),
        "l2": per_unit * (p.l2_bytes / l2_per_clk + p.l2_load_bytes / l2_load_per_clk),
        "dram": per_unit * (p.dram_bytes + spill_dram) / dram_per_clk,
        "latency": p.critical_path(spec, per_unit, units) + spill_wait,
        "atomics": per_unit * (units * max(p.atomic_cycles, p.hot_line_cycles) + p.atomic_serial),
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
    "l1": lambda c: c.load_wavefronts,
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
