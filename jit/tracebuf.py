"""The host side of an instrumented run: the record the code writes into, grown on demand.

One `TraceBuffers` per instrumented launch. It owns the abi.INSTR_SLOTS record, the stream table
(chunk base, capacity, cursor per probe), the execution counts and the grow callback the code calls
when a record would not fit: the filled chunk is kept and a fresh one, at least twice the previous
size, is installed, so the trace never overflows. `streams()` then gives each traced probe's records
as one [records, words] int64 matrix.
"""

from __future__ import annotations

import ctypes

import numpy as np

from jit import abi
from jit.codegen.instrument import record_words

_GROW = ctypes.CFUNCTYPE(None, ctypes.c_int64, ctypes.c_int64, ctypes.c_int64)
FIRST_CHUNK_WORDS = 1 << 16


class TraceBuffers:
    """Instrumentation record, counts and trace chunks of one instrumented launch."""

    def __init__(self, probes: list[dict]) -> None:
        self.probes = probes
        n = max(1, len(probes))
        self.counts = np.zeros(n, dtype=np.int64)
        self.table = np.zeros(3 * n, dtype=np.int64)
        self.chunks: list[list[tuple[np.ndarray, int]]] = [[] for _ in range(n)]  # filled chunks per probe
        self.current: list[np.ndarray | None] = [None] * n
        self.record = np.zeros(abi.INSTR_SLOTS, dtype=np.int64)
        self._callback = _GROW(self._grow)  # kept alive with the object
        self.record[abi.INSTR_STREAMS] = self.table.ctypes.data
        self.record[abi.INSTR_GROW] = ctypes.cast(self._callback, ctypes.c_void_p).value
        self.record[abi.INSTR_COUNTS] = self.counts.ctypes.data
        self.record[abi.INSTR_STRIDE] = 1
        self.failed = False

    @property
    def address(self) -> int:
        return int(self.record.ctypes.data)

    def _grow(self, record: int, probe: int, words: int) -> None:
        """Called by the kernel (GIL taken by ctypes): keep the full chunk, install a bigger one."""
        try:
            base, capacity, cursor = (int(v) for v in self.table[3 * probe:3 * probe + 3])
            old = self.current[probe]
            if old is not None and cursor:
                self.chunks[probe].append((old, cursor))
            size = max(FIRST_CHUNK_WORDS, 2 * capacity, 2 * words)
            chunk = np.empty(size, dtype=np.int64)
            self.current[probe] = chunk
            self.table[3 * probe:3 * probe + 3] = (chunk.ctypes.data, size, 0)
        except BaseException:  # never let an exception cross into native code
            self.failed = True
            raise

    @property
    def stride(self) -> int:
        return int(self.record[abi.INSTR_STRIDE])

    def thin(self, stride: int) -> None:
        """Trace only executions 0, stride, 2 * stride, ... of each program from now on, and keep only those
        records of what is already traced (valid while that is one program's trace: record i = execution i)."""
        self.record[abi.INSTR_STRIDE] = stride
        if stride == 1:
            return
        for probe, info in enumerate(self.probes):
            if not info.get("trace"):
                continue
            kept = self.stream(probe)[::stride]
            self.chunks[probe] = [(kept.ravel(), kept.size)] if kept.size else []
            self.current[probe] = None
            self.table[3 * probe:3 * probe + 3] = 0

    def records(self, probe: int) -> int:
        """Trace records the probe wrote (one per traced execution)."""
        done = sum(used for _, used in self.chunks[probe]) + int(self.table[3 * probe + 2])
        info = self.probes[probe]
        numel = int(np.prod(info["operands"][0][0], dtype=np.int64)) if info["operands"] else 1
        return done // record_words(numel, bool(info.get("masked")))

    def words(self) -> int:
        """int64 words traced so far, over all probes."""
        done = sum(used for chunks in self.chunks for _, used in chunks)
        return done + int(self.table[2::3].sum())

    def stream_parts(self, probe: int) -> list[np.ndarray]:
        """The probe's trace records as [records, words] matrices, one per chunk (views, no copies)."""
        info = self.probes[probe]
        numel = int(np.prod(info["operands"][0][0], dtype=np.int64)) if info["operands"] else 1
        words = record_words(numel, bool(info.get("masked")))
        parts = [chunk[:used] for chunk, used in self.chunks[probe]]
        current = self.current[probe]
        if current is not None:
            parts.append(current[:int(self.table[3 * probe + 2])])
        return [part.reshape(-1, words) for part in parts]

    def stream(self, probe: int) -> np.ndarray:
        """The probe's trace records as one [records, words] matrix."""
        parts = self.stream_parts(probe)
        if not parts:
            info = self.probes[probe]
            numel = int(np.prod(info["operands"][0][0], dtype=np.int64)) if info["operands"] else 1
            return np.empty((0, record_words(numel, bool(info.get("masked")))), dtype=np.int64)
        return parts[0] if len(parts) == 1 else np.concatenate(parts)
