"""Ordered memory accesses: tile.atomic_load, tile.atomic_store and tile.atomic_poll.

Apart from memory.py because these are never vectorised, fused or merged: each active lane is one LLVM
atomic load or store with the op's memory order, in element order, so another program (on another CPU
thread) sees them as the GPU's ld.acquire / st.release. A poll spins on such loads; its timeout is
measured on the host's monotonic clock (clock_gettime, resolved from the C library when the kernel
object is loaded), and its spin polls the launch's interrupt counter so Ctrl-C stops a poll that waits
forever. Instrumented (profiled) builds run their programs on one thread, so there a poll without a
timeout that misses on its first load fails the launch (abi.POLL_BLOCKED) instead of spinning.
"""

from __future__ import annotations

import sys

import llvmlite.ir as ir

from dsl.ir.core import Operation
from dsl.ir.ops import OP
from jit import abi
from jit.codegen import instrument
from jit.codegen.checks import access_check
from jit.codegen.llvm_types import I64, from_memory, memory_type, to_memory
from jit.codegen.loops import linear_index, loop_nest, row_major_strides
from jit.codegen.memory import is_true, masked_lane

_ORDERING = {"acquire": "acquire", "release": "release", "relaxed": "monotonic"}
_CLOCK_MONOTONIC = 6 if sys.platform == "darwin" else 1
_TIMESPEC = ir.LiteralStructType([I64, I64])


def emit_atomic_load(lw, op: Operation) -> None:
    """Per active lane in element order: one atomic load; masked-off lanes give 0."""
    ptr, mask = op.operands
    dt = op.result.type.dtype
    masked = not is_true(mask)
    _check(lw, op, ptr, mask if masked else None)
    b = lw.b
    buf = lw.new_buffer(op.result.type)
    ordering = _ORDERING[op.attrs["sem"]]

    def lane(idx: list[ir.Value]) -> None:
        address = lw.element(ptr, idx)
        buf.store(b, idx, masked_lane(lw, mask if masked else None, idx, lambda: _load(lw, address, dt, ordering)))

    loop_nest(b, buf.shape, lane, scalar=True)
    lw.define(op.result, buf)


def emit_atomic_store(lw, op: Operation) -> None:
    """Per active lane in element order: one atomic store."""
    ptr, value, mask = op.operands
    dt = value.type.dtype
    masked = not is_true(mask)
    _check(lw, op, ptr, mask if masked else None)
    b = lw.b
    ordering = _ORDERING[op.attrs["sem"]]

    def lane(idx: list[ir.Value]) -> None:
        if not masked:
            _store(lw, lw.element(ptr, idx), lw.element(value, idx), dt, ordering)
            return
        with b.if_then(lw.element(mask, idx)):
            _store(lw, lw.element(ptr, idx), lw.element(value, idx), dt, ordering)

    loop_nest(b, ptr.type.shape, lane, scalar=True)


def emit_atomic_poll(lw, op: Operation) -> None:
    """Per lane in element order: load until the value equals `expected`, or until the clock, read from the
    op's start (one budget for the whole tile), passes `timeout` ns; every lane loads at least once."""
    ptr, expected, timeout = op.operands
    dt = ptr.type.dtype.element_ty
    _check(lw, op, ptr, None)
    b = lw.b
    ordering = _ORDERING[op.attrs["sem"]]
    buf = lw.new_buffer(op.result.type)
    budget = lw.element(timeout, [])
    has_timeout = b.icmp_signed(">=", budget, ir.Constant(I64, 0))
    start = _now_ns(lw)
    site = lw.add_site("poll", op.loc, lw.provenance.buffer(ptr))
    strides = row_major_strides(ptr.type.shape)

    def lane(idx: list[ir.Value]) -> None:
        address = lw.element(ptr, idx)
        want = lw.element(expected, idx)
        first = _load(lw, address, dt, ordering)
        entry = b.block
        check = b.append_basic_block("poll.check")
        timed = b.append_basic_block("poll.clock")
        spin = b.append_basic_block("poll.spin")
        done = b.append_basic_block("poll.done")
        b.branch(check)
        b.position_at_end(check)
        seen = b.phi(first.type)
        seen.add_incoming(first, entry)
        equal = b.icmp_unsigned("==", seen, want)
        check_end = b.block
        b.cbranch(equal, done, timed)
        b.position_at_end(timed)
        expired = b.and_(has_timeout, b.icmp_signed(">=", b.sub(_now_ns(lw), start), budget))
        timed_end = b.block
        b.cbranch(expired, done, spin)
        b.position_at_end(spin)
        if lw.instrument:  # profiled runs are single-threaded: without a timeout nothing could end this wait
            with b.if_then(b.not_(has_timeout), likely=False):
                lw.fail(abi.POLL_BLOCKED, site, ir.Constant(I64, 0), ir.Constant(I64, -1),
                        linear_index(b, idx, strides))
        lw.poll_cancel()
        again = _load(lw, address, dt, ordering)
        seen.add_incoming(again, b.block)
        b.branch(check)
        b.position_at_end(done)
        matched = b.phi(ir.IntType(1))
        matched.add_incoming(ir.Constant(ir.IntType(1), 1), check_end)
        matched.add_incoming(ir.Constant(ir.IntType(1), 0), timed_end)
        buf.store(b, idx, matched)

    loop_nest(b, buf.shape, lane, scalar=True)
    lw.define(op.result, buf)


EMITTERS = {
    OP.TILE_ATOMIC_LOAD: emit_atomic_load,
    OP.TILE_ATOMIC_STORE: emit_atomic_store,
    OP.TILE_ATOMIC_POLL: emit_atomic_poll,
}


def _check(lw, op: Operation, ptr, mask) -> None:
    """Bounds-check and trace the access like every global access (memory.py's contract)."""
    kind = "store" if op.name == OP.TILE_ATOMIC_STORE else "load"
    site = lw.add_site(kind, op.loc, lw.provenance.buffer(ptr))
    access_check(lw, ptr.type.shape, ptr, mask, ptr.type.dtype.element_ty.itemsize, site)
    instrument.trace_access(lw, op, ptr.type.shape, ptr, mask)


def _bits_pointer(b: ir.IRBuilder, address: ir.Value, dt) -> tuple[ir.Value, ir.IntType]:
    bits = ir.IntType(dt.primitive_bitwidth if not dt.is_bool() else 8)
    return b.bitcast(address, bits.as_pointer()), bits


def _load(lw, address: ir.Value, dt, ordering: str) -> ir.Value:
    b = lw.b
    pointer, _ = _bits_pointer(b, address, dt)
    raw = b.load_atomic(pointer, ordering, dt.itemsize)
    mem = memory_type(dt)
    if isinstance(mem, ir.PointerType):
        stored = b.inttoptr(raw, mem)
    elif isinstance(mem, ir.IntType):
        stored = raw
    else:
        stored = b.bitcast(raw, mem)
    return from_memory(b, stored, dt)


def _store(lw, address: ir.Value, value: ir.Value, dt, ordering: str) -> None:
    b = lw.b
    pointer, bits = _bits_pointer(b, address, dt)
    stored = to_memory(b, value, dt)
    if isinstance(stored.type, ir.PointerType):
        stored = b.ptrtoint(stored, bits)
    elif not isinstance(stored.type, ir.IntType):
        stored = b.bitcast(stored, bits)
    b.store_atomic(stored, pointer, ordering, dt.itemsize)


def _now_ns(lw) -> ir.Value:
    """The host's monotonic clock in ns (one vDSO call; a GPU would read its global timer)."""
    module = lw.module
    clock = module.globals.get("clock_gettime")
    if clock is None:
        clock = ir.Function(module, ir.FunctionType(ir.IntType(32), [ir.IntType(32), _TIMESPEC.as_pointer()]),
                            name="clock_gettime")
    spec = lw.entry.alloca(_TIMESPEC, name="timespec")
    b = lw.b
    b.call(clock, [ir.Constant(ir.IntType(32), _CLOCK_MONOTONIC), spec])
    seconds = b.load(b.gep(spec, [ir.Constant(ir.IntType(32), 0), ir.Constant(ir.IntType(32), 0)]))
    nanos = b.load(b.gep(spec, [ir.Constant(ir.IntType(32), 0), ir.Constant(ir.IntType(32), 1)]))
    return b.add(b.mul(seconds, ir.Constant(I64, 1_000_000_000)), nanos)
