"""Global-memory coalescing: what the memory system moves for each warp memory instruction.

Rule (research/simulator.md §3.1, CUDA Best Practices §9.2.1): the active lanes of one request
are served by the distinct aligned sectors (32 B) they touch; partially used sectors move whole;
the order of lanes within sectors is free; masked lanes touch nothing; the L2 looks up one tag
per distinct line (128 B). A sector that a store writes only part of is counted apart, the L2 merging
it into its copy at a lower rate than it takes whole sectors. Consecutive instructions that store one
lane's contiguous run (a thread's four scalar stores of an unaligned 16-byte run) merge on the SM
first: Nsight counts such stores reaching the L2 as a quarter to three quarters of their sectors, and
they run no slower, while an interleaved rotary's stride-2 stores reach it sector for sector. A warp
wider than `spec.transaction_lanes` (128-lane MUSA warps) is split into groups of that many lanes,
each a request of its own (an assumption, flagged in the spec's sources).

The compiler passes, per source-level memory op, the byte address of every lane of every warp
instruction it executed; everything here is vectorised over those rows.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from simulator.counters import Counters
from simulator.rows import SENTINEL, active_counts, as_lanes, changes, sorted_distinct, spans, split_groups
from simulator.specs import MachineSpec, current_spec


@dataclass(frozen=True)
class GlobalAccess:
    """Exact counts of a batch of warp memory instructions; arrays are per instruction.

    Aggregate per source line with np.bincount(line_of_instruction, weights=...).
    `sector_ids` (address // sector_bytes of each distinct sector, request by request, in
    instruction order) is the stream to feed the L2 model; empty unless keep_sectors=True.
    """

    requests: np.ndarray
    sectors: np.ndarray
    lines: np.ndarray
    active_lanes: np.ndarray
    masked_lanes: np.ndarray
    access_bytes: int
    sector_bytes: int
    sector_ids: np.ndarray
    partial_sectors: np.ndarray | None = None  # per partial_rows instructions, with count_partial
    split_sectors: np.ndarray | None = None  # per partial_rows instructions, with count_split

    @property
    def total_requests(self) -> int:
        return int(self.requests.sum())

    @property
    def total_sectors(self) -> int:
        return int(self.sectors.sum())

    @property
    def total_lines(self) -> int:
        return int(self.lines.sum())

    @property
    def bytes_requested(self) -> int:
        return int(self.active_lanes.sum()) * self.access_bytes

    @property
    def bytes_moved(self) -> int:
        return self.total_sectors * self.sector_bytes

    @property
    def total_masked_lanes(self) -> int:
        return int(self.masked_lanes.sum())

    @property
    def efficiency(self) -> float:
        """Bytes requested / bytes moved (1.0 when every moved byte was asked for)."""
        moved = self.bytes_moved
        return self.bytes_requested / moved if moved else 1.0

    def to_counters(self, kind: str = "load") -> Counters:
        """These counts as a Counters record of global loads (kind="load") or stores."""
        if kind not in ("load", "store"):
            raise ValueError(f"kind must be 'load' or 'store', got {kind!r}")
        return Counters(**{
            f"{kind}_requests": self.total_requests,
            f"{kind}_sectors": self.total_sectors,
            f"{kind}_lines": self.total_lines,
            f"{kind}_bytes_requested": self.bytes_requested,
            f"{kind}_bytes_moved": self.bytes_moved,
            "masked_lanes": self.total_masked_lanes,
            **({"store_partial_sectors": int(self.partial_sectors.sum())}
               if kind == "store" and self.partial_sectors is not None else {}),
            **({"store_split_sectors": int(self.split_sectors.sum())}
               if kind == "store" and self.split_sectors is not None else {}),
        })


def coalesce(
    addresses: np.ndarray,
    mask: np.ndarray | None = None,
    access_bytes: int = 4,
    spec: MachineSpec | str | None = None,
    *,
    keep_sectors: bool = False,
    count_partial: bool = False,
    partial_rows: int = 1,
    count_split: bool = False,
) -> GlobalAccess:
    """Requests, sectors, lines and lanes of warp memory instructions.

    addresses: int64 [instructions, warp_size] byte addresses (one row = one warp instruction);
    mask: bool of the same shape (or broadcastable), True = lane active; access_bytes: bytes
    each lane moves (element size x vector width). Geometry (sector, line, transaction lanes)
    comes from `spec` (default: the current machine); count_partial: also count the sectors that each
    partial_rows consecutive instructions (which merge; the number must divide the rows) write only in part;
    count_split (with count_partial): also the pieces of sectors that single instructions of those runs write in
    part and the run completes (each one a write of its own where the hardware does not merge the run's instructions).
    """
    spec = current_spec(spec)
    if access_bytes <= 0:
        raise ValueError(f"access_bytes must be positive, got {access_bytes}")
    addr, active = as_lanes(addresses, mask)
    n, width = addr.shape
    group_lanes = max(1, min(spec.transaction_lanes, width))
    groups = -(-width // group_lanes)

    rows, rows_active = split_groups(addr, active, group_lanes)
    shift = spec.sector_bytes.bit_length() - 1
    first = rows >> shift
    per_lane = (access_bytes + spec.sector_bytes - 2) // spec.sector_bytes + 1  # most sectors per lane
    last = (rows + (access_bytes - 1)) >> shift if per_lane > 1 else first
    if per_lane > 1 and np.array_equal(first, last):
        per_lane = 1  # every lane fits in one sector: the common, aligned case
    values, valid = spans(first, last, rows_active, per_lane)
    ordered, fresh, valid_sorted = sorted_distinct(values, valid)
    line_shift = (spec.l2_line_bytes // spec.sector_bytes).bit_length() - 1
    line_fresh = changes(ordered >> line_shift, valid_sorted)

    sectors = fresh.sum(axis=1).reshape(n, groups).sum(axis=1)
    lines = line_fresh.sum(axis=1).reshape(n, groups).sum(axis=1)
    if rows_active is None:
        requests = np.full(n, groups, dtype=np.int64)
    else:
        requests = rows_active.any(axis=1).reshape(n, groups).sum(axis=1)
    active_lanes = active_counts(addr.shape, active)
    sector_ids = ordered[fresh] if keep_sectors else np.empty(0, dtype=np.int64)
    partial = split = None
    if count_partial:
        if n % partial_rows:
            raise ValueError(f"partial_rows {partial_rows} does not divide {n} instructions")
        def merged(a: np.ndarray) -> np.ndarray:  # each lane's instructions side by side
            return a.reshape(n // partial_rows, partial_rows, width).transpose(0, 2, 1).reshape(n // partial_rows, -1)

        partial = _partial_sectors(merged(addr), None if active is None else merged(active), access_bytes,
                                   spec.sector_bytes, per_lane)
        if count_split and partial_rows > 1:
            pieces = _partial_sectors(addr, active, access_bytes, spec.sector_bytes, per_lane)
            split = np.maximum(0, pieces.reshape(-1, partial_rows).sum(axis=1) - partial)
    return GlobalAccess(
        requests=requests, sectors=sectors, lines=lines, active_lanes=active_lanes,
        masked_lanes=width - active_lanes, access_bytes=access_bytes, sector_bytes=spec.sector_bytes,
        sector_ids=sector_ids, partial_sectors=partial, split_sectors=split,
    )


def _partial_sectors(addr: np.ndarray, active: np.ndarray | None, access_bytes: int, sector_bytes: int,
                     per_lane: int) -> np.ndarray:
    """Per row, the sectors its active lanes write fewer than sector_bytes of. Bytes several lanes write
    count once; a lane that straddles sectors gives each the bytes that fall in it."""
    n = addr.shape[0]
    # the common row, every lane active and one contiguous run in lane order, can only cut the sectors at its ends
    run = (np.diff(addr, axis=1) == access_bytes).all(axis=1)
    if active is not None:
        run &= active.all(axis=1)
    first, end = addr[run, 0], addr[run, -1] + access_bytes
    ends = (first % sector_bytes != 0).astype(np.int64) + (end % sector_bytes != 0)
    within = first // sector_bytes == (end - 1) // sector_bytes  # a run inside one sector
    found = np.zeros(n, dtype=np.int64)
    found[run] = np.where(within, (end - first < sector_bytes).astype(np.int64), ends)
    if not run.all():
        rest = ~run
        found[rest] = _partial_sectors_sorted(addr[rest], None if active is None else active[rest], access_bytes,
                                              sector_bytes, per_lane)
    return found


def _partial_sectors_sorted(addr: np.ndarray, active: np.ndarray | None, access_bytes: int, sector_bytes: int,
                            per_lane: int) -> np.ndarray:
    """_partial_sectors of any rows: lanes sorted by address, each sector's bytes summed."""
    n, lanes = addr.shape
    order = np.argsort(np.where(active, addr, SENTINEL) if active is not None else addr, axis=1, kind="stable")
    addr = np.take_along_axis(addr, order, axis=1)  # active lanes first, by address
    valid = np.ones(addr.shape, bool) if active is None else np.take_along_axis(active, order, axis=1)
    start = addr.copy()  # the first byte a lane writes that the lanes before it did not (equal widths: ends sorted)
    start[:, 1:] = np.maximum(addr[:, 1:], addr[:, :-1] + access_bytes)
    sector = (addr // sector_bytes)[:, :, None] + np.arange(per_lane)
    low = np.maximum(start[:, :, None], sector * sector_bytes)
    high = np.minimum(addr[:, :, None] + access_bytes, (sector + 1) * sector_bytes)
    touched = valid[:, :, None] & (sector * sector_bytes < addr[:, :, None] + access_bytes)
    written = (np.maximum(0, high - low) * touched).reshape(n, -1)
    sector = np.where(touched, sector, SENTINEL).reshape(n, -1)  # untouched slots sort last and start no run
    if per_lane > 1:  # slots of straddling lanes interleave: put each row's sectors in order again
        by_sector = np.argsort(sector, axis=1, kind="stable")
        sector, written = np.take_along_axis(sector, by_sector, axis=1), np.take_along_axis(written, by_sector, axis=1)
    flat = np.flatnonzero(changes(sector, sector != SENTINEL))
    if not flat.size:
        return np.zeros(n, dtype=np.int64)
    totals = np.add.reduceat(written.ravel(), flat)  # a run of one sector ends where the next starts (or unused)
    return np.bincount(flat[totals < sector_bytes] // sector.shape[1], minlength=n).astype(np.int64)
