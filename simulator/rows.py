"""Row-wise helpers shared by the coalescing, bank and atomic models.

All three ask the same question of a [rows, lanes] array of integers: how many distinct values
does each row hold among its active entries? Doing it once, vectorised (sort each row, mark
changes), keeps the models short and fast on millions of addresses.
"""

from __future__ import annotations

import numpy as np

SENTINEL = np.iinfo(np.int64).max


def as_lanes(addresses: np.ndarray, mask: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
    """Addresses as int64 [instructions, lanes] and the mask as a bool array of the same shape."""
    addr = np.asarray(addresses, dtype=np.int64)
    if addr.ndim == 1:
        addr = addr[None, :]
    if addr.ndim != 2:
        raise ValueError(f"addresses must be [instructions, lanes], got shape {addr.shape}")
    if mask is None:
        active = np.ones(addr.shape, dtype=bool)
    else:
        active = np.broadcast_to(np.asarray(mask, dtype=bool), addr.shape)
    return addr, active


def split_groups(values: np.ndarray, active: np.ndarray, lanes: int) -> tuple[np.ndarray, np.ndarray]:
    """Reshape [n, W] to [n * ceil(W / lanes), lanes], padding the last group with inactive lanes."""
    n, width = values.shape
    lanes = max(1, min(lanes, width))
    pad = (-width) % lanes
    if pad:
        values = np.concatenate([values, np.zeros((n, pad), values.dtype)], axis=1)
        active = np.concatenate([active, np.zeros((n, pad), bool)], axis=1)
    return values.reshape(-1, lanes), active.reshape(-1, lanes)


def spans(first: np.ndarray, last: np.ndarray, active: np.ndarray, width: int) -> tuple[np.ndarray, np.ndarray]:
    """Per lane, the units first..last it touches (at most `width` of them), flattened into the row.

    A 16-B access touches four 4-B bank words; an unaligned 4-B access may touch two sectors.
    Returns [rows, lanes * width] values and validity.
    """
    if width == 1:
        return first, active
    steps = np.arange(width, dtype=np.int64)
    values = first[:, :, None] + steps
    valid = (values <= last[:, :, None]) & active[:, :, None]
    rows = first.shape[0]
    return values.reshape(rows, -1), valid.reshape(rows, -1)


def sorted_distinct(values: np.ndarray, valid: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Sort each row with inactive entries last; return (sorted rows, first-of-a-kind flags)."""
    ordered = np.where(valid, values, SENTINEL)
    ordered.sort(axis=1)
    fresh = np.empty(ordered.shape, dtype=bool)
    if ordered.shape[1]:
        fresh[:, 0] = True
        np.not_equal(ordered[:, 1:], ordered[:, :-1], out=fresh[:, 1:])
    fresh &= ordered != SENTINEL
    return ordered, fresh


def fresh_after_shift(ordered: np.ndarray, valid_sorted: np.ndarray, shift: int) -> np.ndarray:
    """First-of-a-kind flags of `ordered >> shift` (still sorted, so no second sort is needed)."""
    coarse = ordered >> shift
    fresh = np.empty(ordered.shape, dtype=bool)
    if ordered.shape[1]:
        fresh[:, 0] = True
        np.not_equal(coarse[:, 1:], coarse[:, :-1], out=fresh[:, 1:])
    return fresh & valid_sorted


def run_lengths_max(ordered: np.ndarray, fresh: np.ndarray) -> np.ndarray:
    """Longest run of equal active values in each sorted row (0 for a row with none)."""
    rows, width = ordered.shape
    flat_fresh = fresh.ravel()
    starts = np.flatnonzero(flat_fresh)
    if starts.size == 0:
        return np.zeros(rows, dtype=np.int64)
    active = (ordered != SENTINEL).ravel()
    # run end = next start, or the end of the active part of that row
    row_of = starts // width
    active_per_row = active.reshape(rows, width).sum(axis=1)
    row_end = row_of * width + active_per_row[row_of]
    nxt = np.append(starts[1:], rows * width)
    ends = np.minimum(nxt, row_end)
    lengths = ends - starts
    out = np.zeros(rows, dtype=np.int64)
    np.maximum.at(out, row_of, lengths)
    return out
