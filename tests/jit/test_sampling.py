"""jit.sampling: which programs a big launch measures, and what each stands for."""

import numpy as np
import pytest

import dsl as tl
import simulator
from jit import jit, sampling
from jit.launcher import model_launch


@jit
def triangle_kernel(x_ptr, out_ptr, row_len, BLOCK: tl.constexpr):
    """Program (m, b) sums the first m + 1 blocks of row b: work grows along the first grid axis, as in
    causal attention."""
    m = tl.program_id(0)
    b = tl.program_id(1)
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for start in range(0, (m + 1) * BLOCK, BLOCK):
        acc += tl.load(x_ptr + b * row_len + start + tl.arange(0, BLOCK))
    tl.store(out_ptr + (b * tl.num_programs(0) + m) * BLOCK + tl.arange(0, BLOCK), acc)


@jit
def padded_kernel(x_ptr, out_ptr, used, BLOCK: tl.constexpr):
    """Only the first `used` programs work; the rest of the padded grid exits at once (vLLM's MoE grid)."""
    pid = tl.program_id(0)
    if pid < used:
        offs = pid * BLOCK + tl.arange(0, BLOCK)
        tl.store(out_ptr + offs, tl.load(x_ptr + offs) * 2.0)


@jit
def neighbour_rows_kernel(x_ptr, w_ptr, out_ptr, GROUP: tl.constexpr, BLOCK: tl.constexpr):
    """GROUP consecutive programs read one row (an attention head's keys); every program reads the weight row w."""
    pid = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    row = tl.load(x_ptr + (pid // GROUP) * BLOCK + offs)
    tl.store(out_ptr + pid * BLOCK + offs, row * tl.load(w_ptr + offs))


def test_strata_stand_for_the_whole_launch():
    spec = simulator.get_spec("h200")
    chosen = sampling.split(1000, 40, spec, row=32)
    assert chosen.first.size + chosen.rest.size * chosen.weight == pytest.approx(1000)
    assert np.intersect1d(chosen.first, chosen.rest).size == 0 and np.all(np.diff(chosen.ids) > 0)


def test_stratified_rest_spreads_the_first_axis_evenly():
    rest = sampling.rest(0, 32 * 64, 32, seed=3, row=32)
    assert sorted(rest % 32) == list(range(32))  # every first-axis coordinate once
    assert np.all(np.diff(rest // 64) >= 0) and rest.size == 32  # one per slice of launch order
    assert np.array_equal(sampling.rest(0, 32 * 64, 32, seed=3, row=32), rest)  # seeded, not timed


def test_rest_of_a_short_range_is_all_of_it():
    assert np.array_equal(sampling.rest(5, 12, 50), np.arange(5, 12))


@pytest.mark.parametrize("sample", [None, 24])
def test_sample_of_a_grid_whose_work_grows_along_an_axis_matches_the_exact_counts(rng, sample):
    rows, block = 48, 128
    grid = (32, rows)
    x = rng.standard_normal(rows * 32 * block).astype(np.float32)
    out = np.empty(grid[0] * grid[1] * block, dtype=np.float32)
    args = (x, out, 32 * block)
    exact = model_launch(triangle_kernel, grid, *args, BLOCK=block, machine="h200", sample=False).totals
    approx = model_launch(triangle_kernel, grid, *args, BLOCK=block, machine="h200", sample=sample).totals
    assert approx.programs == exact.programs
    for field in ("load_requests", "warp_instructions"):
        assert getattr(approx, field) == pytest.approx(getattr(exact, field), rel=0.08), field
    assert approx.phase_rounds.keys() == exact.phase_rounds.keys()
    for phase, rounds in exact.phase_rounds.items():
        assert approx.phase_rounds[phase] == pytest.approx(rounds, rel=0.08), phase


def test_sample_of_a_padded_grid_does_not_scale_its_working_start(rng):
    block, used, programs = 256, 24, 4096  # the 24 working programs lie in the sample's start (32 programs)
    x = rng.standard_normal(programs * block).astype(np.float32)
    out = np.zeros_like(x)
    exact = model_launch(padded_kernel, (programs,), x, out, used, BLOCK=block, machine="h200", sample=False)
    approx = model_launch(padded_kernel, (programs,), x, out, used, BLOCK=block, machine="h200", sample=64)
    assert approx.totals.load_requests == exact.totals.load_requests  # the working programs are all in the start
    assert approx.totals.programs == programs


def test_automatic_sample_of_a_sparse_padded_grid_counts_its_working_programs(rng):
    """Working programs scattered beyond the sample's start (a padded MoE grid at small batch): the draw grows
    over the idle programs until the trace budget is spent, so the estimate holds."""
    block, programs = 1024, 8192
    x = rng.standard_normal(programs * block).astype(np.float32)
    out = np.zeros_like(x)
    exact = model_launch(padded_kernel, (programs,), x, out, 700, BLOCK=block, machine="h200", sample=False)
    approx = model_launch(padded_kernel, (programs,), x, out, 700, BLOCK=block, machine="h200")
    assert approx.sampled
    assert approx.totals.load_requests == pytest.approx(exact.totals.load_requests, rel=0.1)


@jit
def row_logsumexp_kernel(x_ptr, out_ptr, n_cols, BLOCK: tl.constexpr):
    """One row a program: an online max and sum over BLOCK-wide chunks, then one load and one store after the
    loop (a cross-entropy's shape): every program does the same work."""
    row = tl.program_id(0)
    running_max = -float("inf")
    running_sum = 0.0
    for start in range(0, n_cols, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        x = tl.load(x_ptr + row * n_cols + cols, mask=cols < n_cols, other=-float("inf"))
        new_max = tl.maximum(running_max, tl.max(x, axis=0))
        running_sum = running_sum * tl.exp(running_max - new_max) + tl.sum(tl.exp(x - new_max), axis=0)
        running_max = new_max
    first = tl.load(x_ptr + row * n_cols)
    tl.store(out_ptr + row, running_max + tl.log(running_sum) - first)


def test_a_thinned_trace_of_equal_rows_finds_no_imbalance(rng):
    """Thinning traces an op run once a program (after its loop) in some programs only, and a loop's iterations
    give or take one: neither is work that varies along the grid, which would stretch the modeled schedule."""
    rows, cols = 1024, 20000
    x = rng.standard_normal(rows * cols).astype(np.float32)
    out = np.empty(rows, dtype=np.float32)
    record = model_launch(row_logsumexp_kernel, (rows,), x, out, cols, BLOCK=256, machine="h200")
    assert record.sampled
    assert record.totals.row_work == {}


def test_a_thinned_trace_keeps_work_that_grows_along_the_grid(rng):
    rows, block = 48, 128
    grid = (96, rows)
    x = rng.standard_normal(rows * 96 * block).astype(np.float32)
    out = np.empty(grid[0] * grid[1] * block, dtype=np.float32)
    record = model_launch(triangle_kernel, grid, x, out, 96 * block, BLOCK=block, machine="h200")
    work = record.totals.row_work
    assert record.sampled and len(work) > 8
    per_program = [work[b] / record.totals.row_programs[b] for b in sorted(work, key=int)]
    assert per_program[-1] > 10 * per_program[0]


@pytest.mark.parametrize("sample", [None, 64])
def test_a_sample_and_the_whole_launch_agree_on_what_the_l1_serves(rng, sample):
    """Consecutive programs run on different units, so the rows only neighbours share come from the L2 whether every
    program is traced or a sample is; the weight row every program reads stays in each unit's L1 (about half the
    sectors hit). Before stop 47 the whole launch served the neighbours' rows from the L1 too (0.91 against 0.46)."""
    programs, group, block = 4096, 16, 1024
    x = rng.standard_normal(programs // group * block).astype(np.float32)
    w = rng.standard_normal(block).astype(np.float32)
    out = np.empty(programs * block, dtype=np.float32)

    def served(sample):
        totals = model_launch(neighbour_rows_kernel, (programs,), x, w, out, GROUP=group, BLOCK=block,
                              machine="h200", sample=sample).totals
        return totals.l1_hit_sectors / totals.load_sectors

    whole = served(False)
    assert 0.4 < whole < 0.5
    assert served(sample) == pytest.approx(whole, abs=0.06)
