"""The contract between generated code and the Python runtime: one entry point, one context record.

Every compiled kernel exports

    i32 wavetile_grid(i64* ctx)

which runs programs until the grid is done or one fails. `ctx` points at an array of int64 slots
(indices below). Programs are taken in chunks from a shared atomic counter so that any number of
CPU threads can call the entry with the same context. Linear program ids run x fastest:
pid = x + grid_x * (y + grid_y * z), the order a GPU launches them.

Kernel arguments live in `ARGS`: one int64 slot per runtime (non-constexpr) argument, in the
kernel's parameter order: pointers as addresses, integers sign- or zero-extended, fp32 as its 32 bits
in the low half, fp64 as its 64 bits, bools as 0/1.

`BUFFERS` points at `2 * N_BUFFERS` int64s: (base address, size in bytes) per known buffer; the
first entries are the pointer arguments in parameter order, then any registered extra buffers.
A memory op whose pointer provably derives from argument i is checked against buffer i; one whose
provenance is unknown (pointers loaded from memory) must fall inside some buffer.

On failure a program writes `ERROR` (ERR_* slots) and the entry returns the error code; the runtime
turns the record into an exception using the site table the code generator returned.
"""

from __future__ import annotations

from dataclasses import dataclass

from dsl.ir.core import Loc

# context slots
ARGS = 0  # i64* kernel argument slots
BUFFERS = 1  # i64* (base, nbytes) pairs
N_BUFFERS = 2
GRID_X = 3
GRID_Y = 4
GRID_Z = 5
NEXT_PID = 6  # i64* shared counter, atomically advanced by CHUNK
CHUNK = 7
ERROR = 8  # i64* error record, ERROR_SLOTS long
PRINT_CALLBACK = 9  # address of a C function void(i64 site, i64 pid, i8* data, i64 nbytes), or 0
PID_ORDER = 10  # i64* permutation of linear program ids (schedule randomisation), or 0 for identity
COUNTERS = 11  # i64* instrumentation record (INSTR_* slots), instrumented variants only
CHECKS = 12  # 1: bounds checks on, 0: off (code is also compiled without them when disabled)
PROGRAM_COUNT = 13  # > 0: run only the first PROGRAM_COUNT entries of PID_ORDER (a sample); 0: the grid
CANCEL = 14  # i64* the interrupt counter (jit.interrupt), or 0: programs stop when it differs from CANCEL_SEEN
CANCEL_SEEN = 15  # the counter's value when the launch started
CONTEXT_SLOTS = 16

# instrumentation record slots (see jit.codegen.instrument): an int64 trace buffer grown on demand
INSTR_STREAMS = 0  # address of int64[3 * probes]: (chunk base, capacity, cursor) in words, per traced probe
INSTR_GROW = 1  # address of void grow(i64 record, i64 probe, i64 words): a fresh chunk with room for `words`
INSTR_COUNTS = 2  # address of int64 execution counts, one per probe
INSTR_STRIDE = 3  # trace a memory op's executions 0, S, 2S, ... of each program (S >= 1); all are counted
INSTR_SLOTS = 4
STREAM_BASE, STREAM_CAPACITY, STREAM_CURSOR = 0, 1, 2

# error record slots
ERR_CODE = 0
ERR_SITE = 1  # index into the site table
ERR_PID_X = 2
ERR_PID_Y = 3
ERR_PID_Z = 4
ERR_OFFSET = 5  # element offset from the buffer's base (or the raw address when no buffer matched)
ERR_BUFFER = 6  # buffer index, or -1
ERR_LANE = 7  # flat index of the failing element in its tile
ERROR_SLOTS = 8

# error codes
OK = 0
OUT_OF_BOUNDS = 1
ASSERT_FAILED = 2
MISALIGNED = 3
CANCELLED = 4  # the interrupt counter moved (Ctrl-C): polled at loop back-edges and between programs
POLL_BLOCKED = 5  # an atomic_poll without a timeout that no other program could end (profiled runs: one thread)

# A pointer plus a 64-bit offset whose byte distance does not fit in 64 bits becomes this address (compiled
# with checks, and interpreted) instead of wrapping around into the buffer: no buffer holds it, so the access
# is reported, and adding any in-range offset cannot bring it back into user space.
WRAPPED_ADDRESS = 1 << 62
WRAP_LIMIT_BYTES = 1 << 62  # byte distances at or beyond this (either sign) count as wrapping

ENTRY = "wavetile_grid"


@dataclass(frozen=True)
class Site:
    """A place in the kernel that can fail or print at run time; ERR_SITE indexes a list of these."""

    kind: str  # "load", "store", "atomic", "assert", "print"
    loc: Loc | None
    buffer: int | None = None  # pointer-argument index the access is checked against; None = unknown
    message: str = ""  # assert message, or print prefix
