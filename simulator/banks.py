"""Shared-memory banks: wavefronts and bank conflicts of each shared-memory warp instruction.

Rule (research/simulator.md §3.2, CUDA Best Practices §9.2.3): successive `bank_bytes` words
map to successive banks, `bank = (address / bank_bytes) mod banks`. One wavefront serves at most
one word per bank, so a group of lanes needs as many wavefronts as the largest number of
*distinct* words any one bank holds among them. Lanes reading the same word share it
(broadcast, and several broadcasts merge); for stores to one word one lane wins, at no extra cost.
The banks deliver `banks x bank_bytes` bytes (128 B) per wavefront, so wide accesses are split
into phases: 16 lanes for 8-B accesses, 8 lanes for 16-B accesses, 32 lanes of a 128-lane warp
for 4-B accesses; the conflict degree is computed per phase and summed.
Conflicts = wavefronts - the conflict-free minimum (one per phase with an active lane), which is
what Nsight Compute reports as bank conflicts.

Used for every op the compiler routes through shared memory: dot operands, cross-warp reductions
and scans, layout changes such as trans.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from simulator.counters import Counters
from simulator.rows import active_counts, as_lanes, sorted_distinct, spans, split_groups
from simulator.specs import MachineSpec, current_spec


@dataclass(frozen=True)
class SharedAccess:
    """Exact counts of a batch of shared-memory warp instructions; arrays are per instruction."""

    wavefronts: np.ndarray
    ideal_wavefronts: np.ndarray
    active_lanes: np.ndarray
    access_bytes: int

    @property
    def conflicts(self) -> np.ndarray:
        """Wavefronts beyond the conflict-free minimum, per instruction."""
        return self.wavefronts - self.ideal_wavefronts

    @property
    def total_wavefronts(self) -> int:
        return int(self.wavefronts.sum())

    @property
    def total_conflicts(self) -> int:
        return int(self.conflicts.sum())

    @property
    def bytes(self) -> int:
        return int(self.active_lanes.sum()) * self.access_bytes

    @property
    def max_degree(self) -> int:
        """Worst wavefronts-per-phase ratio seen (32 for a 32-way conflict on 4-B accesses)."""
        if self.wavefronts.size == 0:
            return 0
        phases = np.maximum(self.ideal_wavefronts, 1)
        return int(np.max(-(-self.wavefronts // phases)))

    def to_counters(self) -> Counters:
        """These counts as a Counters record."""
        return Counters(
            shared_requests=int(np.count_nonzero(self.active_lanes)),
            shared_wavefronts=self.total_wavefronts,
            shared_bank_conflicts=self.total_conflicts,
            shared_bytes=self.bytes,
        )


def phase_lanes(access_bytes: int, warp_size: int, banks: int, bank_bytes: int) -> int:
    """Lanes served together in one conflict-free wavefront: (banks x bank_bytes) / access size."""
    return max(1, min(warp_size, (banks * bank_bytes) // max(access_bytes, 1)))


def bank_conflicts(
    addresses: np.ndarray,
    mask: np.ndarray | None = None,
    access_bytes: int = 4,
    spec: MachineSpec | str | None = None,
) -> SharedAccess:
    """Wavefronts and conflicts of shared-memory warp instructions.

    addresses: int64 [instructions, warp_size] byte offsets into shared memory; mask: bool of the
    same shape (True = active); access_bytes: bytes per lane (element size x vector width).
    Bank count and width come from `spec` (default: the current machine).
    """
    spec = current_spec(spec)
    if access_bytes <= 0:
        raise ValueError(f"access_bytes must be positive, got {access_bytes}")
    addr, active = as_lanes(addresses, mask)
    n, width = addr.shape
    banks, word = spec.shared_banks, spec.shared_bank_bytes
    lanes = phase_lanes(access_bytes, width, banks, word)
    phases = -(-width // lanes)

    rows, rows_active = split_groups(addr, active, lanes)
    word_shift = word.bit_length() - 1  # bank_bytes is a power of two (checked by the spec)
    first = rows >> word_shift
    last = (rows + (access_bytes - 1)) >> word_shift
    per_lane = -(-access_bytes // word)  # words an aligned access touches
    if not np.array_equal(last - first, np.full_like(first, per_lane - 1)):
        per_lane += 1  # some lane straddles a word boundary
    values, valid = spans(first, last, rows_active, per_lane)
    ordered, fresh, _ = sorted_distinct(values, valid)

    # distinct words per (row, bank); the conflict degree of a row is its fullest bank
    n_rows = rows.shape[0]
    slot = ordered % banks if banks & (banks - 1) else ordered & (banks - 1)
    slot += (np.arange(n_rows, dtype=np.int64) * banks)[:, None]
    slot[~fresh] = n_rows * banks  # repeats and inactive entries go to a spare bin
    per_bank = np.bincount(slot.ravel(), minlength=n_rows * banks + 1)[:-1]
    degree = per_bank.reshape(n_rows, banks).max(axis=1)

    wavefronts = degree.reshape(n, phases).sum(axis=1)
    if rows_active is None:
        ideal = np.full(n, phases, dtype=np.int64)
    else:
        ideal = rows_active.any(axis=1).reshape(n, phases).sum(axis=1)
    return SharedAccess(wavefronts=wavefronts, ideal_wavefronts=ideal,
                        active_lanes=active_counts(addr.shape, active), access_bytes=access_bytes)
