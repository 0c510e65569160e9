"""Row-wise helpers shared by the coalescing, bank and atomic models.

All three ask the same question of a [rows, lanes] array of integers: how many distinct values
does each row hold among its active entries? Doing it once, vectorised (sort each row, mark
changes), keeps the models short and fast on millions of addresses. A mask of None means
"every lane active", which skips the masking work on the common path.
"""

from __future__ import annotations

import numpy as np

SENTINEL = np.iinfo(np.int64).max


def as_lanes(addresses: np.ndarray, mask: np.ndarray | None) -> tuple[np.ndarray, np.ndarray | None]:
    """Addresses as int64 [instructions, lanes]; the mask as bool of that shape, or None if all active."""
    addr = np.asarray(addresses, dtype=np.int64)
    if addr.ndim == 1:
        addr = addr[None, :]
    if addr.ndim != 2:
        raise ValueError(f"addresses must be [instructions, lanes], got shape {addr.shape}")
    if mask is None:
        return addr, None
    active = np.broadcast_to(np.asarray(mask, dtype=bool), addr.shape)
    return addr, (None if active.all() else active)


def active_counts(shape: tuple[int, int], active: np.ndarray | None) -> np.ndarray:
    """Active lanes per row."""
    if active is None:
        return np.full(shape[0], shape[1], dtype=np.int64)
    return active.sum(axis=1)


def split_groups(values: np.ndarray, active: np.ndarray | None, lanes: int
                 ) -> tuple[np.ndarray, np.ndarray | None]:
    """Reshape [n, W] to [n * ceil(W / lanes), lanes], padding the last group with inactive lanes."""
    n, width = values.shape
    lanes = max(1, min(lanes, width))
    pad = (-width) % lanes
    if pad:
        if active is None:
            active = np.ones(values.shape, dtype=bool)
        values = np.concatenate([values, np.zeros((n, pad), values.dtype)], axis=1)
        active = np.concatenate([active, np.zeros((n, pad), bool)], axis=1)
    return values.reshape(-1, lanes), (None if active is None else active.reshape(-1, lanes))


def spans(first: np.ndarray, last: np.ndarray, active: np.ndarray | None, width: int
          ) -> tuple[np.ndarray, np.ndarray | None]:
    """Per lane, the units first..last it touches (at most `width`), flattened into the row.

    A 16-B access touches four 4-B bank words; an unaligned 4-B access may touch two sectors.
    Returns [rows, lanes * width] values and validity (None = all valid).
    """
    if width == 1:
        return first, active
    values = first[:, :, None] + np.arange(width, dtype=np.int64)
    valid = values <= last[:, :, None]
    if active is not None:
        valid &= active[:, :, None]
    rows = first.shape[0]
    return values.reshape(rows, -1), valid.reshape(rows, -1)


def sorted_distinct(values: np.ndarray, valid: np.ndarray | None
                    ) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """Sort each row, inactive entries last. `values` is sorted in place when valid is None.

    Returns (sorted rows, first-of-a-kind flags, validity of the sorted entries or None).
    """
    ordered = values if valid is None else np.where(valid, values, SENTINEL)
    ordered.sort(axis=1)
    valid_sorted = None if valid is None else ordered != SENTINEL
    return ordered, changes(ordered, valid_sorted), valid_sorted


def changes(ordered: np.ndarray, valid_sorted: np.ndarray | None) -> np.ndarray:
    """Flags of entries that differ from their left neighbour in a sorted row (first entry: True)."""
    fresh = np.empty(ordered.shape, dtype=bool)
    if ordered.shape[1]:
        fresh[:, 0] = True
        np.not_equal(ordered[:, 1:], ordered[:, :-1], out=fresh[:, 1:])
    if valid_sorted is not None:
        fresh &= valid_sorted
    return fresh


def longest_runs(fresh: np.ndarray, valid_sorted: np.ndarray | None) -> np.ndarray:
    """Longest run of equal active values in each sorted row (0 for a row with none active)."""
    rows, width = fresh.shape
    count = np.full(rows, width, dtype=np.int64) if valid_sorted is None else valid_sorted.sum(axis=1)
    starts = np.flatnonzero(fresh)
    out = np.zeros(rows, dtype=np.int64)
    if starts.size == 0:
        return out
    row_of = starts // width
    row_end = row_of * width + count[row_of]  # active entries come first in a sorted row
    ends = np.minimum(np.append(starts[1:], rows * width), row_end)
    np.maximum.at(out, row_of, ends - starts)
    return out
