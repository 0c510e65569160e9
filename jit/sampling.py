"""Sampling for modeling big grids: which programs to run with counters, and scaling the counts up.

A launch of P programs is modeled from S of them when its trace would be large: the first programs
in launch order (the start of the first wave: they share the L2, so their reuse is realistic) plus a
seeded random sample of the rest (tails, boundary programs), in launch order. The automatic mode
(sample=None) measures program 0, sizes the sample from its executions and trace (auto_plan), thins
long loops' traces to every stride-th iteration when needed, then measures the rest. The plan depends
only on the kernel and the grid, never on timing, so a modeled time is reproducible on any host.
sample=True uses a fixed size for grids over AUTO_EXACT.
Counts measured on S programs are scaled by P / S (additive fields; configuration fields stay), DRAM
traffic is capped by the launch's extrapolated footprint when it fits in the L2 (footprint_limit),
and the record is marked `sampled`, which every profile table shows with '~'.
benchmarks/bench_sampling.py measures the error against full runs.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from simulator import Counters, MachineSpec

AUTO_EXACT = 256  # sample=True: grids up to this many programs are profiled completely
AUTO_SAMPLE = 96  # sample=True: programs a sample runs
SEED = 0

# Automatic sampling (sample=None) analyses at most TRACE_SHARE of the launch's whole trace (the analysis
# costs ~80 ns per traced address and a plain memory-bound run ~0.25 ns per element, so about half a plain run),
# but at least MIN_WORDS and at most WORD_BUDGET addresses. A launch whose trace fits is profiled completely;
# a larger one measures as many programs as fit, never fewer than MIN_PROGRAMS; when even those do not fit,
# each program traces only every stride-th execution of each memory op (loop iterations 0, S, 2S, ...).
TRACE_SHARE = 1 / 512
MIN_WORDS = 1 << 15
WORD_BUDGET = 1 << 18
MIN_PROGRAMS = 2


def auto_plan(programs: int, per_program: list[tuple[int, int]]) -> tuple[int, int]:
    """(stride, programs to measure) of an automatic sample; per_program holds, for each traced memory op,
    (executions in one program, words per trace record)."""
    def words(stride: int) -> int:
        return sum(-(-runs // stride) * size for runs, size in per_program)

    budget = min(WORD_BUDGET, max(MIN_WORDS, int(programs * words(1) * TRACE_SHARE)))
    if programs * words(1) <= budget:
        return 1, programs
    stride, most = 1, max((runs for runs, _ in per_program), default=1)
    while MIN_PROGRAMS * words(stride) > budget and stride < most:
        stride *= 2
    return stride, min(programs, max(MIN_PROGRAMS, budget // max(1, words(stride))))


def first_programs(size: int, spec: MachineSpec) -> int:
    """Programs of a sample taken from the start of the launch (the rest are random)."""
    return max(1, min(size // 2, spec.units))


def rest(first: int, programs: int, count: int, seed: int = SEED) -> np.ndarray:
    """`count` seeded random program ids from [first, programs), sorted."""
    count = max(0, min(count, programs - first))
    rng = np.random.default_rng(seed)
    return np.sort(rng.choice(np.arange(first, programs), size=count, replace=False)).astype(np.int64)


def choose(programs: int, sample: int | bool | None, spec: MachineSpec, seed: int = SEED) -> np.ndarray | None:
    """Linear program ids to run with counters (sorted, launch order), or None for all of them."""
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
    first = first_programs(size, spec)
    return np.concatenate([np.arange(first, dtype=np.int64), rest(first, programs, size - first, seed)])


def scale(counters: Counters, factor: float, programs: int) -> Counters:
    """Counters of `programs` programs estimated from a sample: additive fields times `factor`."""
    scaled = dataclasses.replace(counters.scaled(factor), programs=programs)
    sampled = counters.programs
    if counters.atomic_max_multiplicity >= sampled > 0:  # one hot address shared by every program
        hot = int(round(counters.atomic_max_multiplicity * factor))
        scaled = dataclasses.replace(scaled, atomic_max_multiplicity=hot)
    return scaled


def footprint_bytes(sectors: list[np.ndarray], ranges: tuple[np.ndarray, np.ndarray], factor: float,
                    sector_bytes: int) -> int:
    """Distinct bytes the whole launch touches, extrapolated from a sample: per buffer, the sample's
    distinct sectors times `factor`, at most the buffer itself."""
    if not sectors or not sum(s.size for s in sectors):
        return 0
    ordered = np.sort(np.concatenate(sectors))
    keep = np.empty(ordered.size, dtype=bool)
    keep[0] = True
    np.not_equal(ordered[1:], ordered[:-1], out=keep[1:])
    addresses = ordered[keep] * sector_bytes
    starts, ends = ranges
    which = np.searchsorted(starts, addresses, side="right") - 1 if starts.size else np.full(addresses.size, -1)
    inside = which >= 0
    inside[inside] &= addresses[inside] < ends[which[inside]]
    total = float(np.count_nonzero(~inside)) * factor * sector_bytes
    counts = np.bincount(which[inside], minlength=starts.size)
    for b in np.flatnonzero(counts):
        total += min(counts[b] * factor * sector_bytes, -(-(ends[b] - starts[b]) // sector_bytes) * sector_bytes)
    return int(total)


def footprint_limit(totals: Counters, lines: dict, touched: dict[str, list], ranges, factor: float,
                    spec: MachineSpec) -> tuple[Counters, dict]:
    """Cap scaled DRAM traffic by the launch's extrapolated footprint when that fits in the L2.

    A sample sees little of the reuse between programs (neighbouring matmul tiles share rows of A),
    so its misses, scaled, overstate DRAM traffic; but when the data the launch touches fits in the
    L2, each sector comes from DRAM at most once. L2 misses shrink in proportion (they become hits).
    """
    caps = {"dram_read_bytes": footprint_bytes(touched.get("read", []), ranges, factor, spec.sector_bytes),
            "dram_write_bytes": footprint_bytes(touched.get("write", []), ranges, factor, spec.sector_bytes)}
    if sum(caps.values()) > spec.l2_bytes:
        return totals, lines
    ratios = {}
    for name, cap in caps.items():
        value = getattr(totals, name)
        ratios[name] = min(1.0, cap / value) if value else 1.0
    if all(r == 1.0 for r in ratios.values()):
        return totals, lines
    before = totals.dram_bytes

    def limited(c: Counters) -> Counters:
        changes = {name: int(round(getattr(c, name) * r)) for name, r in ratios.items()}
        kept = (changes["dram_read_bytes"] + changes["dram_write_bytes"]) / c.dram_bytes if c.dram_bytes else 1.0
        misses = int(round(c.l2_misses * kept))
        return dataclasses.replace(c, **changes, l2_misses=misses, l2_hits=c.l2_hits + c.l2_misses - misses)

    totals = limited(totals)
    lines = {key: limited(c) for key, c in lines.items()}
    assert totals.dram_bytes <= before
    return totals, lines
