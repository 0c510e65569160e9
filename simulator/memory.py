"""Device allocations with a poisoned initial state: `simulator.empty()`.

Device memory from `empty()` holds garbage on a real GPU. Here it is filled with 0xFF bytes (NaN for
floats, -1 for integers) and remembered, with a per-byte "written" map that starts all false, so a
checker (the interpreter's `uninit` sanitizer) can report a load of bytes nothing has written. Host
writes into the array are not seen as they happen; an element that no longer holds the poison bytes when
it is read counts as written by the host (`unwritten`). A host write of exactly the poison pattern (-1 in
every byte) is not visible that way: mark such writes with `mark_initialized(array)`.
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass

import numpy as np

POISON_BYTE = 0xFF


@dataclass
class Allocation:
    low: int
    high: int
    written: np.ndarray  # bool per byte
    ref: weakref.ref

    def unwritten(self, starts: np.ndarray, itemsize: int) -> np.ndarray:
        """Which of the elements at byte offsets `starts` nothing has written. Elements whose bytes differ
        from the poison were written by the host since: they are marked written now."""
        spans = np.asarray(starts, np.int64)[:, None] + np.arange(itemsize)
        pending = ~self.written[spans].all(axis=1)
        array = self.ref()
        if pending.any() and array is not None:
            raw = array.reshape(-1).view(np.uint8)[spans[pending]]
            by_host = (raw != POISON_BYTE).any(axis=1)
            self.written[spans[pending][by_host]] = True
            pending[np.flatnonzero(pending)[by_host]] = False
        return pending


_ALLOCATIONS: dict[int, Allocation] = {}


def empty(shape, dtype=np.float32) -> np.ndarray:
    """A new array whose contents are poison until written (by a kernel or `mark_initialized`)."""
    array = np.empty(shape, dtype=dtype)
    array.view(np.uint8).reshape(-1)[:] = POISON_BYTE
    low = array.ctypes.data
    _ALLOCATIONS[low] = Allocation(low, low + array.nbytes, np.zeros(array.nbytes, np.bool_),
                                   weakref.ref(array, lambda _, low=low: _ALLOCATIONS.pop(low, None)))
    return array


def allocation_at(low: int, high: int) -> Allocation | None:
    """The live poisoned allocation that overlaps bytes [low, high), if any."""
    for alloc in _ALLOCATIONS.values():
        if alloc.ref() is not None and alloc.low < high and low < alloc.high:
            return alloc
    return None


def mark_initialized(array: np.ndarray) -> None:
    """Declare the whole array written (after the host filled it)."""
    alloc = allocation_at(array.ctypes.data, array.ctypes.data + max(1, array.nbytes))
    if alloc is not None:
        start = array.ctypes.data - alloc.low
        alloc.written[max(0, start):start + array.nbytes] = True
