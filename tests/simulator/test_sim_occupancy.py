"""Occupancy and waves: which limit binds, and how grids are cut into waves."""

import pytest

from simulator import estimate_registers, occupancy, waves
from simulator.occupancy import gather_waits, register_target
from simulator.specs import get_spec


def test_warp_limit_on_h200():
    occ = occupancy("h200", num_warps=4)
    assert occ.programs_per_unit == 16 and occ.limiter == "warps"
    assert occ.fraction == 1.0


def test_register_rounding_example_from_the_best_practices_guide():
    # 37 registers -> 1,280 per warp (rounded to 256): 12 programs of 4 warps = 75 %
    occ = occupancy("h200", num_warps=4, registers_per_thread=37)
    assert occ.limiter == "registers"
    assert occ.programs_per_unit == 12
    assert occ.fraction == pytest.approx(0.75)


def test_shared_memory_limit_lowers_resident_programs():
    small = occupancy("h200", num_warps=4, shared_bytes_per_program=32 * 1024)
    large = occupancy("h200", num_warps=4, shared_bytes_per_program=100 * 1024)
    assert small.programs_per_unit == 233472 // (32 * 1024 + 1024) == 6
    assert large.programs_per_unit == 2 and large.limiter == "shared"
    assert large.fraction < small.fraction


def test_per_program_limits_make_a_launch_impossible():
    too_much_shared = occupancy("h200", shared_bytes_per_program=300 * 1024)
    assert not too_much_shared.launchable and too_much_shared.limiter == "shared"
    s4000_threads = occupancy("mtt-s4000", num_warps=16)  # 16 x 128 = 2,048 threads > 1,024
    assert not s4000_threads.launchable and s4000_threads.limiter == "threads"
    assert not occupancy("mtt-s4000", shared_bytes_per_program=80 * 1024).launchable  # 72 KiB per program


def test_warp_width_enters_the_register_count():
    # the same 64 registers per thread cost 4x more per warp on 128-lane warps
    h200 = occupancy("h200", num_warps=2, registers_per_thread=64)
    s4000 = occupancy("mtt-s4000", num_warps=2, registers_per_thread=64)
    assert h200.limits["registers"] == 65536 // (2 * 64 * 32)
    assert s4000.limits["registers"] == 65536 // (2 * 64 * 128)


def test_waves_and_tail():
    plan = waves(programs=200, programs_per_unit=1, units=132)
    assert (plan.count, plan.full_waves, plan.tail_programs) == (2, 1, 68)
    assert plan.tail_utilisation == pytest.approx(68 / 132)
    assert waves(264, 1, 132).tail_utilisation == 1.0
    assert waves(66, 2, 132).utilisation == pytest.approx(0.25)
    with pytest.raises(ValueError):
        waves(10, 0, 132)


def test_register_estimate_grows_with_live_tiles():
    small = estimate_registers(4 * 1024, num_warps=4, spec="h200")
    large = estimate_registers(128 * 128 * 4, num_warps=4, spec="h200")
    assert small < large <= 255


@pytest.mark.parametrize("num_warps, target", [(1, 64), (2, 32), (4, 32), (8, 32), (32, 32)])
def test_the_compiler_s_register_target_keeps_the_unit_full(num_warps, target):
    """At the target a unit holds as many of the programs' warps as its warp and program limits allow (32 programs
    of 1 warp are only 32 warps, so those get 64 registers); one allocation unit more and it holds fewer."""
    spec = get_spec("h200")
    assert register_target(spec, num_warps) == target
    full = occupancy(spec, num_warps, target).active_warps
    assert full == min(spec.max_warps_per_unit, spec.max_programs_per_unit * num_warps)
    assert occupancy(spec, num_warps, target + spec.register_alloc_unit // spec.warp_size).active_warps < full


@pytest.mark.parametrize("num_warps, waits", [(1, 14.0), (2, 8.0), (3, 8.0), (4, 6.0), (32, 6.0)])
def test_a_gathering_loop_s_waits_come_from_the_row_of_the_most_warps_at_or_below_the_program_s(num_warps, waits):
    assert gather_waits(get_spec("h200"), num_warps) == waits


def test_a_gather_waits_table_without_a_row_for_one_warp_is_rejected():
    with pytest.raises(ValueError, match="serialized_gather_waits"):
        get_spec("h200").replace(serialized_gather_waits={2: 8.0})
