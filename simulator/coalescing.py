"""Global-memory coalescing: what the memory system moves for each warp memory instruction.

Rule (research/simulator.md §3.1, CUDA Best Practices §9.2.1): the active lanes of one request
are served by the distinct aligned sectors (32 B) they touch; partially used sectors move whole;
the order of lanes within sectors is free; masked lanes touch nothing; the L2 looks up one tag
per distinct line (128 B). A warp wider than `spec.transaction_lanes` (128-lane MUSA warps) is
split into groups of that many lanes, each a request of its own (an assumption, flagged in the
spec's sources).

The compiler passes, per source-level memory op, the byte address of every lane of every warp
instruction it executed; everything here is vectorised over those rows.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from simulator.counters import Counters
from simulator.rows import active_counts, as_lanes, changes, sorted_distinct, spans, split_groups
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
        })


def coalesce(
    addresses: np.ndarray,
    mask: np.ndarray | None = None,
    access_bytes: int = 4,
    spec: MachineSpec | str | None = None,
    *,
    keep_sectors: bool = False,
) -> GlobalAccess:
    """Requests, sectors, lines and lanes of warp memory instructions.

    addresses: int64 [instructions, warp_size] byte addresses (one row = one warp instruction);
    mask: bool of the same shape (or broadcastable), True = lane active; access_bytes: bytes
    each lane moves (element size x vector width). Geometry (sector, line, transaction lanes)
    comes from `spec` (default: the current machine).
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
    return GlobalAccess(
        requests=requests, sectors=sectors, lines=lines, active_lanes=active_lanes,
        masked_lanes=width - active_lanes, access_bytes=access_bytes, sector_bytes=spec.sector_bytes,
        sector_ids=sector_ids,
    )
