"""The cost model moves the right way and names the right bound."""

import dataclasses

import pytest

from simulator import BOUNDS, Counters, cost, estimate
from simulator.occupancy import gather_waits
from simulator.specs import get_spec


def copy_kernel(programs, bytes_per_program=8192, num_warps=4, **extra):
    """Counters of a streaming copy: each program loads and stores bytes_per_program, coalesced."""
    requests = bytes_per_program // 128
    fields = dict(
        instructions={"integer": 6 * requests, "compare_select": requests},
        load_requests=requests * programs, load_sectors=4 * requests * programs,
        store_requests=requests * programs, store_sectors=4 * requests * programs,
        dram_read_bytes=bytes_per_program * programs, dram_write_bytes=bytes_per_program * programs,
        l2_misses=8 * requests * programs, programs=programs, num_warps=num_warps, registers_per_thread=32,
    )
    fields["instructions"] = {k: v * programs for k, v in fields["instructions"].items()}
    fields.update(extra)
    return Counters(**fields)


def matmul_tile(programs, block=256, k=4096, num_warps=8, shared=64 * 1024):
    """Counters of a tensor-core GEMM tile per program (operands mostly from L2)."""
    flops = 2 * block * block * k
    return Counters(
        tensor_flops={"bf16": flops * programs}, instructions={"fp_fma": 64 * programs},
        load_requests=2 * block * k * 2 // 128 * programs, load_sectors=2 * block * k * 2 // 32 * programs,
        dram_read_bytes=2 * block * k * 2 * programs // 8, shared_wavefronts=2 * block * k * 2 // 128 * programs,
        phase_rounds={"0:2:1": k // 64 * programs}, phase_bytes={"0:2:1": 2 * block * k * 2 * programs},
        phase_dram_bytes={"0:2:1": 2 * block * k * 2 * programs // 8}, phase_flops={"0:2:1": flops * programs},
        programs=programs, num_warps=num_warps, num_stages=3, shared_bytes_per_program=shared,
    )


def chain(rounds, key="0:0:1", bytes_per_round=1024, from_dram=True, programs=1, num_warps=1, **extra):
    """Programs that each run `rounds` iterations of a loop whose loads (`key`: loop:depth:chain) wait each time."""
    moved = rounds * bytes_per_round * programs
    return Counters(load_requests=moved // 128, load_sectors=moved // 32, phase_rounds={key: rounds * programs},
                    phase_bytes={key: moved}, phase_dram_bytes={key: moved if from_dram else 0}, programs=programs,
                    num_warps=num_warps, **extra)


def memory_issue(counters, spec):
    """Cycles the unit's memory pipe takes for one program's global loads (one request a warp instruction here)."""
    return counters.load_requests / max(1, counters.programs) * spec.warp_size / spec.simt_lanes_per_clk["memory"]


def test_more_dram_bytes_take_longer_for_a_memory_bound_kernel():
    small = estimate(copy_kernel(4096), 4096, "h200")
    big = estimate(copy_kernel(4096, bytes_per_program=4 * 8192), 4096, "h200")
    assert small.bound == big.bound == "dram"
    assert big.seconds > 3 * (small.seconds - small.components["launch"])


def test_copy_time_is_near_the_bandwidth_roofline():
    c = copy_kernel(65536, bytes_per_program=16384)
    spec = get_spec("h200")
    result = estimate(c, 65536, spec)
    ideal = c.dram_bytes / (spec.dram_bytes_per_s * spec.dram_efficiency)
    assert ideal < result.seconds - spec.launch_overhead_s < 1.3 * ideal


def test_the_same_kernel_is_slower_on_a_slower_machine():
    c = copy_kernel(8192)
    times = {m: estimate(c, 8192, m).seconds for m in ("h200", "mtt-s5000", "mtt-s4000")}
    assert times["h200"] < times["mtt-s5000"] < times["mtt-s4000"]


def test_grid_smaller_than_the_units_leaves_units_idle():
    spec = get_spec("h200").replace(alpha=0.0)  # the bound alone: the others' blend shares L2 by active units
    half = estimate(matmul_tile(66), 66, spec)
    full = estimate(matmul_tile(132), 132, spec)
    assert half.active_units == 66 < spec.units
    assert full.active_units == spec.units
    # one program per unit waits for its own dots between its other work: the tile's path, not the units, bounds it
    assert half.bound == full.bound == "latency"
    assert half.components["tensor"] <= half.components["latency"]
    assert half.seconds == pytest.approx(full.seconds, rel=0.05)  # twice the work in the same time


def test_tail_wave_costs_a_whole_wave_for_a_compute_bound_kernel():
    spec = get_spec("h200")
    fits = estimate(matmul_tile(2 * 132, shared=100 * 1024), 2 * 132, spec)
    spills = estimate(matmul_tile(2 * 132 + 1, shared=100 * 1024), 2 * 132 + 1, spec)
    assert fits.waves.count == 1 and spills.waves.count == 2
    assert spills.seconds > 1.4 * fits.seconds - spec.launch_overhead_s


def test_larger_tiles_lower_occupancy_when_shared_memory_limits():
    small = estimate(matmul_tile(1024, shared=48 * 1024), 1024, "h200")
    large = estimate(matmul_tile(1024, shared=160 * 1024), 1024, "h200")
    assert large.occupancy.programs_per_unit < small.occupancy.programs_per_unit
    assert large.occupancy.limiter == "shared"
    assert large.waves.count > small.waves.count


def test_bank_conflicts_can_make_shared_memory_the_bound():
    clean = matmul_tile(1024)
    conflicted = matmul_tile(1024)
    conflicted.shared_wavefronts *= 32
    conflicted.shared_bank_conflicts = conflicted.shared_wavefronts * 31 // 32
    assert estimate(conflicted, 1024, "h200").bound == "shared"
    assert estimate(conflicted, 1024, "h200").seconds > estimate(clean, 1024, "h200").seconds


def test_tiny_kernels_are_launch_bound():
    assert estimate(copy_kernel(1, bytes_per_program=512), 1, "h200").bound == "launch"


def test_a_long_dependent_chain_is_latency_bound():
    spec = get_spec("h200")
    result = estimate(chain(64, key="0:0:1:serial"), 1, spec)
    assert result.bound == "latency"
    # 64 round trips of a loop whose loads wait for the last iteration's, after issuing them; one 1 KiB round in
    # flight queues for next to nothing
    issue = memory_issue(chain(64), spec)
    assert result.components["latency"] == pytest.approx((64 * spec.dram_round_cycles + issue) / spec.clock_hz,
                                                         rel=0.01)
    # the same chain hitting in L2 is shorter
    in_l2 = estimate(chain(64, key="0:0:1:serial", from_dram=False), 1, spec).components["latency"]
    assert in_l2 == pytest.approx((64 * spec.l2_round_cycles + issue) / spec.clock_hz, rel=0.01)


@pytest.mark.parametrize("work, loads, copies, key, rounds", [
    (0, 1, 4, "0:0:1", 64), (36, 1, 4, "0:0:1", 64), (36, 8, 1, "0:0:1", 64), (60, 1, 1, "0:0:1", 64),
    (500, 1, 1, "0:0:1", 64), (30, 1, 8, "0:0:1:constant", 8), (60, 1, 1, "0:0:1:constant", 8),
    (0, 1, 1, "0:0:1:ordered", 64)])
def test_a_small_loop_body_is_unrolled_and_its_loads_overlap(work, loads, copies, key, rounds):
    """The backend unrolls a loop of runtime trip count 4 times when its body (its other instructions and its load
    instructions) has at most unroll_instructions warp instructions, and one of constant trip count fully when
    trips x body fit unroll_full_instructions: the copies' loads wait for one round trip between them. A body of
    8 one-element loads is too long. A body that writes memory or waits at a barrier gains nothing: no copy's loads
    may move above the previous copy's write or barrier."""
    spec = get_spec("h200")
    loop = chain(rounds, key=key, phase_instructions={key: work * rounds}, phase_accesses={key: loads * rounds})
    latency = estimate(loop, 1, spec).components["latency"]
    work_cycles = rounds * work / spec.warp_issue_ipc
    trips = rounds / copies * spec.dram_round_cycles
    assert latency == pytest.approx((trips + work_cycles + memory_issue(loop, spec)) / spec.clock_hz, rel=0.02)


@pytest.mark.parametrize("num_warps, registers, serialized", [(1, 64, False), (1, 72, True), (4, 32, False),
                                                               (4, 40, True), (8, 128, True)])
def test_a_loop_needing_more_registers_than_the_compiler_s_target_waits_for_its_loads_more_than_once(
        num_warps, registers, serialized):
    """Past the registers that keep the unit full, Triton's build schedules a body's loads apart to need fewer:
    the body then waits serialized_load_waits round trips for them, not one."""
    spec = get_spec("h200")
    loop = chain(64, key="0:0:1:ordered", num_warps=num_warps, registers_per_thread=registers)
    latency = estimate(loop, 1, spec, register_spread=0).components["latency"]
    waits = spec.serialized_load_waits if serialized else 1
    assert latency == pytest.approx((64 * waits * spec.dram_round_cycles + memory_issue(loop, spec))
                                    / spec.clock_hz, rel=0.01)


@pytest.mark.parametrize("num_warps, registers", [(1, 72), (2, 40), (8, 128)])
def test_a_squeezed_loop_that_gathers_waits_for_its_loads_more_often_the_fewer_warps_hold_them(num_warps, registers):
    """A loop whose loads go through indices it loads (chain 2: a page table, then the rows) and whose registers pass
    the compiler's target waits gather_waits round trips a body (14 in 1-warp programs on the H200, 6 from 4 warps
    up), where below the target it waits for its two dependent round trips."""
    spec = get_spec("h200")

    def latency(count: int) -> float:
        loop = chain(64, key="0:0:2:ordered", num_warps=num_warps, registers_per_thread=count)
        cycles = estimate(loop, 1, spec, register_spread=0).components["latency"] * spec.clock_hz
        return cycles - memory_issue(loop, spec)

    assert latency(registers) == pytest.approx(64 * gather_waits(spec, num_warps) * spec.dram_round_cycles, rel=0.01)
    assert latency(16) == pytest.approx(64 * 2 * spec.dram_round_cycles, rel=0.01)


def test_a_program_alone_on_a_unit_still_issues_its_memory_instructions_one_after_another():
    """The unit's memory pipe takes one warp's load or store at a time: the same bytes in 8 times the instructions
    (narrow loads) keep even a lone program 7 x requests cycles longer."""
    spec = get_spec("h200")
    wide = chain(64, key="0:0:1:ordered", num_warps=4)
    narrow = dataclasses.replace(wide, load_requests=8 * wide.load_requests)
    longer = (estimate(narrow, 1, spec).components["latency"] - estimate(wide, 1, spec).components["latency"])
    assert longer == pytest.approx(7 * memory_issue(wide, spec) / spec.clock_hz, rel=0.01)


@pytest.mark.parametrize("programs", [1, 2, 8])
def test_a_round_waits_for_the_unit_s_l1_to_serve_every_resident_program_s_round(programs):
    """A loop whose loads wait each iteration gets them no sooner than the unit's L1 serves them: one program's
    rounds of 64 requests down 32 rows (2,048 lines at l1_lines_per_clk) take longer than a DRAM round trip, and
    the resident programs' rounds are served in turn. Loads of one line a request keep the round trip."""
    spec = get_spec("h200")
    rounds, requests = 64, 64  # per program; 2 KiB a round
    units = spec.units * programs  # `programs` programs on every unit

    def latency(lines_per_request, wavefronts_per_request=1):
        loop = chain(rounds, bytes_per_round=2048, programs=units, load_lines=rounds * requests * lines_per_request
                     * units, load_wavefronts=rounds * requests * wavefronts_per_request * units)
        return estimate(loop, units, spec).components["latency"] * spec.clock_hz

    served = programs * requests * 32 / spec.l1_lines_per_clk
    assert served > spec.dram_round_cycles
    assert latency(32) == pytest.approx(rounds * served, rel=0.02)
    assert latency(1) == pytest.approx(latency(0, 0), rel=1e-9)  # the round trip, as without the L1


@pytest.mark.parametrize("work", [100, 2000])
def test_a_two_stage_pipeline_overlaps_nothing_and_deeper_ones_hide_the_round_trip(work):
    """Software pipelining: the copies for iteration i + depth issue once iteration i's work is done, so with two
    stages (depth 1) each iteration waits its whole round trip and does its work after it; with three (depth 2) an
    iteration takes max(work, (trip + work) / 2)."""
    spec = get_spec("h200")
    rounds, trip = 64, spec.dram_round_cycles  # one program: 1 KiB a round queues for next to nothing

    def latency(key):
        loop = chain(rounds, key=key, phase_instructions={key: work * rounds})
        return estimate(loop, 1, spec).components["latency"] * spec.clock_hz

    work_cycles = work / spec.warp_issue_ipc
    assert latency("0:1:1") == pytest.approx(rounds * (trip + work_cycles) + trip, rel=0.02)
    period = max(work_cycles, (trip + work_cycles) / 2)
    assert latency("0:2:1") == pytest.approx(rounds * period + trip, rel=0.02)


def test_a_pipelined_program_keeps_only_what_its_round_trip_needs_in_flight():
    """Little's law: when an iteration's work outlasts the round trip, a program has about trip / period of its
    depth iterations in flight, so many resident programs queue less than depth iterations each would."""
    spec = get_spec("h200")
    key = "0:4:1"
    busy = chain(16, key=key, bytes_per_round=16 * 1024, programs=1056, num_warps=8, num_stages=5,
                 phase_instructions={key: 16 * 1056 * 112_000})
    phase = next(iter(cost._PerProgram(busy, spec, 8).phases))
    work = 112_000 / (8 * spec.warp_issue_ipc)  # 20,000 cycles, longer than four rounds of every program queue
    period, trip = phase.pipelined(spec, 1056, work)
    assert period == pytest.approx(work)
    assert trip < phase.round_trip(spec, 1056, 4)  # less queued than four iterations of every program
    assert trip == pytest.approx(phase.round_trip(spec, 1056, trip / period), rel=0.01)  # the fixed point


def test_round_trips_queue_when_many_programs_keep_bytes_in_flight():
    # Little's law: 1,056 resident programs with 16 KiB each in flight wait for the DRAM bandwidth, not the latency
    spec = get_spec("h200")
    busy = chain(16, bytes_per_round=16 * 1024, programs=1056, num_warps=8, num_stages=1)
    latency = estimate(busy, 1056, spec).components["latency"]
    queue = 1056 * 16 * 1024 / (spec.dram_bytes_per_s * spec.dram_efficiency)  # one round of every program
    assert latency > 16 * queue > 16 * spec.dram_round_cycles / spec.clock_hz


def test_one_hot_atomic_address_serialises_the_grid():
    c = Counters(atomic_requests=100_000, atomic_ops=100_000, atomic_max_multiplicity=100_000,
                 programs=100_000, num_warps=1)
    result = estimate(c, 100_000, "h200")
    assert result.bound == "atomics"
    assert result.seconds >= 100_000 * 2 / 1.98e9


@pytest.mark.parametrize("wavefronts_per_request", [32, 2])
def test_a_warp_load_down_the_rows_is_bound_by_the_l1(wavefronts_per_request):
    """A load whose 32 lanes each touch a line of their own (a tile laid down its rows) takes the L1 32 lines where
    a coalesced one takes 1: the same bytes, from the L1 after the first touch, bound by its data banks
    (l1_wavefronts_per_clk) where the rows' words share a bank, by its tags (l1_lines_per_clk) where they spread
    over the banks. Stores are the L2's."""
    spec = get_spec("h200")
    requests = 64 * 8192
    coalesced = copy_kernel(8192, load_lines=requests, load_wavefronts=requests, store_lines=requests)
    down_rows = copy_kernel(8192, load_lines=32 * requests, load_wavefronts=wavefronts_per_request * requests,
                            store_lines=requests, load_sectors=32 * requests, l1_hit_sectors=28 * requests)
    fast, slow = estimate(coalesced, 8192, spec), estimate(down_rows, 8192, spec)
    assert fast.bound == "dram" and slow.bound == "l1"
    per_clk = spec.l1_wavefronts_per_clk / 32 if wavefronts_per_request == 32 else spec.l1_lines_per_clk / 32
    assert slow.components["l1"] == pytest.approx(requests / spec.units / per_clk / spec.clock_hz, rel=0.05)


def test_parameters_come_from_the_spec():
    c = copy_kernel(8192)
    base = get_spec("h200")
    faster = base.replace(name="h200-2x-dram", dram_bytes_per_s=2 * base.dram_bytes_per_s)
    assert estimate(c, 8192, faster, register_spread=0).components["dram"] == pytest.approx(
        estimate(c, 8192, base, register_spread=0).components["dram"] / 2)


def test_the_modeled_time_is_the_expectation_over_the_register_estimate_s_spread():
    """Time steps where registers spill or fewer programs fit, and the registers are an estimate: a config just
    inside the budget is charged the chance that it spills, one whose spread crosses no step is not, and one the
    estimate spills already is charged no more than at the estimate."""
    spec = get_spec("h200")
    budget = cost.register_budget(spec, 8)

    def seconds(registers: int, spread: float) -> float:
        tile = dataclasses.replace(matmul_tile(3 * 132), registers_per_thread=registers)
        return estimate(tile, 3 * 132, spec, register_spread=spread).seconds

    assert seconds(budget - 10, cost.REGISTER_SPREAD) > 1.01 * seconds(budget - 10, 0)
    assert seconds(40, cost.REGISTER_SPREAD) == seconds(40, 0)  # three programs a unit either way (shared memory)
    assert seconds(budget + 40, cost.REGISTER_SPREAD) < seconds(budget + 40, 0)


def test_schedule_covers_the_grid_and_components_are_known():
    result = estimate(copy_kernel(1000), 1000, "h200")
    assert sum(w.programs for w in result.schedule) == 1000
    assert result.bound in BOUNDS and set(result.components) == set(BOUNDS)
    assert result.schedule[-1].start_s + result.schedule[-1].seconds == pytest.approx(
        result.seconds - result.components["launch"])


def test_unlaunchable_configs_raise():
    with pytest.raises(ValueError, match="shared"):
        estimate(matmul_tile(10, shared=300 * 1024), 10, "h200")


def _dot_only(tiles, num_warps=4, **extra):
    flops = sum(tiles.values())
    return Counters(tensor_flops={"tf32": flops}, tensor_tiles=tiles, programs=132, num_warps=num_warps,
                    num_stages=3, **extra)


def test_mn_major_operand_of_a_k_major_only_type_is_transposed_at_every_execution():
    spec = get_spec("h200").replace(alpha=0.0)
    executions = 2048 // 32
    flops = 2 * 64 * 64 * 32 * executions * 132
    k_major = estimate(_dot_only({"tf32:64:64:32:k,k": flops}), 132, spec)
    mn_major = estimate(_dot_only({"tf32:64:64:32:k,mn": flops}), 132, spec)
    extra = executions * 32 * 64 * spec.mma_transpose_cycles / spec.clock_hz  # B is K x N = 32 x 64
    assert mn_major.components["shared"] == pytest.approx(k_major.components["shared"] + extra)
    # 16-bit operands may be MN-major at no cost (warpgroup MMAs read them transposed)
    fp16 = {key: Counters(tensor_flops={"fp16": flops}, tensor_tiles={key: flops}, programs=132, num_warps=4)
            for key in ("fp16:64:64:32:k,mn", "fp16:64:64:32:k,k")}
    assert estimate(fp16["fp16:64:64:32:k,mn"], 132, spec).seconds == \
        pytest.approx(estimate(fp16["fp16:64:64:32:k,k"], 132, spec).seconds)


def test_loads_through_a_table_keep_their_round_trips():
    spec = get_spec("h200")
    direct = estimate(chain(64, key="0:2:1", num_stages=3), 1, spec).components["latency"]
    gather = estimate(chain(64, key="0:0:2", num_stages=3), 1, spec).components["latency"]
    chase = estimate(chain(64, key="0:0:2:serial", num_stages=3), 1, spec).components["latency"]
    # software pipelining keeps 2 iterations of direct loads in flight (plus the first round trip), none of a gather,
    # whose table load adds one more round trip to each iteration; unrolling the empty loop body 4 times overlaps
    # the copies' gathers, unless each iteration's addresses wait for the last one's loads
    trip = spec.dram_round_cycles / spec.clock_hz
    issue = memory_issue(chain(64), spec) / spec.clock_hz
    assert direct == pytest.approx(33 * trip + issue, rel=0.01)
    assert gather == pytest.approx(128 / spec.unroll_copies * trip + issue, rel=0.01)
    assert chase == pytest.approx(128 * trip + issue, rel=0.01)


def test_requests_to_one_line_are_served_one_after_another():
    spec = get_spec("h200")
    spread = Counters(atomic_requests=1 << 20, atomic_fenced_requests=1 << 20, atomic_ops=1 << 25,
                      atomic_line_requests=1 << 25, atomic_hot_line_requests=1 << 10, programs=1 << 16, num_warps=4)
    hot = dataclasses.replace(spread, atomic_hot_line_requests=1 << 18)  # a histogram into 128 lines
    fast, slow = estimate(spread, 1 << 16, spec), estimate(hot, 1 << 16, spec)
    assert fast.components["atomics"] == pytest.approx(
        (2 ** 25 / spec.atomic_ops_per_clk + 2 ** 25 / spec.atomic_line_requests_per_clk) / spec.clock_hz)
    assert slow.bound == "atomics"
    assert slow.components["atomics"] == pytest.approx(2 ** 18 * spec.atomic_line_cycles / spec.clock_hz)
    relaxed = dataclasses.replace(spread, atomic_fenced_requests=0, atomic_relaxed_ops=1 << 25)
    assert estimate(relaxed, 1 << 16, spec).components["atomics"] == pytest.approx(
        (2 ** 25 / spec.atomic_relaxed_ops_per_clk + 2 ** 25 / spec.atomic_relaxed_line_requests_per_clk)
        / spec.clock_hz)


def test_a_warps_fenced_atomics_wait_for_each_other():
    spec = get_spec("h200")
    one = Counters(atomic_requests=4 * 132, atomic_fenced_requests=4 * 132, atomic_ops=32 * 4 * 132,
                   atomic_line_requests=4 * 132, programs=132, num_warps=4)
    many = dataclasses.replace(one, **{name: 64 * getattr(one, name) for name in
                                       ("atomic_requests", "atomic_fenced_requests", "atomic_ops",
                                        "atomic_line_requests")})
    extra = estimate(many, 132, spec).components["latency"] - estimate(one, 132, spec).components["latency"]
    waits = 63 * spec.atomic_round_cycles / spec.clock_hz  # and the drain queues behind more atomics
    assert waits <= extra <= 1.1 * waits
    relaxed = dataclasses.replace(many, atomic_fenced_requests=0, atomic_relaxed_ops=many.atomic_ops)
    unfenced = estimate(relaxed, 132, spec).components["latency"]
    assert unfenced < estimate(one, 132, spec).components["latency"] + extra / 10


def test_many_short_programs_wait_for_the_block_scheduler():
    """131,072 programs of 256 bytes each: the H200 starts one every 0.6 ns, which bounds the launch, not the bytes."""
    h200 = get_spec("h200")
    programs = 131072
    result = estimate(copy_kernel(programs, bytes_per_program=256), programs, h200)
    floor = programs * h200.program_start_cycles / (h200.units * h200.clock_hz)
    assert result.bound == "dispatch"
    assert result.components["dispatch"] == pytest.approx(floor)
    assert result.seconds == pytest.approx(h200.launch_overhead_s + floor)
    # the same bytes in 32x fewer, longer programs are bound by memory instead, and faster
    fewer = estimate(copy_kernel(programs // 32, bytes_per_program=32 * 256), programs // 32, h200)
    assert fewer.bound != "dispatch" and fewer.seconds < result.seconds
