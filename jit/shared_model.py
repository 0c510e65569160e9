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
- Cross-warp reductions: Triton's lowering, access for access (reduction_exchange). Scans, and
  reductions of a dot's MMA layout, are taken as writing and reading their partials
  [warps_along_axis, outputs] contiguously (cross_warp).
"""

from __future__ import annotations

import functools
import math

import numpy as np

from jit.layout import BlockedLayout, default_layout, reduction_split, split_ids, warp_rows

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


def reduction_exchange(shape: tuple[int, ...], axis: int, itemsizes: tuple[int, ...], num_warps: int, warp_size: int,
                       size_per_thread: int = 1) -> tuple[list[Access], list[Access], int, int, int]:
    """The shared-memory accesses of a tile.reduce whose axis spans several warps, as Triton lowers it
    (ReduceOpToLLVM: storeWarpReduceToSharedMemory, accumulatePartialReductions, loadReductionAndPackResult),
    for values in the blocked layout with `size_per_thread` elements a thread along the last dim (the layout the
    reduction inherits from its load: jit.passes.assign_reduction_order).

    Each operand gets a scratch shaped like the tile with its axis shrunk to the W warps along it, laid out with
    that axis fastest: result r of warp w sits at word w + W * r. Each thread stores, one scalar at a time, each
    result it holds (lanes at position 0 along the axis, not replicas); the threads then fold the scratch in
    order (thread t loads word t, its W-lane group combines by shuffles, the group's first lane stores); and
    every thread loads each result it holds, one scalar at a time. Stores and loads of a warp's results thus step
    W words a lane (W x the results a thread holds along the fastest dim): a [16, 128] tile reduced down its rows
    on 8 warps, 8 elements a thread along the row, puts 16 lanes in one bank, 16 wavefronts an instruction, as
    Nsight Compute counts on the H200 (simulator/data/h200_ncu.jsonl: paged decode). Returns (writes, reads,
    scratch bytes, lanes along the axis, warps along the axis); no accesses when the axis lies within one warp."""
    shape = tuple(int(s) for s in shape)
    vector = max(1, min(size_per_thread, math.prod(shape) // (num_warps * warp_size)))
    layout = default_layout(shape, num_warps, warp_size, vector)
    _, lanes, warps = reduction_split(layout, axis)
    if warps <= 1:
        return [], [], 0, lanes, warps
    writes, reads, scratch = [], [], 0
    for itemsize in itemsizes:
        w, r, nbytes = _reduction_exchange(layout, axis, itemsize)
        writes, reads, scratch = writes + w, reads + r, scratch + nbytes
    return writes, reads, scratch, lanes, warps


@functools.lru_cache(maxsize=256)
def _reduction_exchange(layout: BlockedLayout, axis: int, itemsize: int) -> tuple[list[Access], list[Access], int]:
    """One operand's accesses (reduction_exchange), cached per layout."""
    _, _, warps = reduction_split(layout, axis)
    shape, warp_size, num_warps = layout.shape, layout.warp_size, layout.num_warps
    rows = warp_rows(layout)
    per_warp = rows.element.shape[0] // num_warps
    # every element a thread holds, in register order: [warp, register, lane]
    steps = np.arange(rows.vector)
    element = (rows.element.reshape(num_warps, per_warp, 1, warp_size) + steps[None, None, :, None])
    element = element.reshape(num_warps, per_warp * rows.vector, warp_size)
    replica = np.repeat(rows.replica.reshape(num_warps, per_warp, warp_size), rows.vector, axis=1)
    coords = np.unravel_index(element, shape)
    rest = tuple(d for d in range(len(shape)) if d != axis)
    result = (np.ravel_multi_index(tuple(coords[d] for d in rest), tuple(shape[d] for d in rest))
              if rest else np.zeros_like(element))
    # a thread's registers along the axis fold into one partial: keep the first register of each result
    _, first = np.unique(result[0, :, 0], return_index=True)
    held = np.sort(first)
    result, replica = result[:, held, :], replica[:, held, :]
    lane_on_axis = split_ids(warp_size, layout.lanes, layout.order)[axis]
    warp_on_axis = split_ids(num_warps, layout.warps, layout.order)[axis]
    writer = (~replica) & (lane_on_axis == 0)[None, None, :] & (warp_on_axis < warps)[:, None, None]
    stores = (warp_on_axis[:, None, None] + warps * result) * itemsize
    writes = [(stores.reshape(-1, warp_size), writer.reshape(-1, warp_size), itemsize)]
    reads = [((warps * result * itemsize).reshape(-1, warp_size), None, itemsize)]
    # the fold: thread t loads word t (+ one block of threads a round) and its group's first lane stores the sum
    words = warps * (math.prod(shape) // shape[axis])
    threads = num_warps * warp_size
    thread = np.arange(threads, dtype=np.int64)
    for step in range(max(1, words // threads)):
        word = thread + step * threads
        needed = (thread < words).reshape(-1, warp_size)
        reads.append(((word * itemsize).reshape(-1, warp_size), needed, itemsize))
        writes.append(((word * itemsize).reshape(-1, warp_size), needed & (thread % warps == 0).reshape(-1, warp_size),
                       itemsize))
    return writes, reads, words * itemsize

