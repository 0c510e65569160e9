"""Global memory as the interpreter sees it: the launch's buffers, addressed by real byte addresses.

Pointer registers hold the same addresses the compiled code uses (an array's data pointer plus byte
offsets), so pointer arithmetic, casts through int64 and pointers of unknown provenance behave as
compiled. Each access is resolved to a buffer: the one its pointer came from when that is known
(provenance), else any buffer of the launch that holds every active lane; the check fails like the
compiled one, naming the buffer, the tile element and the valid range.
"""

from __future__ import annotations

import ctypes
from dataclasses import dataclass

import numpy as np

from dsl.dtypes import dtype
from jit.interp import numerics as N


@dataclass
class Region:
    """One buffer of the launch: its argument name and bytes [low, high)."""

    name: str
    index: int
    low: int
    high: int
    bytes: np.ndarray  # uint8 view of [low, high)
    writable: bool = True

    @property
    def size(self) -> int:
        return self.high - self.low


class AccessError(Exception):
    """A bad access found by the interpreter; `kind` is 'out-of-bounds' or 'misaligned'."""

    def __init__(self, kind: str, message: str, lane: int):
        super().__init__(message)
        self.kind, self.lane = kind, lane


class Memory:
    def __init__(self, buffers: list[tuple]):
        """`buffers`: (name, low, high) or (name, low, high, writable) of each buffer."""
        self.regions: list[Region] = []
        for index, (name, low, high, *writable) in enumerate(buffers):
            size = max(0, high - low)
            raw = (ctypes.c_uint8 * size).from_address(low) if size else None
            view = np.frombuffer(raw, dtype=np.uint8) if size else np.zeros(0, np.uint8)
            self.regions.append(Region(name, index, low, high, view, *writable))
        self._by_low = sorted(self.regions, key=lambda r: r.low)
        self._lows = np.array([r.low for r in self._by_low], dtype=np.int64)

    def resolve(self, addresses: np.ndarray, active: np.ndarray, size: int, region: int | None) -> Region | None:
        """The buffer all active lanes fall in (the pointer's own buffer when known); raises AccessError."""
        addrs = addresses[active]
        if addrs.size == 0:
            return None
        candidates = [self.regions[region]] if region is not None else self._owners(addrs)
        for reg in candidates:
            inside = (addrs >= reg.low) & (addrs + size <= reg.high)
            if inside.all():
                return reg
        reg = candidates[0] if candidates else None
        bad_flat = np.flatnonzero(active.ravel())
        if reg is not None:
            outside = ~((addresses.ravel() >= reg.low) & (addresses.ravel() + size <= reg.high)) & active.ravel()
            lane = int(np.flatnonzero(outside)[0])
            offset = (int(addresses.ravel()[lane]) - reg.low) / size
            n = reg.size // size
            raise AccessError("out-of-bounds", f"element offset {offset:g} is outside buffer '{reg.name}' "
                              f"(valid element offsets 0..{n - 1})", lane)
        lane = int(bad_flat[0])
        raise AccessError("out-of-bounds", f"address {int(addresses.ravel()[lane]):#x} is not inside any buffer "
                          "passed to the kernel (pointer of unknown provenance)", lane)

    def _owners(self, addrs: np.ndarray) -> list[Region]:
        if not self.regions:
            return []
        slot = np.searchsorted(self._lows, addrs, side="right") - 1
        found = sorted(set(int(s) for s in np.unique(slot) if s >= 0))
        return [self._by_low[s] for s in found] or [self._by_low[0]]

    @staticmethod
    def _typed(reg: Region, dt: dtype) -> tuple[np.ndarray, int]:
        storage = np.dtype(N.NARROW[dt.name]) if N.is_narrow(dt) else dt.to_numpy()
        if dt.is_ptr():
            storage = np.dtype(np.int64)
        if dt.is_bool():
            storage = np.dtype(np.uint8)
        usable = reg.size - reg.size % storage.itemsize
        return reg.bytes[:usable].view(storage), storage.itemsize

    def indices(self, reg: Region, addresses: np.ndarray, active: np.ndarray, dt: dtype) -> np.ndarray:
        size = dt.itemsize
        offsets = addresses.astype(np.int64) - reg.low
        bad = active & (offsets % size != 0)
        if bad.any():
            lane = int(np.flatnonzero(bad.ravel())[0])
            raise AccessError("misaligned", f"byte offset {int(offsets.ravel()[lane])} into buffer '{reg.name}' is "
                              f"not a multiple of {size}", lane)
        return np.where(active, offsets // size, 0)

    def load(self, reg: Region, idx: np.ndarray, active: np.ndarray, dt: dtype) -> np.ndarray:
        typed, _ = self._typed(reg, dt)
        raw = typed[idx[active]]
        out = np.zeros(idx.shape, N.register_dtype(dt))
        out[active] = _to_register(raw, dt)
        return out

    def store(self, reg: Region, idx: np.ndarray, active: np.ndarray, value: np.ndarray, dt: dtype) -> None:
        """Lanes in element order: where two lanes hit one element the later one wins, as compiled."""
        typed, _ = self._typed(reg, dt)
        typed[idx[active]] = _to_storage(value[active], dt, typed.dtype)

    def read_one(self, reg: Region, index: int, dt: dtype):
        typed, _ = self._typed(reg, dt)
        return _to_register(typed[index:index + 1], dt)[0]

    def write_one(self, reg: Region, index: int, value, dt: dtype) -> None:
        typed, _ = self._typed(reg, dt)
        typed[index:index + 1] = _to_storage(np.asarray([value]), dt, typed.dtype)


def _to_register(raw: np.ndarray, dt: dtype) -> np.ndarray:
    if N.is_narrow(dt):
        return N.decode(raw.view(np.uint8 if raw.dtype.itemsize == 1 else np.uint16), dt)
    if dt.is_bool():
        return raw != 0
    return raw.astype(N.register_dtype(dt))


def _to_storage(value: np.ndarray, dt: dtype, storage: np.dtype) -> np.ndarray:
    if N.is_narrow(dt):
        return N.encode(value, dt).view(storage)
    return np.asarray(value).astype(storage)
