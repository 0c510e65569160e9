"""Profiled launches end to end: real kernels, hand-computed counters, modeled time, bit-identical outputs."""

import numpy as np
import pytest

import dsl as tl
import simulator
from jit import cdiv, jit
from jit.launcher import model_launch

RNG = np.random.default_rng(7)


@jit
def copy_kernel(x_ptr, out_ptr, n, stride, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs * stride, mask=mask), mask=mask)


@jit
def tile_kernel(x_ptr, out_ptr, TRANSPOSE_IN_SHARED: tl.constexpr, B: tl.constexpr):
    rows = tl.arange(0, B)[:, None]
    cols = tl.arange(0, B)[None, :]
    if TRANSPOSE_IN_SHARED:  # read rows (coalesced), transpose on chip, write rows
        tl.store(out_ptr + rows * B + cols, tl.trans(tl.load(x_ptr + rows * B + cols)))
    else:  # read columns of the row-major input: out[i, j] = x[j, i]
        tl.store(out_ptr + rows * B + cols, tl.load(x_ptr + cols * B + rows))


@jit
def softmax_kernel(out_ptr, x_ptr, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + row * n_cols + cols, mask=cols < n_cols, other=-float("inf"))
    num = tl.exp(x - tl.max(x, axis=0))
    tl.store(out_ptr + row * n_cols + cols, num / tl.sum(num, axis=0), mask=cols < n_cols)


@jit
def dot_kernel(a_ptr, b_ptr, c_ptr, M: tl.constexpr, N: tl.constexpr, K: tl.constexpr, BK: tl.constexpr):
    rm = tl.arange(0, M)[:, None]
    rn = tl.arange(0, N)[None, :]
    acc = tl.zeros((M, N), dtype=tl.float32)
    for k in range(0, K, BK):
        rk = k + tl.arange(0, BK)
        acc += tl.dot(tl.load(a_ptr + rm * K + rk[None, :]), tl.load(b_ptr + rk[:, None] * N + rn),
                      input_precision="ieee")
    tl.store(c_ptr + rm * N + rn, acc)


def profile_one(launch):
    with simulator.profile() as prof:
        launch()
    assert len(prof.launches) == 1
    return prof.launches[0]


def run_copy(n, stride=1, block=1024, **options):
    x = RNG.standard_normal(n * stride).astype(np.float32)
    out = np.empty(n, dtype=np.float32)
    record = profile_one(lambda: copy_kernel[(cdiv(n, block),)](x, out, n, stride, BLOCK=block, **options))
    np.testing.assert_array_equal(out, x[::stride][:n])
    return record


def test_coalesced_load_is_bytes_over_32_sectors_and_one_request_per_warp_instruction():
    n = 4096
    c = run_copy(n, machine="mtt-s5000").totals
    assert c.load_sectors == n * 4 // 32
    assert c.load_bytes_requested == c.load_bytes_moved == n * 4
    # a thread moves 16 contiguous bytes: 1024 / (4 warps x 32 lanes x 4) = 2 instructions per warp
    assert c.load_requests == n // 4 // 32
    assert c.store_sectors == n * 4 // 32 and c.masked_lanes == 0


def test_stride_two_doubles_sectors():
    n = 4096
    dense, strided = run_copy(n).totals, run_copy(n, stride=2).totals
    assert strided.load_sectors == 2 * dense.load_sectors
    assert strided.load_bytes_requested == dense.load_bytes_requested


def test_masked_tail_counts_inactive_lanes():
    n = 1008  # 16 masked elements: the last 16 / 4 = 4 lanes of the tail instruction are off
    c = run_copy(n).totals
    assert c.load_bytes_requested == n * 4 and c.load_sectors == n * 4 // 32
    assert c.masked_lanes == 2 * 4
    # a bound not known to be a multiple of 16: Triton moves one element per lane, so 24 lanes are off
    c = run_copy(1000).totals
    assert c.masked_lanes == 2 * 24 and c.load_requests == c.store_requests == 1024 // 32  # one warp per 32
    # ... in the layout the pointer alone gives (4 per thread: Triton's coalescing pass), so a warp's lanes are 16
    # bytes apart: each request touches 16 sectors, and the next 3 instructions find them in the L1. Nsight Compute
    # counts the same for a 50,000,003-element fp32 stream on the H200: 25.0 M sectors in 1.56 M requests, 75 % L1
    # hits (simulator/data/h200_ncu.jsonl, holdout7_softcap_fp32_50M)
    assert c.load_sectors == 1000 * 4 // 32 * 4 and c.l1_hit_sectors == c.load_sectors * 3 // 4
    # each store instruction writes 4 of a sector's 32 bytes, but a lane's four consecutive ones write its 16 bytes
    # whole and merge before the L2: no sector is left written in part (4,000 bytes end on a sector's edge)
    assert c.store_sectors == c.load_sectors and c.store_partial_sectors == 0
    assert run_copy(1001).totals.store_partial_sectors == 1  # the last 4 bytes start a sector
    # a thread stores two such runs (8 elements), so the SM sends each instruction's pieces of its sectors on one by
    # one (benchmarks/gpu/streams.py); a thread whose 4 elements are its only run has them merged
    assert c.store_split_sectors == c.store_sectors
    assert run_copy(1000, block=512).totals.store_split_sectors == 0
    assert run_copy(1024).totals.store_split_sectors == 0  # a bound Triton knows is a multiple of 16: vectors


def test_column_read_of_row_major_tile_is_laid_out_along_its_columns_and_bit_identical():
    """Triton's coalescing pass gives the load a layout along its contiguous dim (here the rows) and
    moves the tile to the store's layout through shared memory: both accesses stay coalesced."""
    b = 32
    x = RNG.standard_normal((b, b)).astype(np.float32)
    out = np.empty_like(x)
    c = profile_one(lambda: tile_kernel[(1,)](x, out, False, B=b)).totals
    np.testing.assert_array_equal(out, x.T)
    assert c.load_sectors * 32 == b * b * 4 and c.store_sectors * 32 == b * b * 4
    assert c.shared_wavefronts == 2 * b * b * 4 // 128  # the layout change: written and read once


@pytest.mark.parametrize("padding, conflicts_per_read", [(0, 31), (1, 0)])
def test_transpose_through_shared_memory_conflicts_without_padding(padding, conflicts_per_read):
    b = 32
    x = RNG.standard_normal((b, b)).astype(np.float32)
    out = np.empty_like(x)
    record = profile_one(lambda: tile_kernel[(1,)](x, out, True, B=b, shared_padding=padding))
    np.testing.assert_array_equal(out, x.T)
    c = record.totals
    reads = b * b // 32  # 32 warp instructions read the scratch (and 32 write it, conflict-free)
    assert c.shared_requests == 2 * reads
    assert c.shared_bank_conflicts == reads * conflicts_per_read
    assert c.load_sectors == c.store_sectors == b * b * 4 // 32  # both global sides coalesced


def test_l2_smaller_than_working_set_turns_reread_into_dram_traffic():
    n = 1 << 14  # 64 KiB read twice
    big = simulator.get_spec("mtt-s5000")
    tiny = big.replace(name="tiny-l2", l2_bytes=16 * 1024)
    x = RNG.standard_normal(n).astype(np.float32)
    out = np.empty_like(x)

    def copy(spec):
        return profile_one(lambda: copy_kernel[(n // 1024,)](x, out, n, 1, BLOCK=1024, machine=spec, sample=False))

    for spec, expect_hits in ((big, True), (tiny, False)):
        simulator.reset_device_l2()
        copy(spec)  # every program feeds the L2, as on the device
        second = copy(spec).totals
        if expect_hits:
            assert second.dram_read_bytes == 0 and second.l2_hits >= n * 4 // 32
        else:
            assert second.dram_read_bytes >= n * 4


def test_dot_flops_and_operand_staging():
    m, n, k = 32, 16, 64
    a = RNG.standard_normal((m, k)).astype(np.float32)
    b = RNG.standard_normal((k, n)).astype(np.float32)
    c_out = np.empty((m, n), dtype=np.float32)
    record = profile_one(lambda: dot_kernel[(1,)](a, b, c_out, M=m, N=n, K=k, BK=16))
    np.testing.assert_allclose(c_out, a @ b, rtol=1e-5, atol=1e-4)
    c = record.totals
    assert c.tensor_flops == {"fp32": 2 * m * n * k}
    assert c.shared_bytes > 0 and c.shared_bank_conflicts == 0 and c.barriers > 0
    assert record.counters["shared_bytes_per_program"] > 0


def test_mtt_s4000_counts_128_lane_warps():
    n = 4096
    s5000, s4000 = run_copy(n, machine="mtt-s5000"), run_copy(n, machine="mtt-s4000")
    assert s4000.machine == "mtt-s4000"
    # arange / add / compare: 1024 elements per program are 8 instructions per 32-lane warp, 2 per 128-lane one
    assert s5000.totals.instructions["compare_select"] == 4 * s4000.totals.instructions["compare_select"]
    # sectors do not depend on the warp width
    assert s4000.totals.load_sectors == s5000.totals.load_sectors
    # 1024 elements over 512 threads: 2 per lane (8-B vectors), one instruction per 128-lane warp, split
    # into 4 requests of 32 lanes; 4 programs x 4 warps x 4 requests
    assert s4000.totals.load_requests == 4 * 4 * 4


def test_profiled_reduction_is_bit_identical_and_counts_cross_warp_traffic():
    rows, cols = 5, 1000
    x = RNG.standard_normal((rows, cols)).astype(np.float32)
    plain, profiled = np.empty_like(x), np.empty_like(x)
    softmax_kernel[(rows,)](plain, x, cols, BLOCK=1024)
    record = profile_one(lambda: softmax_kernel[(rows,)](profiled, x, cols, BLOCK=1024))
    assert plain.tobytes() == profiled.tobytes()
    e = np.exp(x - x.max(axis=1, keepdims=True))
    np.testing.assert_allclose(profiled, e / e.sum(axis=1, keepdims=True), rtol=1e-5)
    c = record.totals
    assert c.instructions["special"] > 0 and c.instructions["shuffle"] > 0
    assert c.shared_requests > 0 and c.barriers == rows * 2 * 2 * 4  # 2 reductions x 2 barriers x 4 warps
    assert record.lines and sum(x.load_sectors for x in record.lines.values()) == c.load_sectors


def test_modeled_time_moves_the_right_way_and_big_grids_are_sampled():
    small, large = run_copy(1 << 14, sample=False), run_copy(1 << 20)
    assert not small.sampled and large.sampled  # 1024 programs: an automatic sample, marked
    assert large.totals.dram_bytes > 3 * small.totals.dram_bytes
    assert large.modeled_seconds > small.modeled_seconds
    few = run_copy(8 * 1024, sample=False)  # 8 programs on 56 units
    assert few.estimate.active_units == 8 < simulator.get_spec("mtt-s5000").units


def test_model_launch_runs_a_sample_for_the_autotuner():
    n = 1 << 20
    x = RNG.standard_normal(n).astype(np.float32)
    out = np.zeros(n, dtype=np.float32)
    record = model_launch(copy_kernel, (n // 1024,), x, out, n, 1, BLOCK=1024, machine="h200", sample=64)
    assert record.sampled and record.machine == "h200" and record.grid == (n // 1024,)
    assert record.totals.load_sectors == pytest.approx(n * 4 // 32, rel=1e-3)
    assert np.count_nonzero(out) < n  # only sampled programs ran
    exact = model_launch(copy_kernel, (n // 1024,), x, out, n, 1, BLOCK=1024, machine="h200", sample=False)
    assert not exact.sampled
    assert record.modeled_seconds == pytest.approx(exact.modeled_seconds, rel=0.05)


def test_trace_grows_past_its_first_chunk():
    n = 1 << 17  # 128 programs x 3 records of 1024 addresses: several chunks per stream
    c = run_copy(n).totals
    assert c.load_sectors == n * 4 // 32 and c.store_sectors == n * 4 // 32


def test_chrome_trace_and_lines_of_a_real_profile(tmp_path):
    import json

    x = RNG.standard_normal((3, 300)).astype(np.float32)
    out = np.empty_like(x)
    with simulator.profile() as prof:
        softmax_kernel[(3,)](out, x, 300, BLOCK=512, machine="h200")
    path = tmp_path / "trace.json"
    prof.export_chrome_trace(path)
    events = json.loads(path.read_text())
    events = events["traceEvents"] if isinstance(events, dict) else events
    assert events and all("ph" in e and "pid" in e for e in events)
    assert "softmax_kernel" in prof.table() and "tl.exp" in prof.lines()


def test_sampling_scales_additive_counters_only():
    from jit import sampling

    c = simulator.Counters(load_sectors=10, instructions={"fp_add": 3}, num_warps=4, programs=2)
    scaled = sampling.scale(c, 8.0, 16)
    assert scaled.load_sectors == 80 and scaled.instructions == {"fp_add": 24}
    assert scaled.num_warps == 4 and scaled.programs == 16
    spec = simulator.get_spec("mtt-s5000")
    chosen = sampling.choose(1000, 64, spec)
    ids = chosen.ids
    assert len(ids) == 64 and np.all(np.diff(ids) > 0) and ids[0] == 0
    assert sampling.choose(1000, False, spec) is None and sampling.choose(10, 64, spec) is None
    with pytest.raises(ValueError):
        sampling.choose(1000, -1, spec)


def test_wavetile_profile_env_prints_the_table_at_exit(tmp_path):
    import os
    import pathlib
    import subprocess
    import sys

    script = tmp_path / "profiled.py"
    script.write_text(
        "import numpy as np\nimport dsl as tl\nfrom jit import jit\n\n"
        "@jit\ndef copy_kernel(x_ptr, out_ptr, BLOCK: tl.constexpr):\n"
        "    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)\n"
        "    tl.store(out_ptr + offs, tl.load(x_ptr + offs))\n\n"
        "x = np.arange(4096, dtype=np.float32)\nout = np.empty_like(x)\n"
        "copy_kernel[(4,)](x, out, BLOCK=1024)\nassert (out == x).all()\n")
    root = pathlib.Path(__file__).parents[2]
    env = {**os.environ, "WAVETILE_PROFILE": "1"}
    result = subprocess.run([sys.executable, str(script)], env=env, capture_output=True, text=True, timeout=300,
                            cwd=root)
    assert result.returncode == 0, result.stderr
    assert "copy_kernel" in result.stderr and "modeled" in result.stderr


@jit
def count_kernel(x_ptr, hits_ptr, total_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0)
    tl.atomic_add(hits_ptr + (x % 4), 1, mask=mask)  # 4 hot addresses
    tl.atomic_add(total_ptr, tl.sum(x, axis=0) + tl.load(total_ptr + 1))  # one scalar atomic per program


def test_atomics_count_same_address_serialisation():
    n, block = 700, 256
    x = RNG.integers(0, 100, n).astype(np.int32)
    hits, total = np.zeros(4, np.int32), np.zeros(2, np.int32)
    record = profile_one(lambda: count_kernel[(cdiv(n, block),)](x, hits, total, n, BLOCK=block))
    np.testing.assert_array_equal(hits, np.bincount(x % 4, minlength=4))
    assert total[0] == x.sum()
    c = record.totals
    assert c.atomic_ops == n + 3  # one per active lane, plus one scalar atomic per program
    assert c.atomic_serialized >= n - 4 * 3 * (256 // 32)  # at most 4 distinct addresses per instruction
    assert c.atomic_max_multiplicity >= n // 4
    assert c.load_requests > 0 and c.masked_lanes > 0


@jit
def scatter_add_kernel(ids_ptr, src_ptr, dst_ptr, n_rows, dim, BLOCK_R: tl.constexpr, BLOCK_D: tl.constexpr,
                       RELAXED: tl.constexpr):
    """dst[ids[r], :] += src[r, :], fp32, as an embedding backward does."""
    rows = tl.program_id(0) * BLOCK_R + tl.arange(0, BLOCK_R)
    cols = tl.arange(0, BLOCK_D)
    mask = (rows < n_rows)[:, None] & (cols < dim)[None, :]
    ids = tl.load(ids_ptr + rows, mask=rows < n_rows, other=0)
    values = tl.load(src_ptr + rows[:, None] * dim + cols[None, :], mask=mask, other=0.0)
    pointers = dst_ptr + ids[:, None] * dim + cols[None, :]
    if RELAXED:
        tl.atomic_add(pointers, values, mask=mask, sem="relaxed")
    else:
        tl.atomic_add(pointers, values, mask=mask)


@pytest.mark.parametrize("relaxed", [False, True])
def test_float_atomic_adds_go_four_a_lane_on_the_h200_and_count_their_fences(relaxed):
    rows, dim, vocab, block_r = 70, 64, 5, 16
    ids = RNG.integers(0, vocab, rows).astype(np.int32)
    src = RNG.standard_normal((rows, dim)).astype(np.float32)
    dst = np.zeros((vocab, dim), np.float32)
    record = model_launch(scatter_add_kernel, (cdiv(rows, block_r),), ids, src, dst, rows, dim, BLOCK_R=block_r,
                          BLOCK_D=dim, RELAXED=relaxed, num_warps=2, machine="h200", sample=False)
    want = np.zeros((vocab, dim))
    np.add.at(want, ids, src)
    np.testing.assert_allclose(dst, want, rtol=1e-5, atol=1e-5)
    c = record.totals
    assert c.atomic_ops == rows * dim  # elements, not lanes
    assert c.atomic_requests == rows * dim // (4 * 32)  # 16-B aligned rows: 4 fp32 a lane, 2 rows an instruction
    assert (c.atomic_fenced_requests, c.atomic_relaxed_ops) == ((0, rows * dim) if relaxed else (c.atomic_requests, 0))
    # an instruction covers two source rows: a table row's 2 lines, requested once per instruction that adds to it
    pairs = ids.reshape(-1, 2)
    assert c.atomic_line_requests == sum(2 * len(set(pair)) for pair in pairs.tolist())
    assert c.atomic_hot_line_requests == max(sum(row in pair for pair in pairs.tolist()) for row in range(vocab))
    musa = model_launch(scatter_add_kernel, (cdiv(rows, block_r),), ids, src, np.zeros_like(dst), rows, dim,
                        BLOCK_R=block_r, BLOCK_D=dim, RELAXED=relaxed, num_warps=2, machine="mtt-s5000",
                        sample=False)
    assert musa.totals.atomic_ops == rows * dim
    assert musa.totals.atomic_requests == rows * dim // 32  # one element a lane, a request per 32 lanes


@jit
def row_loop_kernel(out_ptr, x_ptr, w_ptr, n_rows, n_cols, BLOCK: tl.constexpr):
    """Each program walks many rows (like RMSNorm); w is re-read every row."""
    cols = tl.arange(0, BLOCK)
    for row in tl.range(tl.program_id(0), n_rows, tl.num_programs(0)):
        x = tl.load(x_ptr + row * n_cols + cols, mask=cols < n_cols, other=0.0)
        w = tl.load(w_ptr + cols, mask=cols < n_cols, other=0.0)
        tl.store(out_ptr + row * n_cols + cols, x * w, mask=cols < n_cols)


def test_auto_plan_thins_loops_only_when_programs_do_not_fit():
    from jit import sampling

    assert sampling.auto_plan(8, [(1, 1025)] * 3) == (1, 8)  # small: every program, every execution
    stride, programs = sampling.auto_plan(1024, [(1, 4097)] * 3)  # a vector add: programs, not strides
    assert stride == 1 and sampling.MIN_PROGRAMS <= programs < 1024
    stride, programs = sampling.auto_plan(64, [(64, 4097)] * 3)  # long loops in every program
    assert stride > 1 and programs >= sampling.MIN_PROGRAMS
    assert sampling.auto_plan(64, [(64, 4097)] * 3) == (stride, programs)  # a plan, not a timing


def test_thinned_loops_stay_bit_identical_and_close_to_the_full_count():
    n_rows, n_cols, programs = 2048, 1000, 16
    x = RNG.standard_normal((n_rows, n_cols)).astype(np.float32)
    w = RNG.standard_normal(n_cols).astype(np.float32)
    out = np.empty_like(x)
    launch = lambda **o: row_loop_kernel[(programs,)](out, x, w, n_rows, n_cols, BLOCK=1024, **o)  # noqa: E731
    simulator.reset_device_l2()
    full = profile_one(lambda: launch(sample=False))
    simulator.reset_device_l2()
    auto = profile_one(launch)
    np.testing.assert_array_equal(out, x * w)
    assert auto.sampled and not full.sampled
    for name in ("load_requests", "load_sectors", "store_sectors", "dram_read_bytes"):
        assert abs(auto.totals.__dict__[name] / full.totals.__dict__[name] - 1) < 0.03, name
    assert abs(auto.modeled_seconds / full.modeled_seconds - 1) < 0.05


def test_model_only_skips_unsampled_programs_but_records_the_same_model():
    from jit.launcher import model_only

    n, block = 1 << 20, 256
    x = RNG.standard_normal(n).astype(np.float32)
    xs = [x.copy() for _ in range(3)]  # fresh inputs each time: no launch finds another's data in the L2
    full_out, partial_out, kept_out = (np.zeros(n, np.float32) for _ in range(3))
    from simulator.recorder import reset_device_l2

    reset_device_l2()  # both modeled launches start from a cold L2, whatever ran before in this process
    with simulator.profile() as full:
        copy_kernel[(cdiv(n, block),)](xs[0], full_out, n, 1, BLOCK=block, sample=8)
    reset_device_l2()
    with simulator.profile() as partial, model_only():
        copy_kernel[(cdiv(n, block),)](xs[1], partial_out, n, 1, BLOCK=block, sample=8)
    with simulator.profile(), model_only(run_fully=("copy_kernel",)):
        copy_kernel[(cdiv(n, block),)](xs[2], kept_out, n, 1, BLOCK=block, sample=8)
    np.testing.assert_array_equal(full_out, x)
    np.testing.assert_array_equal(kept_out, x)
    assert 0 < np.count_nonzero(partial_out) < n // 10  # only the 8 measured programs ran
    assert partial.launches[0].modeled_seconds == full.launches[0].modeled_seconds
    assert partial.launches[0].sampled
    big = 1 << 23  # large enough that an automatic sample is taken
    with simulator.profile() as auto, model_only():
        copy_kernel[(cdiv(big, block),)](np.zeros(big, np.float32), np.zeros(big, np.float32), big, 1, BLOCK=block)
    with simulator.profile() as every, model_only(measure_fully=("copy_kernel",)):
        copy_kernel[(cdiv(big, block),)](np.zeros(big, np.float32), np.zeros(big, np.float32), big, 1, BLOCK=block)
    assert auto.launches[0].sampled and not every.launches[0].sampled


def test_compile_listeners_hear_every_build():
    from jit import compiler

    heard = []
    compiler.on_compile(lambda name, cached: heard.append((name, cached)))
    listener = compiler._COMPILE_LISTENERS[-1]
    try:
        @jit
        def listened_kernel(x_ptr, BLOCK: tl.constexpr):
            tl.store(x_ptr + tl.arange(0, BLOCK), tl.arange(0, BLOCK).to(tl.float32))

        listened_kernel[(1,)](np.zeros(16, np.float32), BLOCK=16)
    finally:
        compiler.remove_compile_listener(listener)
    assert [name for name, _ in heard] == ["listened_kernel"]


@jit
def gather_dot_kernel(a_ptr, b_ptr, table_ptr, out_ptr, M: tl.constexpr, N: tl.constexpr, K: tl.constexpr,
                      B_KMAJOR: tl.constexpr):
    m, n, k = tl.arange(0, M), tl.arange(0, N), tl.arange(0, K)
    rows = tl.load(table_ptr + m)
    a = tl.load(a_ptr + rows[:, None] * K + k[None, :])
    if B_KMAJOR:
        b = tl.trans(tl.load(b_ptr + n[:, None] * K + k[None, :]))
    else:
        b = tl.load(b_ptr + k[:, None] * N + n[None, :])
    c = tl.dot(a, b)
    p = tl.dot(c.to(tl.float16), tl.load(b_ptr + n[:, None] * N + n[None, :]))
    tl.store(out_ptr + m[:, None] * N + n[None, :], p)


@pytest.mark.parametrize("b_kmajor", [False, True])
def test_dot_tiles_say_where_their_operands_come_from_and_gathers_are_dependent_loads(rng, b_kmajor):
    M = N = K = 64
    a = rng.standard_normal((M, K)).astype(np.float16)
    b = rng.standard_normal((N * K,)).astype(np.float16)
    table = rng.permutation(M).astype(np.int32)
    out = np.empty((M, N), np.float32)
    record = model_launch(gather_dot_kernel, (1,), a, b, table, out, M=M, N=N, K=K, B_KMAJOR=b_kmajor, machine="h200")
    tiles = set(record.totals.tensor_tiles)
    assert f"fp16:64:64:64:k,{'k' if b_kmajor else 'mn'}" in tiles  # A is K-major; B as it lies in memory
    assert "fp16:64:64:64:reg,mn" in tiles  # the second dot's A is computed from the first dot's result
    assert record.totals.phase_rounds == {"-:0:2": 1}  # A's rows come from the table: two round trips, once
    got = np.empty_like(out)
    gather_dot_kernel[(1,)](a, b, table, got, M=M, N=N, K=K, B_KMAJOR=b_kmajor)
    bm = b.reshape(N, K).T if b_kmajor else b.reshape(K, N)
    first = (a[table].astype(np.float32) @ bm.astype(np.float32)).astype(np.float16).astype(np.float32)
    want = first @ b.reshape(N, N).astype(np.float32)
    np.testing.assert_allclose(got, want, rtol=2e-2, atol=2e-1)


def test_profiling_builds_count_the_same_at_either_optimisation_level(rng, monkeypatch, tmp_path):
    """Instrumented builds compile at PROFILING_OPT_LEVEL to save time: the counts must not depend on it."""
    from jit import engine

    if engine.OPT_LEVEL == engine.PROFILING_OPT_LEVEL:
        pytest.skip("profiling builds use the default level")
    x = rng.standard_normal((37, 300)).astype(np.float32)  # rows not a multiple of the block
    out = np.empty_like(x)  # one buffer for both: the modeled L2 places lines by address
    totals = []
    for level in (engine.OPT_LEVEL, engine.PROFILING_OPT_LEVEL):
        monkeypatch.setenv("WAVETILE_CACHE_DIR", str(tmp_path / f"O{level}"))
        monkeypatch.setattr(engine, "PROFILING_OPT_LEVEL", level)
        monkeypatch.setattr(engine, "_profiling_machine", engine._host_target().machine(level))
        fresh = jit(softmax_kernel.fn)  # no build in memory from an earlier launch
        simulator.reset_device_l2()
        record = model_launch(fresh, (37,), out, x, 300, BLOCK=512, machine="h200")
        totals.append(record.totals.as_dict())
    assert totals[0] == totals[1]


def _loop_phase(launch) -> str:
    """The key of the launch's one loop phase (its other phase is the code outside loops)."""
    [key] = [k for k in launch.totals.phase_rounds if not k.startswith("-")]
    return key


def _latency(launch) -> float:
    """The latency component of the launch's modeled time on the H200, one program."""
    return simulator.estimate(launch.totals, 1, simulator.get_spec("h200")).components["latency"]


@jit
def pointer_chase_kernel(next_ptr, out_ptr, steps, BLOCK: tl.constexpr):
    at = tl.arange(0, BLOCK)
    for _ in range(steps):
        at = tl.load(next_ptr + at)  # the next address is this iteration's load
    tl.store(out_ptr + tl.arange(0, BLOCK), at)


@jit
def strided_sum_kernel(x_ptr, out_ptr, steps, BLOCK: tl.constexpr):
    acc = tl.zeros((BLOCK,), dtype=tl.int32)
    for i in range(steps):
        acc += tl.load(x_ptr + i * BLOCK + tl.arange(0, BLOCK))  # addresses from the induction variable alone
    tl.store(out_ptr + tl.arange(0, BLOCK), acc)


def test_a_pointer_chase_is_a_serial_phase_that_unrolling_cannot_overlap(rng):
    block, steps = 64, 37
    table = rng.permutation(block * steps).astype(np.int32) % block  # stays inside the first block's entries
    out = np.empty(block, np.int32)
    chase = model_launch(pointer_chase_kernel, (1,), table, out, steps, BLOCK=block, machine="h200", num_warps=1)
    want = np.arange(block)
    for _ in range(steps):
        want = table[want]
    np.testing.assert_array_equal(out, want)
    total = model_launch(strided_sum_kernel, (1,), table, out, steps, BLOCK=block, machine="h200", num_warps=1)
    np.testing.assert_array_equal(out, table.reshape(steps, block).sum(axis=0))
    assert _loop_phase(chase).endswith(":serial") and not _loop_phase(total).endswith(":serial")
    # the same round trips, but the sum's small loop body is unrolled and its loads issue together
    spec = simulator.get_spec("h200")
    assert _latency(chase) > steps * spec.l2_round_cycles / spec.clock_hz > 2 * _latency(total)


@jit
def running_sum_kernel(x_ptr, out_ptr, steps, BLOCK: tl.constexpr):
    acc = tl.zeros((BLOCK,), dtype=tl.float32)
    for i in range(steps):
        acc += tl.load(x_ptr + i * BLOCK + tl.arange(0, BLOCK))
        tl.store(out_ptr + i * BLOCK + tl.arange(0, BLOCK), acc)  # the next iteration's load may read this


def test_a_loop_that_stores_waits_for_each_iterations_loads(rng):
    steps, block = 37, 64
    x = rng.standard_normal(steps * block).astype(np.float32)
    out = np.empty_like(x)
    stored = model_launch(running_sum_kernel, (1,), x, out, steps, BLOCK=block, machine="h200", num_warps=1)
    np.testing.assert_allclose(out, np.cumsum(x.reshape(steps, block), axis=0).ravel(), rtol=1e-5, atol=1e-5)
    summed = model_launch(strided_sum_kernel, (1,), np.arange(steps * block, dtype=np.int32), np.empty(block, np.int32),
                          steps, BLOCK=block, machine="h200", num_warps=1)
    assert _loop_phase(stored).endswith(":ordered") and not any(k.endswith(":ordered")
                                                                for k in summed.totals.phase_rounds)
    # the same small body, but its copies' loads cannot move above the previous copy's store
    spec = simulator.get_spec("h200")
    assert _latency(stored) > steps * spec.l2_round_cycles / spec.clock_hz > 2 * _latency(summed)


@jit
def looped_sum_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    total = 0.0
    for start in range(0, n, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        total += tl.sum(tl.load(x_ptr + cols, mask=cols < n, other=0.0), axis=0)  # folded every iteration
    tl.store(out_ptr, total)


@pytest.mark.parametrize("num_warps, ordered", [(1, False), (4, True)])
def test_a_loop_that_folds_across_warps_waits_at_a_barrier_each_iteration(rng, num_warps, ordered):
    # across warps the fold goes through shared memory and a barrier, which no later iteration's loads move above:
    # Triton's machine code keeps such loops rolled (holdout8's masked mean and per-expert GEMV)
    n = 3000  # not a multiple of the block
    x = rng.standard_normal(n).astype(np.float32)
    out = np.empty(1, np.float32)
    launch = model_launch(looped_sum_kernel, (1,), x, out, n, BLOCK=256, machine="h200", num_warps=num_warps)
    np.testing.assert_allclose(out[0], x.sum(dtype=np.float64), rtol=1e-4)
    assert _loop_phase(launch).endswith(":ordered") == ordered


@jit
def weighted_rows_kernel(x_ptr, w_ptr, out_ptr, n_cols, ROWS: tl.constexpr, BLOCK: tl.constexpr):
    cols = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    acc = tl.zeros((BLOCK,), dtype=tl.float32)
    for r in range(ROWS):  # a constexpr trip count: the backend may unroll it fully
        acc += tl.load(w_ptr + r) * tl.load(x_ptr + r * n_cols + cols, mask=cols < n_cols, other=0.0)
    tl.store(out_ptr + cols, acc, mask=cols < n_cols)


def test_a_loop_of_constexpr_trips_is_a_constant_phase_the_backend_unrolls_fully(rng):
    rows, cols, block = 8, 1000, 128  # columns not a multiple of the block
    x = rng.standard_normal((rows, cols)).astype(np.float32)
    w = rng.standard_normal(rows).astype(np.float32)
    out = np.empty(cols, np.float32)
    launch = model_launch(weighted_rows_kernel, (-(-cols // block),), x, w, out, cols, ROWS=rows, BLOCK=block,
                          machine="h200", num_warps=1)
    np.testing.assert_allclose(out, w @ x, rtol=1e-5, atol=1e-5)
    assert _loop_phase(launch).endswith(":constant")
    runtime = model_launch(strided_sum_kernel, (1,), np.arange(64 * 8, dtype=np.int32), np.empty(64, np.int32), 8,
                           BLOCK=64, machine="h200", num_warps=1)
    assert not any(k.endswith(":constant") for k in runtime.totals.phase_rounds)
    # all eight iterations' loads issue together: the latency is about one round trip per launch, not eight
    spec = simulator.get_spec("h200")
    assert _latency(launch) < 2 * spec.dram_round_cycles / spec.clock_hz


@jit
def column_block_sums(x_ptr, out_ptr, n_cols, ROWS: tl.constexpr, W: tl.constexpr, COLUMNS_FASTEST: tl.constexpr):
    if COLUMNS_FASTEST:
        column_block, row_block = tl.program_id(0), tl.program_id(1)
    else:
        row_block, column_block = tl.program_id(0), tl.program_id(1)
    rows = row_block * ROWS + tl.arange(0, ROWS)
    cols = column_block * W + tl.arange(0, W)
    x = tl.load(x_ptr + rows[:, None] * n_cols + cols[None, :])
    tl.store(out_ptr + (row_block * (n_cols // W) + column_block) * W + tl.arange(0, W), tl.sum(x, axis=0))


@pytest.mark.parametrize("width, columns_fastest, efficiency", [(16, False, 0.71), (16, True, 0.94), (8, False, 0.68),
                                                                 (64, False, 1.0)])
def test_reads_of_short_runs_waste_dram_bandwidth_as_measured(width, columns_fastest, efficiency):
    """The DRAM bandwidth a tile's misses get follows its runs of contiguous bytes (here W fp32 values per row, rows
    apart) and whether the programs running beside it read the neighbouring runs (columns fastest in launch order):
    the H200's table, simulator/data/h200_dram_runs.json (64-byte runs: 94 % beside neighbours, 71 % far apart)."""
    rows, n_cols = 32, 256
    x = RNG.standard_normal((4 * rows, n_cols)).astype(np.float32)
    out = np.empty(4 * n_cols, np.float32)
    grid = (n_cols // width, 4) if columns_fastest else (4, n_cols // width)
    simulator.reset_device_l2()  # a cold L2: every read misses
    c = profile_one(lambda: column_block_sums[grid](x, out, n_cols, ROWS=rows, W=width,
                                                    COLUMNS_FASTEST=columns_fastest, machine="h200")).totals
    np.testing.assert_allclose(out.reshape(4, n_cols), x.reshape(4, rows, n_cols).sum(axis=1), rtol=1e-5, atol=1e-5)
    assert c.dram_read_bytes > 0
    assert c.dram_short_run_bytes == pytest.approx(c.dram_read_bytes * (1 / efficiency - 1), rel=0.02, abs=64)


@jit
def row_sums(x_ptr, out_ptr, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    acc = tl.zeros((BLOCK,), dtype=tl.float32)
    for start in range(0, n_cols, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        acc += tl.load(x_ptr + row * n_cols + cols, mask=cols < n_cols, other=0.0).to(tl.float32)
    tl.store(out_ptr + row, tl.sum(acc, axis=0))


def test_a_cold_launch_reads_every_byte_from_dram_even_where_neighbours_share_lines():
    """Rows of 1,000 fp16 values start mid-line, so each 64-element load touches new sectors of a line the load
    before it (or the program before it) touched: the L1 holds only sectors someone requested, so none of these is
    an L1 hit and every byte of the input comes from DRAM once."""
    rows, n_cols = 512, 1000
    x = RNG.standard_normal((rows, n_cols)).astype(np.float16)
    out = np.empty(rows, np.float32)
    simulator.reset_device_l2()
    c = profile_one(lambda: row_sums[(rows,)](x, out, n_cols, BLOCK=64, machine="h200")).totals
    np.testing.assert_allclose(out, x.astype(np.float64).sum(axis=1), rtol=1e-3, atol=1e-2)
    assert c.l1_hit_sectors < c.load_sectors - x.nbytes // 32
    assert x.nbytes <= c.dram_read_bytes <= 1.1 * x.nbytes


@jit
def swap_pairs_kernel(x_ptr, out_ptr, n_rows, ROW: tl.constexpr, BLOCK_R: tl.constexpr):
    """out[r, 2i] = x[r, 2i + 1] and out[r, 2i + 1] = x[r, 2i]: two stride-2 loads and stores per row, as an
    interleaved (GPT-J) rotary embedding does."""
    rows = tl.program_id(0) * BLOCK_R + tl.arange(0, BLOCK_R)
    even = rows[:, None] * ROW + 2 * tl.arange(0, ROW // 2)[None, :]
    mask = rows[:, None] < n_rows
    x_even = tl.load(x_ptr + even, mask=mask)
    x_odd = tl.load(x_ptr + even + 1, mask=mask)
    tl.store(out_ptr + even, x_odd, mask=mask)
    tl.store(out_ptr + even + 1, x_even, mask=mask)


@pytest.mark.parametrize("block_r, sectors_per_store", [(1, 4), (8, 8), (32, 32)])
def test_a_tile_with_no_contiguous_dim_puts_its_lanes_down_the_rows(block_r, sectors_per_store):
    """Triton 3.6 breaks its coalescing pass's tie in dim order when no dim of a pointer tile is contiguous: lanes
    walk down the rows first (the interleaved rotary's 4 x 64 tile: threadsPerWarp [4, 8], order [0, 1] in
    simulator/data/h200_compile_facts.jsonl), so each warp store of 2-byte elements touches a sector per row and
    writes part of each, which the L2 merges at its own rate (Nsight: 32 sectors a request at 32 rows, 4 at 1)."""
    n_rows, row = 64, 128
    x = RNG.standard_normal((n_rows, row)).astype(np.float16)
    out = np.empty_like(x)
    c = profile_one(lambda: swap_pairs_kernel[(cdiv(n_rows, block_r),)](x, out, n_rows, ROW=row, BLOCK_R=block_r,
                                                                       num_warps=1, machine="h200")).totals
    swapped = x.reshape(n_rows, row // 2, 2)[:, :, ::-1].reshape(n_rows, row)
    np.testing.assert_array_equal(out, swapped)
    assert c.store_sectors == c.store_requests * sectors_per_store
    assert c.store_partial_sectors == c.store_sectors  # every store writes half of each sector it touches


@jit
def wrapped_columns_kernel(b_ptr, out_ptr, n, BLOCK_K: tl.constexpr, BLOCK_N: tl.constexpr):
    """A matmul's B tile as Triton's tutorial loads it: columns wrapped at n to stay in bounds without a mask."""
    offs_n = (tl.program_id(0) * BLOCK_N + tl.arange(0, BLOCK_N)) % n
    offs_k = tl.arange(0, BLOCK_K)
    b = tl.load(b_ptr + offs_k[:, None] * n + offs_n[None, :])
    tile = tl.program_id(0) * BLOCK_K * BLOCK_N + offs_k[:, None] * BLOCK_N + tl.arange(0, BLOCK_N)[None, :]
    tl.store(out_ptr + tile, b)


@pytest.mark.parametrize("n, lines_per_request, wavefronts_per_request", [(1024, 4, 4), (1001, 32, 2)])
def test_columns_wrapped_at_an_odd_bound_are_read_down_the_rows(n, lines_per_request, wavefronts_per_request):
    """Wrapped at a multiple of 16 the columns run contiguously as far as Triton can prove, so a warp reads 8 fp16 a
    lane along the rows; wrapped at 1,001 no dim is proven contiguous, however the addresses run, and Triton lays
    the tile down its K rows (threadsPerWarp [32, 1], order [0, 1] in its build of holdout18's 1,999 x 3,001 x
    1,001 matmul, simulator/data/h200_compile_facts.jsonl): each lane's element on a line of its own. Rows 2,002
    bytes apart put those 32 elements in 28 of the L1's 32 banks, two at most in one: two wavefronts a request
    (the words of the 8 aligned fp16 a lane reads along a row fill each line's banks: a wavefront a line)."""
    block_k, block_n, programs = 32, 64, 3
    b = RNG.standard_normal((block_k, n)).astype(np.float16)
    out = np.empty((programs, block_k, block_n), np.float16)
    c = profile_one(lambda: wrapped_columns_kernel[(programs,)](b, out, n, BLOCK_K=block_k, BLOCK_N=block_n,
                                                                 num_warps=4, machine="h200")).totals
    columns = np.arange(programs * block_n).reshape(programs, 1, block_n) % n
    np.testing.assert_array_equal(out, b[np.arange(block_k)[None, :, None], columns])
    assert c.load_lines == c.load_requests * lines_per_request
    assert c.load_wavefronts == c.load_requests * wavefronts_per_request
