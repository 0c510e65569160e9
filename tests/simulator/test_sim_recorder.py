"""LaunchCounters end to end: a vector add's warp accesses become per-line and total counters."""

import numpy as np

import simulator
from simulator import L2Cache, LaunchCounters, LaunchRecord

X, Y, OUT = 1 << 24, 2 << 24, 3 << 24  # buffer base addresses
LOAD_X, LOAD_Y, STORE = ("add.py", 5), ("add.py", 6), ("add.py", 7)


def run_vector_add(recorder, n, block=1024, num_warps=4, warp=32):
    """Feed the per-warp addresses of `out = x + y` (fp32), one program per block, in launch order."""
    programs = -(-n // block)
    per_warp = block // (num_warps * warp)  # instructions per warp per tensor
    offsets = np.arange(programs * block, dtype=np.int64).reshape(-1, warp)  # one row per warp instruction
    mask = offsets < n
    pids = np.repeat(np.arange(programs), num_warps * per_warp)
    for line, base in ((LOAD_X, X), (LOAD_Y, Y)):
        recorder.global_access(line, base + 4 * offsets, mask, 4, program_ids=pids)
    recorder.instructions(STORE, {"fp_add": offsets.shape[0]}, simt_flops=n)
    recorder.global_access(STORE, OUT + 4 * offsets, mask, 4, store=True, program_ids=pids)
    return programs


def test_vector_add_counts():
    n = 100_000
    rec = LaunchCounters("h200", programs=98, num_warps=4, l2=L2Cache("h200"))
    run_vector_add(rec, n)
    totals, lines = rec.finish()
    assert totals.load_sectors == 2 * n * 4 // 32
    assert totals.store_sectors == n * 4 // 32
    assert totals.masked_lanes == 3 * (98 * 1024 - n)
    assert totals.dram_read_bytes == 2 * n * 4  # cold L2: every byte read once, in 64-B atoms
    assert totals.dram_write_bytes == n * 4
    assert totals.l2_hits == 0
    assert lines[LOAD_X].dram_read_bytes == n * 4 and lines[STORE].dram_write_bytes == n * 4
    assert sum(c.l2_misses for c in lines.values()) == totals.l2_misses
    assert totals.flops == n and totals.programs == 98


def test_second_launch_hits_in_the_device_l2():
    simulator.reset_device_l2()
    first = LaunchCounters("mtt-s5000", programs=16, num_warps=4)
    run_vector_add(first, 16 * 1024)
    cold, _ = first.finish()
    second = LaunchCounters("mtt-s5000", programs=16, num_warps=4)
    run_vector_add(second, 16 * 1024)
    warm, _ = second.finish()
    assert cold.l2_hits == 0 and warm.l2_misses == 0
    assert warm.dram_read_bytes == 0
    assert warm.dram_write_bytes == 16 * 1024 * 4  # the stores are charged again in each launch
    simulator.reset_device_l2()


def test_shared_atomic_dot_and_barrier_events():
    rec = LaunchCounters("h200", programs=1, num_warps=1, l2=False)
    lanes = np.arange(32, dtype=np.int64)
    rec.shared_access(("k.py", 1), 4 * 32 * lanes)
    rec.atomic_access(("k.py", 2), np.zeros(32, np.int64))
    rec.dot(("k.py", 3), "bf16", 2 * 16 * 16 * 16)
    rec.barriers(("k.py", 4), 2)
    rec.memory_rounds(3)
    totals, lines = rec.finish()
    assert totals.shared_bank_conflicts == 31
    assert totals.atomic_serialized == 31 and totals.atomic_max_multiplicity == 32
    assert totals.tensor_flops == {"bf16": 8192}
    assert totals.barriers == 2 and totals.memory_rounds == 3
    assert set(lines) == {("k.py", i) for i in range(1, 5)}


def test_record_built_from_a_recorder_feeds_a_profile():
    rec = LaunchCounters("h200", programs=98, num_warps=4, l2=L2Cache("h200"))
    run_vector_add(rec, 100_000)
    totals, lines = rec.finish()
    with simulator.profile() as prof:
        simulator.record_launch(LaunchRecord.build("add_kernel", 98, totals, machine="h200", lines=lines))
    assert prof.launches[0].bound in ("dram", "latency", "launch")
    assert "add.py:5" in prof.lines() or "add.py:6" in prof.lines()
