"""LaunchCounters end to end: a vector add's warp accesses become per-line and total counters."""

import numpy as np
import pytest

import simulator
from simulator import L2Cache, LaunchCounters, LaunchRecord
from simulator.recorder import _hottest

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
    assert totals.dram_write_bytes == 0  # charged per launch by its footprint (jit.sampling.launch_dram)
    assert totals.l2_hits == 0
    assert lines[LOAD_X].dram_read_bytes == n * 4
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
    simulator.reset_device_l2()


def reread_rows(recorder, programs, row_bytes, passes=2):
    """Each program reads its own row `passes` times in order (a multi-pass row kernel), one warp of 32 lanes."""
    lanes = row_bytes // 4
    offsets = np.arange(lanes, dtype=np.int64).reshape(-1, 32)
    for program in range(programs):
        rows = np.concatenate([X + program * row_bytes + 4 * offsets] * passes)
        recorder.global_access(("k.py", 1), rows, None, 4, program_ids=np.full(len(rows), program))


def test_concurrent_programs_evict_each_others_rows():
    # 8 programs re-read a 64 KiB row: alone each reuse is 64 KiB away and hits; with 1,000 of them resident the
    # L2 sees 64 MiB of other rows in between, past the measured reuse capacity, and every re-read misses
    spec = simulator.get_spec("h200")
    alone = LaunchCounters(spec, programs=8, num_warps=1, l2=L2Cache(spec), concurrency=1)
    reread_rows(alone, 8, 64 * 1024)
    crowded = LaunchCounters(spec, programs=8, num_warps=1, l2=L2Cache(spec), concurrency=1000, per_unit=8)
    reread_rows(crowded, 8, 64 * 1024)
    (solo, _), (busy, _) = alone.finish(), crowded.finish()
    assert solo.dram_read_bytes == 8 * 64 * 1024
    assert busy.dram_read_bytes == 2 * 8 * 64 * 1024
    assert busy.l2_hits == 0


def test_shared_lines_do_not_count_as_private_traffic():
    # every program reads one shared 512 KiB table between the two passes over its own small row: the table is
    # one copy for all, so the rows' reuse distance stays short and they hit however many programs run at once
    spec = simulator.get_spec("h200")
    rec = LaunchCounters(spec, programs=4, num_warps=1, l2=L2Cache(spec), concurrency=1000, per_unit=8)
    lanes = np.arange(32, dtype=np.int64)
    table = Y + 4 * np.arange(512 * 1024 // 4, dtype=np.int64).reshape(-1, 32)
    for program in range(4):
        row = (X + program * 4096 + 4 * lanes)[None, :]
        for batch in (row, table, row):
            rec.global_access(("k.py", 1), batch, None, 4, program_ids=np.full(len(batch), program))
    totals, _ = rec.finish()
    assert totals.dram_read_bytes == 512 * 1024 + 4 * 128  # the table once, each row once


def test_shared_atomic_dot_and_barrier_events():
    rec = LaunchCounters("h200", programs=1, num_warps=1, l2=False)
    lanes = np.arange(32, dtype=np.int64)
    rec.shared_access(("k.py", 1), 4 * 32 * lanes)
    rec.atomic_access(("k.py", 2), np.zeros(32, np.int64))
    rec.dot(("k.py", 3), "bf16", 2 * 16 * 16 * 16)
    rec.barriers(("k.py", 4), 2)
    rec.launch(simulator.Counters(phase_rounds={"0:0:1": 3}))
    totals, lines = rec.finish()
    assert totals.shared_bank_conflicts == 31
    assert totals.atomic_serialized == 31 and totals.atomic_max_multiplicity == 32
    assert totals.tensor_flops == {"bf16": 8192}
    assert totals.barriers == 2 and totals.phase_rounds == {"0:0:1": 3}
    assert set(lines) == {("k.py", i) for i in range(1, 5)}


def test_record_built_from_a_recorder_feeds_a_profile():
    rec = LaunchCounters("h200", programs=98, num_warps=4, l2=L2Cache("h200"))
    run_vector_add(rec, 100_000)
    totals, lines = rec.finish()
    with simulator.profile() as prof:
        simulator.record_launch(LaunchRecord.build("add_kernel", 98, totals, machine="h200", lines=lines))
    assert prof.launches[0].bound in ("dram", "latency", "launch")
    assert "add.py:5" in prof.lines() or "add.py:6" in prof.lines()


def _four_per_unit(spec) -> LaunchCounters:
    """A launch of four programs a unit, four units' worth resident at once."""
    return LaunchCounters(spec, programs=4 * spec.units, num_warps=1, l2=L2Cache(spec), concurrency=528, per_unit=4)


def _shared_vector_and_rows(rec: LaunchCounters, programs: list[int], phase: str | None = None,
                            row_bytes: int = 1024) -> None:
    """Each program reads a shared 4 KiB vector, then its own row twice."""
    vector = Y + 4 * np.arange(1024, dtype=np.int64).reshape(-1, 32)
    for at, program in enumerate(programs):
        row = X + at * row_bytes + 4 * np.arange(row_bytes // 4, dtype=np.int64).reshape(-1, 32)
        for batch in (vector, row, row):
            rec.global_access(("k.py", 1), batch, None, 4, program_ids=np.full(len(batch), program), phase=phase)


def test_the_l1_serves_near_reuses_and_lines_programs_on_one_unit_share():
    # four programs one after another on one unit (launch order 0, units, 2 units, 3 units): the vector comes from
    # the L2 for the first, the others find it in the L1 (6 KiB a program in between); each row's second read hits
    spec = simulator.get_spec("h200")
    rec = _four_per_unit(spec)
    _shared_vector_and_rows(rec, [k * spec.units for k in range(4)])
    totals, _ = rec.finish()
    vector_sectors, row_sectors = 4096 // 32, 1024 // 32
    assert totals.l1_hit_sectors == 3 * vector_sectors + 4 * row_sectors
    assert totals.l2_hits + totals.l2_misses == pytest.approx(totals.load_sectors - totals.l1_hit_sectors, abs=1)


def test_a_shared_line_the_l1_cannot_keep_between_programs_comes_from_the_l2():
    """The same, with 1 MiB rows: the unit's L1 (256 KiB) no longer holds the vector from one program to the next
    (nor a row for its second read)."""
    spec = simulator.get_spec("h200")
    rec = _four_per_unit(spec)
    _shared_vector_and_rows(rec, [k * spec.units for k in range(4)], row_bytes=1 << 20)
    totals, _ = rec.finish()
    assert totals.l1_hit_sectors == 0


def test_programs_next_to_each_other_in_launch_order_share_no_l1():
    """Consecutive programs go to different units: a line only they read (an attention head's keys) comes from
    the L2 for each of them; only the rows' second reads hit the L1."""
    spec = simulator.get_spec("h200")
    rec = _four_per_unit(spec)
    _shared_vector_and_rows(rec, [0, 1, 2, 3])
    totals, _ = rec.finish()
    assert totals.l1_hit_sectors == 4 * 1024 // 32


def test_asynchronous_copies_bypass_the_l1():
    """The same shared vector and re-read rows, loaded by a software-pipelined phase (depth 2): asynchronous copies
    to shared memory, which the L1 never serves; a plain phase's loads of them hit it as above."""
    spec = simulator.get_spec("h200")
    served = {}
    for phase in ("0:2:1", "0:0:1"):
        rec = _four_per_unit(spec)
        _shared_vector_and_rows(rec, [k * spec.units for k in range(4)], phase)
        totals, _ = rec.finish()
        served[phase] = totals.l1_hit_sectors
        assert totals.l2_hits + totals.l2_misses == totals.load_sectors - totals.l1_hit_sectors
    assert served["0:2:1"] == 0 and served["0:0:1"] > 0


def test_a_sampled_hot_line_is_scaled_by_its_share_not_by_its_luck():
    # a histogram into 128 lines: the full launch's hottest line leads the mean by chance, sqrt(n) deep; a 1 %
    # sample's lead is 10x deeper relative to its counts, so it is scaled by sqrt(100), not 100
    rng = np.random.default_rng(3)
    requests = rng.integers(0, 128, 128 * 10_000)
    full = np.bincount(requests).max()
    sample = requests[: requests.size // 100]
    estimate = 100 * _hottest([(sample, 1.0)], factor=100.0, programs=50)
    naive = 100 * np.bincount(sample).max()
    assert abs(estimate - full) < 0.02 * full < naive - full
    # a line that leads by far more than chance (Zipf-like bins) keeps its lead
    skewed = np.concatenate([sample, np.zeros(5000, np.int64)])
    assert 100 * _hottest([(skewed, 1.0)], factor=100.0, programs=50) >= 0.95 * 100 * np.bincount(skewed).max()
