"""Sampling for modeling big grids: which programs to run with counters, and scaling the counts up.

A launch of P programs is modeled from S of them when its trace would be large, in two strata: the
first F programs in launch order (the start of the first wave: they share the L2, so their reuse is
realistic), each standing for itself, and a seeded stratified draw of R from the rest, each standing
for (P - F) / R programs. The draw takes one program from each of R equal slices of launch order and
spreads their first-axis coordinates evenly, so grids whose work varies along an axis (causal
attention, padded MoE grids whose later programs exit at once) are not judged by their start. The automatic mode
(sample=None) measures program 0, sizes the sample from its executions and trace (auto_plan), thins
long loops' traces to every stride-th iteration when needed, then measures the rest. The plan depends
only on the kernel and the grid, never on timing, so a modeled time is reproducible on any host.
sample=True uses a fixed size for grids over AUTO_EXACT.
Each stratum's counts are scaled by its weight (additive fields; configuration fields stay), DRAM
traffic comes from the launch's extrapolated footprint (launch_dram),
and the record is marked `sampled`, which every profile table shows with '~'.
benchmarks/bench_sampling.py measures the error against full runs.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np

from simulator import Counters, MachineSpec

AUTO_EXACT = 256  # sample=True: grids up to this many programs are profiled completely
AUTO_SAMPLE = 96  # sample=True: programs a sample runs
SEED = 0

# Automatic sampling (sample=None) analyses at most TRACE_SHARE of the launch's whole trace (the analysis
# costs ~80 ns per traced address and a plain memory-bound run ~0.25 ns per element, so about half a plain run),
# but at least MIN_WORDS and at most WORD_BUDGET addresses. A launch whose trace fits is profiled completely;
# a larger one measures as many programs as fit, never fewer than MIN_PROGRAMS; when even those do not fit,
# each program traces only every stride-th execution of each memory op (jit.codegen.instrument), as long as the
# longest loop keeps MIN_TRACED traced iterations (beyond that the budget gives way).
TRACE_SHARE = 1 / 512
MIN_WORDS = 1 << 15
WORD_BUDGET = 1 << 20
MIN_PROGRAMS = 16
MIN_TRACED = 8  # iterations of the longest loop a thinned trace still follows


def word_budget(programs: int, per_program: list[tuple[int, int]]) -> int:
    """Trace words an automatic sample may analyse (per_program as in auto_plan)."""
    words = sum(runs * size for runs, size in per_program)
    return min(WORD_BUDGET, max(MIN_WORDS, int(programs * words * TRACE_SHARE)))


def auto_plan(programs: int, per_program: list[tuple[int, int]]) -> tuple[int, int]:
    """(stride, programs to measure) of an automatic sample; per_program holds, for each traced memory op,
    (executions in one program, words per trace record)."""
    def words(stride: int) -> int:
        return sum(-(-runs // stride) * size for runs, size in per_program)

    budget = word_budget(programs, per_program)
    if programs * words(1) <= budget:
        return 1, programs
    # thin only loops long enough to keep MIN_TRACED iterations: a short loop's last, partial iteration is a
    # large share of its traffic, and a thinned trace would miss or repeat it
    stride, most = 1, max((runs for runs, _ in per_program), default=1)
    while MIN_PROGRAMS * words(stride) > budget and 2 * stride * MIN_TRACED <= most:
        stride *= 2
    return stride, min(programs, max(MIN_PROGRAMS, budget // max(1, words(stride))))


@dataclass(frozen=True)
class Sample:
    """The programs a sampled launch measures: `first` each stands for itself, `rest` for `weight` each."""

    first: np.ndarray
    rest: np.ndarray
    total: int

    @property
    def ids(self) -> np.ndarray:
        return np.concatenate([self.first, self.rest])

    @property
    def weight(self) -> float:
        return (self.total - self.first.size) / self.rest.size if self.rest.size else 0.0


def first_programs(size: int, spec: MachineSpec) -> int:
    """Programs of a sample taken from the start of the launch (the rest are drawn from the others)."""
    return max(1, min(size // 2, spec.units))


def rest(first: int, programs: int, count: int, seed: int = SEED, row: int = 1) -> np.ndarray:
    """`count` program ids from [first, programs), sorted: one from each of `count` equal slices of launch
    order, at a seeded random place; `row` (the grid's first-axis extent) spreads the picks' first-axis
    coordinates evenly over [0, row) where a slice holds the program with the coordinate it is given."""
    count = max(0, min(count, programs - first))
    rng = np.random.default_rng(seed)
    edges = first + np.arange(count + 1, dtype=np.int64) * (programs - first) // max(1, count)
    low, high = edges[:-1], edges[1:]
    picks = low + (rng.random(count) * (high - low)).astype(np.int64)
    if row > 1 and count:
        coords = ((np.arange(count) + rng.random(count)) * row / count).astype(np.int64)
        rng.shuffle(coords)
        for shift in (0, row, -row):
            moved = picks - picks % row + coords + shift
            fits = (moved >= low) & (moved < high) & (picks % row != coords)
            picks = np.where(fits, moved, picks)
    return np.sort(picks)


IDLE_SHARE = 0.01  # a program that traces under this share of the busiest sampled one's words does no work
MAX_EXTRA = 4096  # programs an idle-heavy sample may add


def idle_heavy(work: list[int]) -> bool:
    """Whether some measured programs (`work`: the trace words of each) exit at once while others work (a
    padded grid): their mean is then
    dominated by how many working programs the draw happened to hit, and a bigger draw is cheap."""
    most = max(work, default=0)
    return most > 0 and min(work) < IDLE_SHARE * most


def extra(first: int, programs: int, taken: np.ndarray, seed: int = SEED) -> np.ndarray:
    """The programs of [first, programs) not yet taken, in a seeded random order (any prefix is a uniform
    draw), at most MAX_EXTRA: what an idle-heavy sample adds while its trace budget lasts."""
    others = np.setdiff1d(np.arange(first, programs, dtype=np.int64), taken, assume_unique=True)
    rng = np.random.default_rng(seed + 1)
    return rng.permutation(others)[:MAX_EXTRA]


def choose(programs: int, sample: int | bool | None, spec: MachineSpec, seed: int = SEED,
           row: int = 1) -> Sample | None:
    """The programs to run with counters, or None for all of them; `row`: the grid's first-axis extent."""
    if sample is False or sample is None or sample is True and programs <= AUTO_EXACT:
        return None
    if sample is True:
        size = AUTO_SAMPLE
    else:
        size = int(sample)
        if size <= 0:
            raise ValueError(f"sample must be a positive number of programs, got {sample}")
    if size >= programs:
        return None
    return split(programs, size, spec, seed, row)


def split(programs: int, size: int, spec: MachineSpec, seed: int = SEED, row: int = 1) -> Sample:
    """A sample of `size` of `programs`: the first programs of the launch, then a stratified draw."""
    first = first_programs(size, spec)
    return Sample(np.arange(first, dtype=np.int64), rest(first, programs, size - first, seed, row), programs)


def scale(counters: Counters, factor: float, programs: int) -> Counters:
    """Counters of `programs` programs estimated from a sample: additive fields times `factor`."""
    scaled = dataclasses.replace(counters.scaled(factor), programs=programs)
    sampled = counters.programs
    for name in ("atomic_max_multiplicity", "atomic_hot_line_requests"):  # an address or line every program hits
        if getattr(counters, name) >= sampled > 0:
            scaled = dataclasses.replace(scaled, **{name: int(round(getattr(counters, name) * factor))})
    return scaled


def footprint_bytes(groups: list[tuple[list[np.ndarray], float]], ranges: tuple[np.ndarray, np.ndarray],
                    sector_bytes: int) -> int:
    """Distinct bytes the whole launch touches, extrapolated from a sample's strata (each stratum's sector ids
    and what each of its programs stands for): per buffer, each stratum's distinct sectors times its factor,
    at most the buffer itself."""
    starts, ends = ranges
    total, counts = 0.0, np.zeros(starts.size)
    for sectors, factor in groups:
        if not sectors or not sum(s.size for s in sectors):
            continue
        addresses = np.unique(np.concatenate(sectors)) * sector_bytes
        which = np.searchsorted(starts, addresses, side="right") - 1 if starts.size else np.full(addresses.size, -1)
        inside = which >= 0
        inside[inside] &= addresses[inside] < ends[which[inside]]
        total += float(np.count_nonzero(~inside)) * factor * sector_bytes
        counts += np.bincount(which[inside], minlength=starts.size) * factor
    for b in np.flatnonzero(counts):
        total += min(counts[b] * sector_bytes, -(-(ends[b] - starts[b]) // sector_bytes) * sector_bytes)
    return int(total)


def launch_dram(totals: Counters, lines: dict, touched: list[tuple[dict[str, list], float]], ranges,
                spec: MachineSpec, sampled: bool) -> tuple[Counters, dict]:
    """The launch's DRAM traffic from its footprint (distinct bytes read and written, extrapolated from a sample).

    Writes: the L2 holds back up to `l2_dirty_bytes` of written data when a launch ends and writes it back after
    it, so the launch itself writes max(0, written - l2_dirty_bytes) to DRAM, shared among the lines that store.
    Reads of a sampled launch: a sample sees little of the reuse between programs (neighbouring matmul tiles share
    rows of A), so its misses, scaled, overstate DRAM reads; but when the data the launch touches fits in the L2,
    each sector comes from DRAM at most once. L2 misses shrink in proportion (they become hits).
    """
    read, written = (footprint_bytes([(t.get(kind, []), f) for t, f in touched], ranges, spec.sector_bytes)
                     for kind in ("read", "write"))
    stored = sum(c.store_bytes_moved for c in lines.values())
    writes = max(0.0, written - spec.l2_dirty_bytes)
    read_ratio = 1.0
    if sampled and read + written <= spec.l2_reuse_bytes and totals.dram_read_bytes:
        read_ratio = min(1.0, read / totals.dram_read_bytes)

    def charged(c: Counters) -> Counters:
        dram_read = int(round(c.dram_read_bytes * read_ratio))
        misses = int(round(c.l2_misses * (dram_read / c.dram_read_bytes if c.dram_read_bytes else 1.0)))
        share = c.store_bytes_moved / stored if stored else 0.0
        phases = {k: int(round(v * read_ratio)) for k, v in c.phase_dram_bytes.items()}
        return dataclasses.replace(c, dram_read_bytes=dram_read, dram_write_bytes=int(round(writes * share)),
                                   dram_short_run_bytes=int(round(c.dram_short_run_bytes * read_ratio)),
                                   l2_misses=misses, l2_hits=c.l2_hits + c.l2_misses - misses, phase_dram_bytes=phases)

    lines = {key: charged(c) for key, c in lines.items()}
    moved = sum((Counters(**{f: getattr(c, f) for f in _DRAM_FIELDS}) for c in lines.values()), Counters())
    return dataclasses.replace(totals, **{f: getattr(moved, f) for f in _DRAM_FIELDS}), lines


_DRAM_FIELDS = ("dram_read_bytes", "dram_write_bytes", "dram_short_run_bytes", "l2_hits", "l2_misses",
                "phase_dram_bytes")
