"""The L2 model: an LRU, sectored, set-associative cache fed with sector accesses in launch order.

Geometry comes from the spec: `l2_bytes`, `l2_line_bytes` (128: one tag per line),
`sector_bytes` (32: valid and dirty bits per sector) and `l2_ways` (16, documented as assumed).
Set index: a multiplicative hash of the line address, modulo the number of sets, because GPUs
hash addresses over L2 slices and a plain modulo would make power-of-two strides pathological.

Policies:
- Replacement: least recently used line of the set; an access touches its line's recency.
- Reads: a sector is a hit if its line is resident and the sector is valid. A read miss fetches
  the aligned DRAM atom around the sector (`dram_atom_bytes`: 64 B on H200, so the neighbour
  sector becomes valid too), charged as DRAM read bytes.
- Writes: write-back with write-allocate and no fetch (GPU L2s keep byte masks, so a store never
  reads DRAM): the sector becomes valid and dirty. Each sector that turns dirty is charged
  once as DRAM write bytes, at the time it turns dirty (it will leave the cache by eviction or
  by the end-of-launch flush exactly once); `end_launch()` cleans all dirty bits so the next
  launch pays for its own writes. Hits and misses are counted for writes too, as Nsight does.

Speed: sets are independent, so the stream is processed in rounds, round k holding the k-th
access of every set; each round is a handful of numpy operations over all sets at once, with a
direct line -> way index so a lookup is one gather. Consecutive sectors of one line from the same
request are merged into one lookup with a sector mask first. Cost is O(accesses) numpy work
plus a per-round overhead; rounds = accesses of the busiest set.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from simulator.specs import MachineSpec, current_spec

_HASH = np.uint64(0x9E3779B97F4A7C15)


@dataclass
class L2Stats:
    """What a batch of sector accesses did. `by_group` maps group id -> (hits, misses, dram read bytes,
    dram write bytes) when the caller passed groups (e.g. source-line ids)."""

    hits: int = 0
    misses: int = 0
    lookups: int = 0
    dram_read_bytes: int = 0
    dram_write_bytes: int = 0
    by_group: dict[int, tuple[int, int, int, int]] = field(default_factory=dict)

    @property
    def hit_rate(self) -> float:
        total = self.hits + self.misses
        return self.hits / total if total else 0.0

    @property
    def dram_bytes(self) -> int:
        return self.dram_read_bytes + self.dram_write_bytes


class L2Cache:
    """Stateful L2: feed `access()` batches in launch order; contents persist across launches."""

    def __init__(self, spec: MachineSpec | str | None = None, *, l2_bytes: int | None = None,
                 ways: int | None = None) -> None:
        spec = current_spec(spec)
        self.sector_bytes = spec.sector_bytes
        self.line_bytes = spec.l2_line_bytes
        self.ways = ways or spec.l2_ways
        self.size_bytes = l2_bytes or spec.l2_bytes
        self.sets = max(1, self.size_bytes // (self.line_bytes * self.ways))
        self.sectors_per_line = spec.sectors_per_line
        self.atom_sectors = spec.dram_atom_bytes // spec.sector_bytes
        self._tables()
        self.reset()

    def reset(self) -> None:
        """Empty the cache (cold start)."""
        self._owner = np.full((self.sets, self.ways), -1, dtype=np.int64)  # compact line id per way
        self._stamp = np.full((self.sets, self.ways), -1, dtype=np.int64)  # last use (round clock)
        self._valid = np.zeros((self.sets, self.ways), dtype=np.int64)  # sector bit masks
        self._dirty = np.zeros((self.sets, self.ways), dtype=np.int64)
        self._clock = 0
        self._known_lines = np.empty(0, dtype=np.int64)  # sorted line addresses seen so far
        self._known_ids = np.empty(0, dtype=np.int64)  # their compact ids
        self._way_of = np.empty(0, dtype=np.int64)  # compact id -> way, -1 if not resident

    def end_launch(self) -> None:
        """Write back (clean) all dirty sectors; their bytes were charged when they turned dirty."""
        self._dirty[:] = 0

    def access(self, sectors: np.ndarray, is_write: bool | np.ndarray = False,
               groups: np.ndarray | None = None) -> L2Stats:
        """Run sector accesses (sector index = byte address // sector_bytes) through the cache in order.

        is_write: one flag for all, or one per access. groups: optional int per access (e.g. a
        source-line id) to get per-group hits, misses and DRAM bytes back in `by_group`.
        """
        sectors = np.asarray(sectors, dtype=np.int64).ravel()
        writes = np.broadcast_to(np.asarray(is_write, dtype=bool), sectors.shape)
        if groups is not None:
            groups = np.asarray(groups, dtype=np.int64).ravel()
        if sectors.size == 0:
            return L2Stats()
        lines, masks, writes, groups = self._merge(sectors, writes, groups)
        cid, set_of = self._compact(lines)
        order, bounds = _rounds(set_of)
        hits, misses, read_bytes, write_bytes = self._run(cid[order], set_of[order], masks[order],
                                                          writes[order], bounds)
        stats = L2Stats(hits=int(hits.sum()), misses=int(misses.sum()), lookups=int(lines.size),
                        dram_read_bytes=int(read_bytes.sum()), dram_write_bytes=int(write_bytes.sum()))
        if groups is not None:
            stats.by_group = _by_group(groups[order], hits, misses, read_bytes, write_bytes)
        return stats

    # --- internals ---------------------------------------------------------------------------------

    def _tables(self) -> None:
        """Lookup tables over sector masks: popcount, and the mask widened to whole DRAM atoms."""
        masks = np.arange(1 << self.sectors_per_line, dtype=np.int64)
        bits = (masks[:, None] >> np.arange(self.sectors_per_line)) & 1
        self._popcount = bits.sum(axis=1)
        atoms = bits.reshape(len(masks), -1, self.atom_sectors).any(axis=2)  # [mask, atom]
        atom_bits = ((1 << self.atom_sectors) - 1) << (np.arange(atoms.shape[1]) * self.atom_sectors)
        self._atom_fill = (atoms * atom_bits).sum(axis=1)
        self._atom_count = atoms.sum(axis=1)

    def _merge(self, sectors: np.ndarray, writes: np.ndarray, groups: np.ndarray | None):
        """Merge runs of consecutive accesses to one line (same kind, same group) into one lookup."""
        spl_shift = self.sectors_per_line.bit_length() - 1
        lines = sectors >> spl_shift
        bit = np.left_shift(1, sectors & (self.sectors_per_line - 1))
        start = np.empty(sectors.size, dtype=bool)
        start[0] = True
        np.not_equal(lines[1:], lines[:-1], out=start[1:])
        start[1:] |= writes[1:] != writes[:-1]
        if groups is not None:
            start[1:] |= groups[1:] != groups[:-1]
        first = np.flatnonzero(start)
        masks = np.bitwise_or.reduceat(bit, first)
        return lines[first], masks, writes[first], (None if groups is None else groups[first])

    def _compact(self, lines: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Dense ids for line addresses (stable across batches) and each line's set."""
        unique, inverse = np.unique(lines, return_inverse=True)
        ids = np.empty(unique.size, dtype=np.int64)
        known = np.zeros(unique.size, dtype=bool)
        if self._known_lines.size:
            pos = np.minimum(np.searchsorted(self._known_lines, unique), self._known_lines.size - 1)
            known = self._known_lines[pos] == unique
            ids[known] = self._known_ids[pos[known]]
        fresh = ~known
        ids[fresh] = self._way_of.size + np.arange(int(fresh.sum()))
        if fresh.any():
            self._way_of = np.concatenate([self._way_of, np.full(int(fresh.sum()), -1, dtype=np.int64)])
            merged = np.concatenate([self._known_lines, unique[fresh]])
            merged_ids = np.concatenate([self._known_ids, ids[fresh]])
            keep = np.argsort(merged, kind="stable")
            self._known_lines, self._known_ids = merged[keep], merged_ids[keep]
        hashed = (unique.astype(np.uint64) * _HASH) >> np.uint64(32)
        set_of = (hashed % np.uint64(self.sets)).astype(np.int64)
        return ids[inverse], set_of[inverse]

    def _run(self, cid, set_of, masks, writes, bounds):
        """The round loop: each round touches each set at most once, so scatters never collide."""
        owner, stamp, valid, dirty, way_of = self._owner, self._stamp, self._valid, self._dirty, self._way_of
        pop, fill, atoms = self._popcount, self._atom_fill, self._atom_count
        n = cid.size
        hits = np.empty(n, dtype=np.int64)
        misses = np.empty(n, dtype=np.int64)
        read_bytes = np.zeros(n, dtype=np.int64)
        write_bytes = np.zeros(n, dtype=np.int64)
        atom_bytes = self.atom_sectors * self.sector_bytes
        for r in range(len(bounds) - 1):
            sl = slice(bounds[r], bounds[r + 1])
            c, s, m, w = cid[sl], set_of[sl], masks[sl], writes[sl]
            way = way_of[c]
            absent = way < 0
            if absent.any():
                way = self._insert(c[absent], s[absent], way, absent)
            v = valid[s, way]
            missing = m & ~v
            hits[sl] = pop[m & v]
            misses[sl] = pop[missing]
            reads = ~w
            read_missing = np.where(reads, missing, 0)
            read_bytes[sl] = atoms[read_missing] * atom_bytes
            valid[s, way] = v | np.where(reads, fill[read_missing], m)
            if w.any():
                d = dirty[s, way]
                newly_dirty = np.where(w, m & ~d, 0)
                write_bytes[sl] = pop[newly_dirty] * self.sector_bytes
                dirty[s, way] = d | newly_dirty
            stamp[s, way] = self._clock + r
        self._clock += len(bounds) - 1
        return hits, misses, read_bytes, write_bytes

    def _insert(self, lines: np.ndarray, sets: np.ndarray, way: np.ndarray, absent: np.ndarray) -> np.ndarray:
        """Place absent lines in the LRU way of their sets, evicting the previous owners."""
        victim = self._stamp[sets].argmin(axis=1)
        previous = self._owner[sets, victim]
        evicted = previous[previous >= 0]
        self._way_of[evicted] = -1
        self._owner[sets, victim] = lines
        self._valid[sets, victim] = 0
        self._dirty[sets, victim] = 0  # dirty bytes were charged when the sectors turned dirty
        self._way_of[lines] = victim
        way = way.copy()
        way[absent] = victim
        return way


def _rounds(set_of: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Order accesses round-major: round k holds the k-th access (in stream order) of every set."""
    by_set = np.argsort(set_of, kind="stable")
    sorted_sets = set_of[by_set]
    starts = np.flatnonzero(np.r_[True, sorted_sets[1:] != sorted_sets[:-1]])
    sizes = np.diff(np.r_[starts, sorted_sets.size])
    rank = np.empty(set_of.size, dtype=np.int64)
    rank[by_set] = np.arange(set_of.size) - np.repeat(starts, sizes)
    order = np.argsort(rank, kind="stable")
    bounds = np.r_[0, np.cumsum(np.bincount(rank))]
    return order, bounds


def _by_group(groups, hits, misses, read_bytes, write_bytes) -> dict[int, tuple[int, int, int, int]]:
    keys, inverse = np.unique(groups, return_inverse=True)
    sums = [np.bincount(inverse, weights=a, minlength=keys.size).astype(np.int64)
            for a in (hits, misses, read_bytes, write_bytes)]
    return {int(k): tuple(int(col[i]) for col in sums) for i, k in enumerate(keys)}
