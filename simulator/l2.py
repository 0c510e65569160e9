"""The L2 model: an LRU, sectored, set-associative cache fed with sector accesses in launch order.

Geometry comes from the spec: the capacity reuse sees (`l2_reuse_bytes`, measured: less than `l2_bytes`),
`l2_line_bytes` (128: one tag per line), `sector_bytes` (32: a valid bit per sector) and `l2_ways`
(16, documented as assumed).
Set index: a multiplicative hash of the line address, modulo the number of sets, because GPUs
hash addresses over L2 slices and a plain modulo would make power-of-two strides pathological.

Policies:
- Replacement: least recently used line of the set; an access touches its line's recency.
- Reads: a sector is a hit if its line is resident and the sector is valid. A read miss fetches
  the aligned DRAM atom around the sector (`dram_atom_bytes`: 64 B on H200, so the neighbour
  sector becomes valid too), charged as DRAM read bytes.
- Writes: write-allocate without a fetch (GPU L2s keep byte masks, so a store never reads DRAM):
  the sector becomes valid. The DRAM bytes a launch writes while it runs are not a property of
  single accesses: the H200 holds back about `l2_dirty_bytes` of written data and writes the rest
  during the launch, so the caller charges max(0, written footprint - l2_dirty_bytes) per launch.
  Hits and misses are counted for writes too, as Nsight does.

Speed: sets are independent, so the stream is processed in rounds, round k holding the k-th
access of every set; each round is a handful of numpy operations over all sets at once (a lookup
compares the line with the tags of its set's row). A run of strictly increasing sectors of one
line (a request's sectors, which the coalescer emits sorted) is first merged into one lookup with
a sector mask: all of them see the line as it was before the run, as within one request. Cost is
O(accesses) numpy work plus a per-round overhead; rounds = lookups of the busiest set.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from simulator.specs import MachineSpec, current_spec

_HASH = np.uint64(0x9E3779B97F4A7C15)


@dataclass
class L2Stats:
    """What a batch of sector accesses did. `by_group` maps group id -> (hits, misses, dram read bytes)
    when the caller passed groups (e.g. source-line ids). `lookups` holds, with detail=True, one row per
    lookup (a run of one line's sectors merged) in stream order: see `Lookups`."""

    hits: int = 0
    misses: int = 0
    lookups: int = 0
    dram_read_bytes: int = 0
    by_group: dict[int, tuple[int, int, int]] = field(default_factory=dict)
    detail: Lookups | None = None

    @property
    def hit_rate(self) -> float:
        total = self.hits + self.misses
        return self.hits / total if total else 0.0


@dataclass
class Lookups:
    """Per merged lookup, in stream order: its first access's index in the stream, line, sector mask, hits,
    misses, DRAM read bytes, the sectors and the DRAM atoms its mask covers."""

    first: np.ndarray
    line: np.ndarray
    mask: np.ndarray
    hits: np.ndarray
    misses: np.ndarray
    read_bytes: np.ndarray
    sectors: np.ndarray
    atoms: np.ndarray


class L2Cache:
    """Stateful L2: feed `access()` batches in launch order; contents persist across launches."""

    def __init__(self, spec: MachineSpec | str | None = None, *, l2_bytes: int | None = None,
                 ways: int | None = None) -> None:
        spec = current_spec(spec)
        self.sector_bytes = spec.sector_bytes
        self.line_bytes = spec.l2_line_bytes
        self.ways = ways or spec.l2_ways
        self.size_bytes = l2_bytes or spec.l2_reuse_bytes
        self.sets = max(1, self.size_bytes // (self.line_bytes * self.ways))
        self.sectors_per_line = spec.sectors_per_line
        self.atom_sectors = spec.dram_atom_bytes // spec.sector_bytes
        self._tables()
        self.reset()

    def reset(self) -> None:
        """Empty the cache (cold start)."""
        self._owner = np.full((self.sets, self.ways), -1, dtype=np.int64)  # line address per way
        self._stamp = np.full((self.sets, self.ways), -1, dtype=np.int64)  # last use (round clock)
        self._valid = np.zeros((self.sets, self.ways), dtype=np.uint16)  # sector bit masks
        self._clock = 0

    def access(self, sectors: np.ndarray, is_write: bool | np.ndarray = False,
               groups: np.ndarray | None = None, detail: bool = False) -> L2Stats:
        """Run sector accesses (sector index = byte address // sector_bytes) through the cache in order.

        is_write: one flag for all, or one per access. groups: optional int per access (e.g. a
        source-line id) to get per-group hits, misses and DRAM bytes back in `by_group`. detail: also
        return every lookup's outcome (`L2Stats.detail`).
        """
        sectors = np.asarray(sectors, dtype=np.int64).ravel()
        writes = np.broadcast_to(np.asarray(is_write, dtype=bool), sectors.shape)
        if groups is not None:
            groups = np.asarray(groups, dtype=np.int64).ravel()
        if sectors.size == 0:
            return L2Stats()
        first, lines, masks, writes, groups = self._merge(sectors, writes, groups)
        set_of = self._set_of(lines)
        order, bounds = _rounds(set_of, self.sets)
        hits, misses, read_bytes = self._run(lines[order], set_of[order], masks[order], writes[order], bounds)
        stats = L2Stats(hits=int(hits.sum()), misses=int(misses.sum()), lookups=int(lines.size),
                        dram_read_bytes=int(read_bytes.sum()))
        if groups is not None:
            stats.by_group = _by_group(groups[order], hits, misses, read_bytes)
        if detail:
            back = np.empty_like(order)
            back[order] = np.arange(order.size)
            stats.detail = Lookups(first, lines, masks, hits[back], misses[back], read_bytes[back],
                                   self._popcount[masks], self._atom_count[masks])
        return stats

    # --- internals ---------------------------------------------------------------------------------

    def _tables(self) -> None:
        """Lookup tables over sector masks: popcount, and the mask widened to whole DRAM atoms."""
        masks = np.arange(1 << self.sectors_per_line, dtype=np.int64)
        bits = (masks[:, None] >> np.arange(self.sectors_per_line)) & 1
        self._popcount = bits.sum(axis=1)
        atoms = bits.reshape(len(masks), -1, self.atom_sectors).any(axis=2)  # [mask, atom]
        atom_bits = ((1 << self.atom_sectors) - 1) << (np.arange(atoms.shape[1]) * self.atom_sectors)
        self._atom_fill = (atoms * atom_bits).sum(axis=1).astype(np.uint16)
        self._atom_count = atoms.sum(axis=1)

    def _merge(self, sectors: np.ndarray, writes: np.ndarray, groups: np.ndarray | None):
        """Merge runs of strictly increasing sectors of one line (same kind, same group) into one lookup."""
        spl_shift = self.sectors_per_line.bit_length() - 1
        lines = sectors >> spl_shift
        bit = np.left_shift(1, sectors & (self.sectors_per_line - 1))
        start = np.empty(sectors.size, dtype=bool)
        start[0] = True
        np.not_equal(lines[1:], lines[:-1], out=start[1:])
        start[1:] |= sectors[1:] <= sectors[:-1]  # a repeated sector is an access of its own
        start[1:] |= writes[1:] != writes[:-1]
        if groups is not None:
            start[1:] |= groups[1:] != groups[:-1]
        first = np.flatnonzero(start)
        masks = np.bitwise_or.reduceat(bit, first).astype(np.uint16)
        return first, lines[first], masks, writes[first], (None if groups is None else groups[first])

    def _set_of(self, lines: np.ndarray) -> np.ndarray:
        """Hashed set index of each line."""
        hashed = (lines.astype(np.uint64) * _HASH) >> np.uint64(32)
        return (hashed % np.uint64(self.sets)).astype(np.int64)

    def _run(self, lines, set_of, masks, writes, bounds):
        """The round loop: each round touches each set at most once, so scatters never collide."""
        ways = self.ways
        owner, stamp = self._owner, self._stamp
        valid = self._valid.ravel()  # a view: flat index = set * ways + way
        pop, fill, atoms = self._popcount, self._atom_fill, self._atom_count
        n = lines.size
        hits = np.empty(n, dtype=np.int64)
        misses = np.empty(n, dtype=np.int64)
        read_bytes = np.zeros(n, dtype=np.int64)
        atom_bytes = self.atom_sectors * self.sector_bytes
        any_writes = bool(writes.any())
        for r in range(len(bounds) - 1):
            sl = slice(bounds[r], bounds[r + 1])
            line, s, m, w = lines[sl], set_of[sl], masks[sl], writes[sl]
            match = owner[s] == line[:, None]
            way = match.argmax(axis=1)
            absent = ~match.any(axis=1)
            if absent.any():
                way[absent] = self._insert(line[absent], s[absent])
            slot = s * ways + way
            v = valid[slot]
            missing = m & ~v
            hits[sl] = pop[m & v]
            misses[sl] = pop[missing]
            if not any_writes:
                read_bytes[sl] = atoms[missing] * atom_bytes
                valid[slot] = v | fill[missing]
            else:
                read_missing = np.where(w, 0, missing)
                read_bytes[sl] = atoms[read_missing] * atom_bytes
                valid[slot] = v | np.where(w, m, fill[read_missing])
            stamp.ravel()[slot] = self._clock + r
        self._clock += len(bounds) - 1
        return hits, misses, read_bytes

    def _insert(self, lines: np.ndarray, sets: np.ndarray) -> np.ndarray:
        """Place absent lines in the LRU way of their sets (evicting the owner); return the ways."""
        victim = self._stamp[sets].argmin(axis=1)
        slot = sets * self.ways + victim
        self._owner.ravel()[slot] = lines
        self._valid.ravel()[slot] = 0
        return victim


def _rounds(set_of: np.ndarray, sets: int) -> tuple[np.ndarray, np.ndarray]:
    """Order accesses round-major: round k holds the k-th access (in stream order) of every set.

    Within a round the accesses are sorted by set, so the gathers and scatters of the round
    sweep the state arrays in address order (several times faster than random order).
    """
    n = set_of.size
    by_set = _stable_order(set_of)
    sorted_sets = set_of[by_set]
    first_of_set = np.empty(n, dtype=bool)  # (work in the accesses, not the sets: most launches touch few)
    first_of_set[0] = True
    np.not_equal(sorted_sets[1:], sorted_sets[:-1], out=first_of_set[1:])
    position = np.arange(n)
    rank = np.empty(n, dtype=np.int64)
    rank[by_set] = position - np.maximum.accumulate(np.where(first_of_set, position, 0))
    set_bits = max(1, int(sets - 1).bit_length())
    order = _stable_order((rank << set_bits) | set_of)  # unique per access: round, then set
    bounds = np.concatenate(([0], np.cumsum(np.bincount(rank[order]))))
    return order, bounds


def _stable_order(keys: np.ndarray) -> np.ndarray:
    """argsort(keys, kind="stable") for non-negative keys, via one sort of (key << bits | index)."""
    n = keys.size
    bits = max(1, int(n - 1).bit_length())
    if int(keys.max(initial=0)).bit_length() + bits > 62:
        return np.argsort(keys, kind="stable")
    packed = (keys << bits) | np.arange(n, dtype=np.int64)
    packed.sort()
    return packed & ((1 << bits) - 1)


def _by_group(groups, hits, misses, read_bytes) -> dict[int, tuple[int, int, int]]:
    keys, inverse = np.unique(groups, return_inverse=True)
    sums = [np.bincount(inverse, weights=a, minlength=keys.size).astype(np.int64)
            for a in (hits, misses, read_bytes)]
    return {int(k): tuple(int(col[i]) for col in sums) for i, k in enumerate(keys)}
