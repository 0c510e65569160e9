"""LaunchCounters: turns the raw events of one launch into Counters, per source line and in total.

The runtime reports what each warp did (addresses of memory instructions, instruction counts,
tl.dot FLOPs, barriers) tagged with the source line; this class runs the memory models
(coalescing, banks, atomics) as events arrive and feeds the L2 model once at the end, in program
launch order, so L2 hits and DRAM bytes can be attributed to lines too. One object per launch.

The L2 sees the stream one program after another, which keeps the reuse between neighbouring programs
(matmul tiles) but not what `concurrency` programs running at once do to a program's own reuse: between
two touches of its data by one program, every other resident program streams about as much of its own,
so a reuse d bytes apart in the program's stream is concurrency x d bytes apart in the L2, and hits with
the measured probability of that distance (spec.l2_reuse_hit). The L1 of a unit, shared by its `per_unit`
programs, serves the same program's near reuses and the lines several programs read (a weight vector) to
the programs after the first on that unit, while it keeps them (consecutive programs in launch order run on
different units: an attention head's keys, read by neighbouring programs only, come from the L2 for each).
DRAM writes are charged per launch by its written footprint (jit.sampling.launch_dram), not here.

Sampled launches: an access batch with a `weight` stands for that many times its own events (a
thinned trace), and `extrapolate=(factor, buffers)` says the counters will be multiplied by `factor`
(a sample of the programs) and where the buffers lie. Later touches of a sector scale by the weight;
first touches in the launch (compulsory misses, mostly) scale by it too, but all together never past
the number of sectors each buffer has: a weight vector re-read by every row is fetched once, not once
per sampled row times the weight.

    rec = LaunchCounters(spec, programs=grid_size, num_warps=4, num_stages=3)
    rec.global_access(("k.py", 12), addresses, mask, access_bytes=4, program_ids=pids)
    ...
    totals, per_line = rec.finish()
"""

from __future__ import annotations

import math
from collections.abc import Mapping

import numpy as np

from simulator.atomics import atomic_contention
from simulator.banks import bank_conflicts
from simulator.coalescing import GlobalAccess, coalesce
from simulator.counters import Counters, phase_fields
from simulator.l2 import L2Cache
from simulator.rows import as_lanes, sorted_distinct
from simulator.specs import MachineSpec, current_spec

LineKey = tuple[str, int]

_DEVICE_L2: dict[MachineSpec, L2Cache] = {}


def device_l2(spec: MachineSpec | str | None = None) -> L2Cache:
    """The process-wide L2 of one machine: its contents carry over from launch to launch."""
    spec = current_spec(spec)
    if spec not in _DEVICE_L2:
        _DEVICE_L2[spec] = L2Cache(spec)
    return _DEVICE_L2[spec]


def reset_device_l2() -> None:
    """Forget every machine's L2 contents (a cold device)."""
    _DEVICE_L2.clear()


class LaunchCounters:
    """Accumulates the counters of one launch from per-warp events, keyed by source line."""

    def __init__(self, spec: MachineSpec | str | None = None, *, programs: int, num_warps: int,
                 num_stages: int = 0, registers_per_thread: int = 0, shared_bytes_per_program: int = 0,
                 l2: L2Cache | None | bool = True,
                 extrapolate: tuple[float, tuple[np.ndarray, np.ndarray]] | None = None,
                 concurrency: int = 1, per_unit: int = 1) -> None:
        self.spec = current_spec(spec)
        self.concurrency = max(1, int(concurrency))  # programs of the launch resident at once
        self.per_unit = max(1, int(per_unit))  # of them, on one unit (sharing its L1)
        self.l1_bytes = max(0, self.spec.local_cache_bytes - self.per_unit * shared_bytes_per_program)
        self.l2 = device_l2(self.spec) if l2 is True else (l2 or None)
        self.config = Counters(programs=programs, num_warps=num_warps, num_stages=num_stages,
                               registers_per_thread=registers_per_thread,
                               shared_bytes_per_program=shared_bytes_per_program)
        self.lines: dict[LineKey, Counters] = {}
        self._stream: list[tuple] = []  # per batch: sectors, programs, order keys, write, group
        self._groups: dict[tuple, int] = {}  # (line, weight, phase, DRAM efficiency) -> group id
        self._extrapolate = extrapolate
        self._atomic_lines: list[tuple] = []  # per batch of atomics: each instruction's lines, and the weight

    def global_access(self, line: LineKey, addresses: np.ndarray, mask: np.ndarray | None = None,
                      access_bytes: int = 4, *, store: bool = False, program_ids: np.ndarray | None = None,
                      weight: float = 1.0, order: np.ndarray | None = None, phase: str | None = None,
                      dram_efficiency: float = 1.0, merged_rows: int = 1, split: bool = False) -> GlobalAccess:
        """A batch of global load (or store) warp instructions. program_ids and order: one per row, the program
        and the position in that program's execution (the L2 sees programs in launch order, each in its own
        order); phase: the memory phase the loads belong to (Counters.phase_bytes); dram_efficiency: the DRAM
        bandwidth its misses get, relative to long runs (MachineSpec.run_efficiency); merged_rows: consecutive rows
        that store one lane's contiguous run, which complete its sectors (coalescing.coalesce); split: those rows
        reach the L2 one by one, each writing its pieces of the sectors (Counters.store_split_sectors)."""
        result = coalesce(addresses, mask, access_bytes, self.spec, keep_sectors=self.l2 is not None,
                          count_partial=store, partial_rows=merged_rows, count_split=store and split)
        counters = result.to_counters("store" if store else "load")
        if not store:  # the L1's data banks are shared memory's: a wavefront serves one word a bank
            counters = counters + Counters(
                load_wavefronts=bank_conflicts(addresses, mask, access_bytes, self.spec).total_wavefronts)
        if phase is not None:
            counters = counters + Counters(phase_bytes={phase: counters.load_bytes_moved})
        self._add(line, counters.scaled(weight))
        self._queue(line, result, store, program_ids, weight, order, phase, dram_efficiency)
        return result

    def shared_access(self, line: LineKey, addresses: np.ndarray, mask: np.ndarray | None = None,
                      access_bytes: int = 4) -> None:
        """A batch of shared-memory warp instructions (byte offsets into the program's shared memory)."""
        self._add(line, bank_conflicts(addresses, mask, access_bytes, self.spec).to_counters())

    def atomic_access(self, line: LineKey, addresses: np.ndarray, mask: np.ndarray | None = None,
                      access_bytes: int = 4, *, elements: int = 1, fenced: bool = True,
                      program_ids: np.ndarray | None = None, weight: float = 1.0,
                      order: np.ndarray | None = None) -> None:
        """A batch of atomic warp instructions; they read and write their sectors at the L2. elements: consecutive
        elements each lane updates (access_bytes in all); fenced: ordered by a memory barrier (any sem but relaxed)."""
        lines = coalesce(addresses, mask, access_bytes, self.spec, keep_sectors=True)
        contention = atomic_contention(addresses, mask, self.spec, elements)
        counters = contention.to_counters() + Counters(
            atomic_line_requests=lines.total_lines,
            atomic_fenced_requests=int(contention.requests.sum()) if fenced else 0,
            atomic_relaxed_ops=0 if fenced else int(contention.ops.sum()))
        self._add(line, counters.scaled(weight))
        self._atomic_lines.append((_distinct_lines(addresses, mask, self.spec), weight))
        if self.l2 is not None:
            self._queue(line, lines, True, program_ids, weight, order)

    def instructions(self, line: LineKey, counts: Mapping[str, int], simt_flops: int = 0) -> None:
        """Warp instructions by class (see counters.INSTRUCTION_CLASSES) and their lane FLOPs."""
        self._add(line, Counters(instructions=dict(counts), simt_flops=simt_flops))

    def dot(self, line: LineKey, dtype: str, flops: int) -> None:
        """Tensor-core FLOPs (2*M*N*K) of tl.dot with operands of `dtype`."""
        self._add(line, Counters(tensor_flops={dtype: flops}))

    def barriers(self, line: LineKey, count: int) -> None:
        """Barrier instructions executed, counted per warp."""
        self._add(line, Counters(barriers=count))

    def launch(self, counters: Counters) -> None:
        """Counters of the launch as a whole rather than of a source line (memory phases, work by grid row)."""
        self.config = self.config + counters

    def finish(self) -> tuple[Counters, dict[LineKey, Counters]]:
        """Run the L2 on the launch's sector stream and return (launch totals, per-line counters)."""
        if self.l2 is not None and self._stream:
            self._run_l2()
        if self._atomic_lines:
            factor = None if self._extrapolate is None else self._extrapolate[0]
            self.config.atomic_hot_line_requests = _hottest(self._atomic_lines, factor, self.config.programs)
        totals = sum(self.lines.values(), Counters()) + self.config
        return totals, dict(self.lines)

    # --- internals ---------------------------------------------------------------------------------

    def add(self, line: LineKey, counters: Counters) -> None:
        """Counters the caller derived itself (e.g. a layout change through shared memory)."""
        self._add(line, counters)

    def _add(self, line: LineKey, counters: Counters) -> None:
        self.lines[line] = self.lines.get(line, Counters()) + counters

    def _queue(self, line: LineKey, result: GlobalAccess, write: bool, program_ids: np.ndarray | None,
               weight: float, order: np.ndarray | None = None, phase: str | None = None,
               dram_efficiency: float = 1.0) -> None:
        if self.l2 is None or result.sector_ids.size == 0:
            return

        def per_sector(values: np.ndarray | None) -> np.ndarray:
            if values is None:
                return np.zeros(result.sector_ids.size, dtype=np.int64)
            return np.repeat(np.asarray(values, dtype=np.int64), result.sectors)

        group = self._groups.setdefault((line, weight, phase, dram_efficiency), len(self._groups))
        self._stream.append((result.sector_ids, per_sector(program_ids), per_sector(order), write, group))

    def _run_l2(self) -> None:
        """Order the stream by program (then by arrival), run it, take away the reuses concurrency breaks and what
        the L1 serves, attribute L1 hits, L2 hits and DRAM read bytes."""
        sectors = np.concatenate([s for s, *_ in self._stream])
        programs = np.concatenate([p for _, p, *_ in self._stream])
        when = np.concatenate([k for _, _, k, _, _ in self._stream])
        writes = np.concatenate([np.full(s.size, w) for s, _, _, w, _ in self._stream])
        groups = np.concatenate([np.full(s.size, g) for s, *_, g in self._stream])
        order = np.lexsort((when, programs))  # stable: within one key, arrival order
        sectors, writes, groups, programs = sectors[order], writes[order], groups[order], programs[order]
        first = np.zeros(sectors.size, dtype=bool)
        first[np.unique(sectors, return_index=True)[1]] = True
        split = 2 * groups + first  # group g: 2g later touches, 2g+1 first touches
        look = self.l2.access(sectors, writes, split, detail=True).detail
        keys = {v: k for k, v in self._groups.items()}
        weights = np.array([keys[g][1] for g in range(len(keys))])
        lost, l1 = self._reuse(look, programs[look.first], groups[look.first], weights, writes[look.first])
        l1[split[look.first] % 2 == 1] = 0.0  # a sector no one requested before is in no L1, whatever its line
        # a software-pipelined phase's loads are asynchronous copies to shared memory, which bypass the L1
        copied = np.array([_pipelined(keys[g][2]) for g in range(len(keys))], dtype=bool)
        l1[copied[groups[look.first]]] = 0.0
        moved = look.hits * lost
        read = look.read_bytes + moved / np.maximum(1, look.sectors) * look.atoms * self.spec.dram_atom_bytes
        # what the L1 serves never reaches the L2
        outcome = ((look.hits - moved) * (1 - l1), (look.misses + moved) * (1 - l1), read * (1 - l1),
                   look.sectors * l1)
        caps = self._first_touch_caps(sectors[first], groups[first], keys)
        splits, inverse = np.unique(split[look.first], return_inverse=True)
        sums = [np.bincount(inverse, weights=a, minlength=splits.size) for a in outcome]
        sector_bytes = self.spec.sector_bytes
        for key, h, m, r, served in zip(splits, *sums):
            group, is_first = divmod(int(key), 2)
            line, weight, phase, efficiency = keys[group]
            cap = caps.get(group, 1.0) if is_first else 1.0
            # the first touches the cap removes stand for accesses of sectors already in the L2: hits
            dram, l1_sectors = round(weight * cap * r), round(weight * served)
            self._add(line, Counters(l2_hits=round(weight * (h + m * (1 - cap))), l2_misses=round(weight * cap * m),
                                     dram_read_bytes=dram, dram_short_run_bytes=round(dram * (1 / efficiency - 1)),
                                     l1_hit_sectors=l1_sectors,
                                     phase_dram_bytes={phase: dram} if phase else {},
                                     phase_l1_bytes={phase: l1_sectors * sector_bytes} if phase else {}))
        self._stream.clear()

    def _reuse(self, look, programs: np.ndarray, groups: np.ndarray, weights: np.ndarray,
               writes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Per lookup, (the share of its L2 hits that other resident programs' traffic evicts first, the chance the
        L1 serves it). A reuse of a line the same program touched before lies as far as, in the L2, concurrency
        x the program's private bytes in between (every resident program streams as much of its own) plus the
        shared bytes in between (lines other programs touch too are one copy for all); in its unit's L1 the same
        with per_unit programs. A line several programs read comes from the L1 as _shared_hit says. In a thinned
        trace (groups whose weight is the stride) the bytes between two touches stand for weight times as many,
        except between two traced executions of the same op: the op's own untraced executions touched the line in
        between."""
        lost, l1 = np.zeros(look.line.size), np.zeros(look.line.size)
        if look.line.size < 2:
            return lost, l1
        by_line = np.lexsort((np.arange(look.line.size), look.line))
        again = look.line[by_line[1:]] == look.line[by_line[:-1]]
        ids, program_index = np.unique(programs, return_inverse=True)
        pairs = np.unique(look.line * ids.size + program_index)  # one per (line, program)
        lines, first, sharers = np.unique(pairs // ids.size, return_index=True, return_counts=True)
        line_of = np.searchsorted(lines, look.line)
        private = sharers[line_of] == 1
        before = np.concatenate(([0], np.cumsum(look.sectors)[:-1]))  # sectors streamed before each lookup
        before_private = np.concatenate(([0], np.cumsum(look.sectors * private)[:-1]))
        now, prev = by_line[1:][again], by_line[:-1][again]
        own = programs[now] == programs[prev]
        reads = ~writes[now]
        shared_read = now[~own & reads & ~private[now]]
        # a line's readers are taken as spread evenly over the launch-order range they span (a sample sees that too)
        low, high = pairs[first] % ids.size, pairs[first + sharers - 1] % ids.size  # indices into ids
        density = sharers / (high - low + 1)  # of the traced programs in the range, those reading
        at = line_of[shared_read]
        program_bytes = float(look.sectors @ weights[groups]) * self.spec.sector_bytes / ids.size
        l1[shared_read] = self._shared_hit(programs[shared_read] - ids[low[at]], density[at], program_bytes)
        now, prev, reads = now[own], prev[own], reads[own]
        scale = np.where(groups[now] == groups[prev], 1.0, weights[groups[now]]) * self.spec.sector_bytes
        private_between = (before_private[now] - before_private[prev]) * scale
        shared_between = (before[now] - before[prev]) * scale - private_between
        lost[now] = 1.0 - self.spec.l2_reuse_hit(self.concurrency * private_between + shared_between)
        l1_distance = self.per_unit * private_between + shared_between
        l1[now[reads]] = self.spec.reuse_hit(l1_distance[reads], self.l1_bytes)
        return lost, l1

    def _shared_hit(self, since_first: np.ndarray, density: np.ndarray, program_bytes: float) -> np.ndarray:
        """Per read of a line other programs read too, the chance its unit's L1 still holds it, given how far in
        launch order the reader comes after the line's first reader and the share of programs in between that read
        it. Consecutive programs run on different units; the programs before i on its unit are i - units,
        i - 2 units, ..., the one k back having read its data k programs' traffic (`program_bytes`) before i reads.
        The nearest earlier reader on the unit is k back with the chance of k - 1 non-readers and then a reader, and
        serves i if the L1 kept the line that long."""
        before = since_first // self.spec.units
        far = self.spec.l2_reuse_far * self.l1_bytes
        hit, missed = np.zeros(before.size), np.ones(before.size)  # missed: no reader in the k - 1 programs before
        for k in range(1, int(min(before.max(initial=0), far // max(program_bytes, 1.0) + 1)) + 1):
            kept = self.spec.reuse_hit(k * program_bytes, self.l1_bytes)
            hit += np.where(before >= k, missed * density * kept, 0.0)
            missed *= 1.0 - density
            if missed.max() < 1e-4:  # every read has found its nearest earlier reader
                break
        return hit

    def _first_touch_caps(self, sectors: np.ndarray, groups: np.ndarray, keys: dict) -> dict[int, float]:
        """Per group, the factor (<= 1) that keeps each buffer's extrapolated first touches within its sectors."""
        if self._extrapolate is None or not sectors.size:
            return {}
        factor, (starts, ends) = self._extrapolate
        if not len(starts):
            return {}
        sector = self.spec.sector_bytes
        buffer = np.searchsorted(np.asarray(starts) // sector, sectors, side="right") - 1
        inside = (buffer >= 0) & (sectors * sector < np.asarray(ends)[np.maximum(buffer, 0)])
        weights = np.array([keys[g][1] for g in range(len(keys))])
        demand = np.bincount(buffer[inside], weights=weights[groups[inside]] * factor, minlength=len(starts))
        extent = -(-(np.asarray(ends) - np.asarray(starts)) // sector)
        cap = np.minimum(1.0, extent / np.maximum(demand, 1e-300))
        per_sector = np.where(inside, cap[np.maximum(buffer, 0)], 1.0)
        totals = np.bincount(groups, weights=per_sector, minlength=len(keys))
        counts = np.bincount(groups, minlength=len(keys))
        return {g: totals[g] / counts[g] for g in range(len(keys)) if counts[g]}


def _pipelined(phase: str | None) -> bool:
    """Whether a memory phase (Counters.phase_rounds) keeps iterations in flight."""
    return phase is not None and phase_fields(phase)[1] > 0


def _distinct_lines(addresses: np.ndarray, mask: np.ndarray | None, spec: MachineSpec) -> np.ndarray:
    """The L2 lines each atomic warp instruction requests, once per instruction (a lane's vector stays in its line)."""
    addr, active = as_lanes(addresses, mask)
    ordered, fresh, _ = sorted_distinct(addr >> (spec.l2_line_bytes.bit_length() - 1), active)
    return ordered[fresh]


def _hottest(batches: list[tuple[np.ndarray, float]], factor: float | None = None, programs: int = 0) -> int:
    """Most line requests to one line over weighted batches of instructions' lines. For a sample of the programs
    that jit.sampling.scale multiplies by `factor` (a line every sampled program hits), the part of the sample's
    maximum that chance explains (its lead over the mean line, up to sqrt(2 ln lines) standard deviations) is
    scaled by sqrt(factor) instead: the hottest of many like lines is not `factor` times as far ahead in the
    whole launch."""
    lines = np.concatenate([ids for ids, _ in batches])
    if not lines.size:
        return 0
    weights = np.concatenate([np.full(ids.size, weight) for ids, weight in batches])
    _, which = np.unique(lines, return_inverse=True)
    counts = np.bincount(which.ravel(), weights=weights)
    top = float(counts.max())
    if factor and factor > 1 and top >= programs > 0:
        lead = min(top - float(counts.mean()), math.sqrt(2 * math.log(max(2, counts.size)) * top))
        top = max(programs, top - lead * (1 - 1 / math.sqrt(factor)))  # still a line every program hits
    return int(round(top))
