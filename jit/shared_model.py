"""Shared-memory traffic a GPU lowering would create, as per-warp byte offsets for simulator.bank_conflicts.

The CPU code needs no shared memory, but a GPU compiler (Triton's) routes three things through it;
each function returns (writes, reads): lists of (addresses [instructions, warp_size], active mask,
access bytes), plus the scratch bytes the program allocates for it.

- Layout changes (tl.trans / tile.permute that moves the fastest dim): the source tile is stored in
  its blocked layout into a row-major scratch whose rows are padded by `padding` elements, then read
  back in the result's blocked layout. Without padding a 32x32 fp32 transpose reads one column per
  warp instruction: every lane in the same bank, a warp-width-way conflict; one element of padding
  (Triton's default for layout conversions) spreads the column over all banks.
- tl.dot operands: A [M, K] and B [K, N] are copied into swizzled shared tiles with 16-byte vectors
  (conflict-free by construction of the swizzle) and each warp reads the slices its part of the
  output needs (the warps of the dot's MMA layout, jit.mma_layout), again in 16-byte swizzled rows.
- Cross-warp reductions and scans: each warp along the reduced axis writes its partial results
  [warps_along_axis, outputs] and every warp reads them back.
"""

from __future__ import annotations

import math

import numpy as np

from jit.layout import default_layout, warp_rows

Access = tuple[np.ndarray, np.ndarray | None, int]
VECTOR_BYTES = 16


def _layout_rows(shape, num_warps: int, warp_size: int) -> tuple[np.ndarray, np.ndarray]:
    rows = warp_rows(default_layout(tuple(shape), num_warps, warp_size))
    return rows.element, ~rows.replica


def permute(src_shape: tuple[int, ...], order: tuple[int, ...], itemsize: int, num_warps: int, warp_size: int,
            padding: int) -> tuple[list[Access], list[Access], int]:
    """A layout change through a padded row-major scratch of the source tile."""
    src_shape = tuple(src_shape)
    padded = src_shape[:-1] + (src_shape[-1] + padding,)
    offset = np.arange(math.prod(padded), dtype=np.int64).reshape(padded)[..., :src_shape[-1]] * itemsize
    src_offset = offset.ravel()
    element, active = _layout_rows(src_shape, num_warps, warp_size)
    writes = [(src_offset[element], active, itemsize)]
    dst_shape = tuple(src_shape[i] for i in order)
    dst_offset = np.transpose(offset, order).ravel()  # result element -> its source's scratch offset
    element, active = _layout_rows(dst_shape, num_warps, warp_size)
    reads = [(dst_offset[element], active, itemsize)]
    return writes, reads, math.prod(padded) * itemsize


def moves_fastest_dim(order: tuple[int, ...]) -> bool:
    """A permute that keeps the last dim in place only renames registers; one that moves it converts."""
    return bool(order) and order[-1] != len(order) - 1


def _sequential(nbytes: int, warp_size: int, copies: int = 1) -> list[Access]:
    """`copies` passes over `nbytes` of a swizzled tile, 16 bytes per lane (conflict-free)."""
    chunks = -(-nbytes // VECTOR_BYTES)
    rows = -(-chunks // warp_size)
    idx = np.arange(rows * warp_size, dtype=np.int64)
    addresses = (idx * VECTOR_BYTES).reshape(rows, warp_size)
    active = (idx < chunks).reshape(rows, warp_size)
    if copies > 1:
        addresses, active = np.tile(addresses, (copies, 1)), np.tile(active, (copies, 1))
    return [(addresses, active, VECTOR_BYTES)]


def dot(m: int, n: int, k: int, itemsize: int, warps: tuple[int, int], warp_size: int,
        batch: int = 1) -> tuple[list[Access], list[Access], int]:
    """Operand staging of one tl.dot: write A and B once, read them once per warp that needs them (`warps`: the
    result's warps along M and N, jit.mma_layout)."""
    warps_m, warps_n = warps
    a_bytes, b_bytes = batch * m * k * itemsize, batch * k * n * itemsize
    writes = _sequential(a_bytes, warp_size) + _sequential(b_bytes, warp_size)
    reads = _sequential(a_bytes, warp_size, warps_n) + _sequential(b_bytes, warp_size, warps_m)
    return writes, reads, a_bytes + b_bytes


def cross_warp(shape: tuple[int, ...], axis: int, itemsize: int, num_warps: int, warp_size: int,
               along: tuple[int, int] | None = None) -> tuple[list[Access], list[Access], int, int, int]:
    """Partials of a reduction / scan whose axis spans several warps.

    Returns (writes, reads, scratch bytes, lanes along the axis, warps along the axis); no shared
    traffic when the axis lies within one warp. along: (lanes, warps) along the axis when the
    values are not in the default blocked layout (an MMA result, jit.mma_layout).
    """
    layout = default_layout(tuple(shape), num_warps, warp_size)
    lanes, warps = along or (layout.lanes[axis], layout.warps[axis])
    if warps <= 1:
        return [], [], 0, lanes, warps
    outputs = math.prod(shape) // shape[axis]
    n = warps * outputs
    idx = np.arange(-(-n // warp_size) * warp_size, dtype=np.int64)
    addresses = (idx * itemsize).reshape(-1, warp_size)
    active = (idx < n).reshape(-1, warp_size)
    access = [(addresses, active, itemsize)]
    return access, access, n * itemsize, lanes, warps
