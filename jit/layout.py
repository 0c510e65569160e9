"""Warp mapping: which lane of which warp holds which element of a tile (Triton's blocked layout).

The CPU code computes whole tiles; a GPU spreads each tile over `num_warps` warps of `warp_size`
lanes. The simulator needs that spread to know the addresses one warp instruction issues, so the
profiler maps every traced tile element to (warp, lane, register) with the rule below. The warp
width always comes from the MachineSpec (32 on MTT S5000 / H200, 128 on MTT S4000).

The rule (Triton's default `BlockedEncodingAttr::get`, rank r, order = fastest dim first = the last
dim, then the one before, ...):

    size_per_thread = 1 on every dim, except `vector` elements on the fastest dim (memory ops:
                      Triton's coalescing pass gives a thread up to 16 contiguous bytes)
    for each dim d in order except the slowest:
        threads = clamp(remaining_threads, 1, shape[d] / size_per_thread[d])
        lanes[d] = clamp(threads, 1, remaining_lanes); warps[d] = clamp(threads / lanes[d], 1, remaining_warps)
        remaining_* divided by what dim d took
    the slowest dim takes the lanes and warps that are left.

Lane ids and warp ids are split over dims fastest-dim first. A dim whose extent exceeds
size_per_thread * lanes * warps repeats (each thread holds several chunks, more registers); a dim
smaller than that wraps, so several threads hold the same element (replicas). Loads by replicas are
issued (same address, no extra sectors); stores and atomics by replicas are masked off, as Triton does.
Within a thread, registers run over (repeat, element) per dim, fastest dim fastest; one warp
instruction is "register group k of every lane" (a group = `vector` consecutive elements).
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class BlockedLayout:
    """A blocked layout of one tile shape; every tuple is indexed by dim (row-major dims)."""

    shape: tuple[int, ...]
    size_per_thread: tuple[int, ...]
    lanes: tuple[int, ...]  # threads per warp along each dim (product = warp_size)
    warps: tuple[int, ...]  # warps along each dim (product = num_warps)
    order: tuple[int, ...]  # dims, fastest first

    @property
    def warp_size(self) -> int:
        return math.prod(self.lanes)

    @property
    def num_warps(self) -> int:
        return math.prod(self.warps)

    @property
    def vector(self) -> int:
        """Elements one lane moves per instruction (size_per_thread on the fastest dim)."""
        return self.size_per_thread[self.order[0]] if self.shape else 1

    def instructions(self) -> WarpRows:
        """The tile's warp instructions (see warp_rows)."""
        return warp_rows(self)


@dataclass(frozen=True)
class WarpRows:
    """One row per warp instruction (warp-major: warp 0's instructions first), one column per lane.

    element: flat row-major index of the first element the lane accesses (vector elements follow);
    replica: the lane holds a copy of an element another lane owns (stores mask it off);
    warp: the warp of each row.
    """

    element: np.ndarray
    replica: np.ndarray
    warp: np.ndarray
    vector: int

    def split(self, vector: int) -> WarpRows:
        """The same accesses made `vector` elements at a time: each lane's run takes self.vector // vector
        instructions, one after another (a mask the compiler cannot prove equal over the run narrows them)."""
        if vector >= self.vector:
            return self
        steps = np.arange(0, self.vector, vector)
        element = (self.element[:, None, :] + steps[None, :, None]).reshape(-1, self.element.shape[1])
        replica = np.repeat(self.replica, steps.size, axis=0)
        return WarpRows(element, replica, np.repeat(self.warp, steps.size), vector)


def default_layout(shape: tuple[int, ...], num_warps: int, warp_size: int, vector: int = 1) -> BlockedLayout:
    """Triton's default blocked layout for `shape` (see the module docstring for the rule)."""
    shape = tuple(int(s) for s in shape) or (1,)
    if num_warps <= 0 or warp_size <= 0:
        raise ValueError(f"num_warps and warp_size must be positive, got {num_warps}, {warp_size}")
    return _layout(shape, num_warps, warp_size, max(1, min(int(vector), shape[-1])))


@functools.lru_cache(maxsize=512)
def _layout(shape: tuple[int, ...], num_warps: int, warp_size: int, vector: int) -> BlockedLayout:
    rank = len(shape)
    order = tuple(range(rank - 1, -1, -1))
    spt = [1] * rank
    spt[order[0]] = vector
    lanes, warps = [1] * rank, [1] * rank
    remaining_lanes, remaining_warps, remaining_threads = warp_size, num_warps, warp_size * num_warps
    taken_lanes = taken_warps = 1
    for d in order[:-1]:
        threads = min(max(remaining_threads, 1), max(1, shape[d] // spt[d]))
        lanes[d] = min(max(threads, 1), remaining_lanes)
        warps[d] = min(max(threads // lanes[d], 1), remaining_warps)
        remaining_warps //= warps[d]
        remaining_lanes //= lanes[d]
        remaining_threads //= max(1, threads)
        taken_lanes *= lanes[d]
        taken_warps *= warps[d]
    lanes[order[-1]] = warp_size // taken_lanes
    warps[order[-1]] = num_warps // taken_warps
    return BlockedLayout(shape, tuple(spt), tuple(lanes), tuple(warps), order)


def owners(layout: BlockedLayout) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(warp, lane, register) of the owning (non-replica) thread of every element, row-major flat."""
    rows = warp_rows(layout)
    n = math.prod(layout.shape)
    warp = np.full(n, -1, dtype=np.int64)
    lane = np.full(n, -1, dtype=np.int64)
    reg = np.full(n, -1, dtype=np.int64)
    per_warp = rows.element.shape[0] // layout.num_warps
    for v in range(rows.vector):
        own = ~rows.replica
        r_idx, l_idx = np.nonzero(own)
        elem = rows.element[r_idx, l_idx] + v
        warp[elem] = rows.warp[r_idx]
        lane[elem] = l_idx
        reg[elem] = (r_idx % per_warp) * rows.vector + v
    return warp, lane, reg


@functools.lru_cache(maxsize=512)
def _rows_cached(layout: BlockedLayout) -> WarpRows:
    shape, rank = layout.shape, len(layout.shape)
    spt, lanes, warps, order = layout.size_per_thread, layout.lanes, layout.warps, layout.order
    cover = [spt[d] * lanes[d] * warps[d] for d in range(rank)]
    reps = [max(1, -(-shape[d] // cover[d])) for d in range(rank)]
    groups = [reps[d] * (spt[d] if d != order[0] else 1) for d in range(rank)]  # register groups per dim

    lane_c = split_ids(layout.warp_size, lanes, order)
    warp_c = split_ids(layout.num_warps, warps, order)
    group_c = split_ids(math.prod(groups), groups, order)
    coord, dup = [], np.zeros((layout.num_warps, math.prod(groups), layout.warp_size), dtype=bool)
    for d in range(rank):
        if d == order[0]:
            rep, within = group_c[d], np.zeros_like(group_c[d])
        else:
            rep, within = group_c[d] // spt[d], group_c[d] % spt[d]
        raw = (rep[None, :, None] * cover[d] + warp_c[d][:, None, None] * (spt[d] * lanes[d])
               + lane_c[d][None, None, :] * spt[d] + np.reshape(within, (1, -1, 1)))
        dup |= raw >= shape[d]
        coord.append(raw % shape[d])
    flat = np.zeros(dup.shape, dtype=np.int64)
    for d in range(rank):
        flat = flat * shape[d] + coord[d]
    element = flat.reshape(-1, layout.warp_size)
    replica = dup.reshape(-1, layout.warp_size)
    # a lane whose element another (earlier) lane of the tile also holds is a replica too
    first = np.ones_like(replica)
    order_flat = np.argsort(np.where(replica, 1, 0).ravel(), kind="stable")
    values = element.ravel()[order_flat]
    _, first_pos = np.unique(values, return_index=True)
    mark = np.zeros(values.size, dtype=bool)
    mark[first_pos] = True
    first.ravel()[order_flat] = mark
    replica = replica | ~first
    warp = np.repeat(np.arange(layout.num_warps), math.prod(groups))
    for array in (element, replica, warp):
        array.setflags(write=False)
    return WarpRows(element, replica, warp, layout.vector)


def split_ids(count: int, extents, order: tuple[int, ...]) -> list[np.ndarray]:
    """Ids 0..count-1 (lanes, warps or register groups) as their coordinate along each dim, fastest dim first."""
    ids, coords = np.arange(count, dtype=np.int64), [None] * len(extents)
    for d in order:
        coords[d] = ids % extents[d]
        ids = ids // extents[d]
    return coords


def warp_rows(layout: BlockedLayout) -> WarpRows:
    """Every warp instruction of one access of the whole tile, lane by lane (cached per layout)."""
    return _rows_cached(layout)


def reduction_split(layout: BlockedLayout, axis: int) -> tuple[int, int, int]:
    """(elements per thread, lanes, warps) that hold distinct elements along `axis`: how Triton reduces it.

    Each thread first folds its own elements of the axis in register order, then lanes combine by
    butterfly shuffles (xor lanes/2 .. 1), then warps through shared memory (xor warps/2 .. 1). Lanes and
    warps that only hold replicas of the axis take no part (Triton's "threads with unique data")."""
    n = layout.shape[axis]
    per_thread = min(layout.size_per_thread[axis], n)
    lanes = min(layout.lanes[axis], max(1, n // per_thread))
    warps = min(layout.warps[axis], max(1, n // (per_thread * lanes)))
    return per_thread, lanes, warps


def reduction_order(n: int, per_thread: int, lanes: int, warps: int) -> np.ndarray:
    """Positions along a reduced axis of length n as [threads, registers]: row t = lane * warps + warp holds
    that thread's elements in register order. Folding each row left to right and then halving over rows
    (row t with row t + rows/2, ...) adds in exactly Triton's order (see reduction_split)."""
    repeats = n // (per_thread * lanes * warps)
    lane, warp, rep, j = np.meshgrid(np.arange(lanes), np.arange(warps), np.arange(repeats), np.arange(per_thread),
                                     indexing="ij")
    position = ((rep * warps + warp) * lanes + lane) * per_thread + j
    return position.reshape(lanes * warps, repeats * per_thread)
