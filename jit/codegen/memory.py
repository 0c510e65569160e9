"""Global memory: tile.load, tile.store, tile.atomic, tile.atomic_cas.

All global accesses are emitted here (and only here), so an instrumented variant (address streams for
the simulator, counters) has one place to hook into: `access_check` sees every access's pointer and
mask before it happens (checks.py), and `_load`, `load_element` and the store and atomic lane code
emit each lane's memory instruction.

Masked loads and stores are emitted twice: full vectors for when every lane is on (most programs),
a scalar masked loop otherwise. Loads fused into a store's value run lane by lane with the stores,
behind a run-time test that the store does not overlap what they read.
"""

from __future__ import annotations

from collections.abc import Callable

import llvmlite.ir as ir

from dsl.dtypes import dtype
from dsl.ir.core import Operation, Value
from dsl.ir.ops import OP, Trait, with_trait
from jit.codegen import instrument
from jit.codegen.checks import access_check, all_active, byte_range
from jit.codegen.llvm_types import (
    I64,
    from_memory,
    intrinsic,
    is_narrow_float,
    memory_type,
    register_type,
    to_memory,
)
from jit.codegen.loops import loop_nest

_SAME_VALUES = with_trait(Trait.SAME_VALUES)  # a constant mask stays constant through these
_ORDERING = {"acq_rel": "seq_cst", "seq_cst": "seq_cst", "relaxed": "monotonic", "acquire": "acquire",
             "release": "release"}
_FAIL_ORDERING = {"seq_cst": "seq_cst", "monotonic": "monotonic", "acquire": "acquire", "release": "monotonic"}
_RMW_FLOAT = {"add": "fadd", "max": "fmax", "min": "fmin", "xchg": "xchg"}
_RMW_INT = {"add": "add", "and": "and", "or": "or", "xor": "xor", "xchg": "xchg"}
_RMW_SIGNED = {"max": ("max", "umax"), "min": ("min", "umin")}


def emit_load(lw, op: Operation) -> None:
    """Check the access here; then either leave the load to its consumer's loop (fused) or load the
    tile into a buffer, with full vectors when every lane is on."""
    ptr, mask, other = op.operands
    dt = op.result.type.dtype
    masked = not is_true(mask)
    site = lw.add_site("load", op.loc, lw.provenance.buffer(ptr))
    access_check(lw, op.result.type.shape, ptr, mask if masked else None, dt.itemsize, site)
    instrument.trace_access(lw, op, op.result.type.shape, ptr, mask if masked else None)
    if op.result in lw.fused:
        return
    buf = lw.new_buffer(op.result.type)
    _versioned(lw, buf.shape, [mask] if masked else [],
               lambda scalar: loop_nest(lw.b, buf.shape, lambda idx: buf.store(lw.b, idx, load_element(lw, op, idx)),
                                        scalar=scalar))
    lw.define(op.result, buf)


def load_element(lw, op: Operation, idx: list[ir.Value]) -> ir.Value:
    """One lane of a tile.load: `mask ? *address : other`, touching memory only for active lanes."""
    ptr, mask, other = op.operands
    dt = op.result.type.dtype
    b = lw.b
    address = lw.element(ptr, idx)
    if is_true(mask) or mask in lw.assume_true:
        return _load(b, address, dt)
    alternative = lw.element(other, idx)
    active = lw.element(mask, idx)
    before = b.block
    with b.if_then(active):
        loaded = _load(b, address, dt)
        loaded_in = b.block
    value = b.phi(register_type(dt))
    value.add_incoming(loaded, loaded_in)
    value.add_incoming(alternative, before)
    return value


def emit_store(lw, op: Operation) -> None:
    ptr, value, mask = op.operands
    dt = value.type.dtype
    shape = ptr.type.shape
    masked = not is_true(mask)
    site = lw.add_site("store", op.loc, lw.provenance.buffer(ptr))
    access_check(lw, shape, ptr, mask if masked else None, dt.itemsize, site)
    instrument.trace_access(lw, op, shape, ptr, mask if masked else None)
    b = lw.b

    def store_loop(get_ptr, get_value, get_mask, scalar: bool) -> None:
        def lane(idx: list[ir.Value]) -> None:
            address = get_ptr(idx)
            stored = to_memory(b, get_value(idx), dt)
            if not masked or mask in lw.assume_true:
                b.store(stored, address, align=dt.itemsize)
                return
            with b.if_then(get_mask(idx)):
                b.store(stored, address, align=dt.itemsize)

        loop_nest(b, shape, lane, scalar=scalar)

    def direct(scalar: bool) -> None:
        store_loop(*(lambda idx, v=v: lw.element(v, idx) for v in (ptr, value, mask)), scalar)

    loads = fused_loads(lw, [ptr, value, mask])
    masks = [mask] if masked else []
    masks += [m for m in (load.operands[1] for load in loads) if not is_true(m) and m not in masks]
    if not loads:
        _versioned(lw, shape, masks, direct)
        return
    for m in masks:  # decided here, where the answer (cached for the block) dominates both branches below
        all_active(lw, shape, m)
    # fused loads run lane by lane with the stores: only correct when the store cannot overwrite what a
    # later lane still has to read, i.e. when the ranges do not overlap; otherwise read everything first
    with b.if_else(_overlaps(lw, op, loads), likely=False) as (overlapping, disjoint):
        with overlapping:  # e.g. an in-place update x[i] = f(x[i])
            staged = [lw.materialize(v) for v in ((ptr, value, mask) if masked else (ptr, value))]
            getters = [lambda idx, buf=buf: buf.load(b, idx) for buf in staged]
            _versioned(lw, shape, [mask] if masked else [],
                       lambda scalar: store_loop(*getters, *([] if masked else [None]), scalar))
        with disjoint:
            _versioned(lw, shape, masks, direct)


def fused_loads(lw, values: list[Value]) -> list[Operation]:
    """The fused tile.loads that computing these values' elements would execute."""
    found, seen, stack = [], set(), list(values)
    while stack:
        value = stack.pop()
        if value in seen or value not in lw.fused or value.op is None:
            continue
        seen.add(value)
        if value.op.name == OP.TILE_LOAD:
            found.append(value.op)
        stack.extend(value.op.operands)
    return found


def _overlaps(lw, store: Operation, loads: list[Operation]) -> ir.Value:
    """i1: the store's byte range meets the range of one of the fused loads."""
    b = lw.b
    ptr, value, mask = store.operands
    store_any, store_first, store_end = byte_range(lw, ptr.type.shape, ptr, None if is_true(mask) else mask,
                                                   value.type.dtype.itemsize)
    hit = ir.Constant(ir.IntType(1), 0)
    for load in loads:
        lptr, lmask, _ = load.operands
        any_on, first, end = byte_range(lw, lptr.type.shape, lptr, None if is_true(lmask) else lmask,
                                        load.result.type.dtype.itemsize)
        meets = b.and_(b.icmp_unsigned("<", first, store_end), b.icmp_unsigned("<", store_first, end))
        hit = b.or_(hit, b.and_(b.and_(any_on, store_any), meets))
    return hit


def _versioned(lw, shape, masks: list[Value], loop) -> None:
    """loop(scalar) twice: vectorised with every mask assumed on, taken when that holds at run time (no
    masked instructions, which are slow or scalarised on many CPUs), and a scalar masked loop for the
    rest (typically one tail program per launch; not vectorising it halves the code to compile)."""
    if not masks or not shape:
        loop(bool(masks))
        return
    b = lw.b
    everyone = all_active(lw, shape, masks[0])
    for mask in masks[1:]:
        everyone = b.and_(everyone, all_active(lw, shape, mask))
    with b.if_else(everyone, likely=True) as (full, partial):
        with full:
            lw.assume_true.update(masks)
            loop(False)
            lw.assume_true.difference_update(masks)
        with partial:
            loop(True)


def masked_lane(lw, mask: Value | None, idx: list[ir.Value], access: Callable[[], ir.Value]) -> ir.Value:
    """One lane's memory access, run only where the lane's mask bit is set; an inactive lane gives 0."""
    if mask is None:
        return access()
    b = lw.b
    before = b.block
    with b.if_then(lw.element(mask, idx)):
        done = access()
        done_in = b.block
    value = b.phi(done.type)
    value.add_incoming(done, done_in)
    value.add_incoming(ir.Constant(done.type, None), before)
    return value


def emit_atomic(lw, op: Operation) -> None:
    """One atomic read-modify-write per active lane, in element order; masked-off lanes give 0."""
    ptr, value, mask = op.operands
    dt = op.result.type.dtype
    kind = op.attrs["kind"]
    ordering = _ORDERING[op.attrs["sem"]]
    masked = not is_true(mask)
    site = lw.add_site("atomic", op.loc, lw.provenance.buffer(ptr))
    access_check(lw, op.result.type.shape, ptr, mask if masked else None, dt.itemsize, site)
    instrument.trace_access(lw, op, op.result.type.shape, ptr, mask if masked else None)
    b = lw.b
    buf = lw.new_buffer(op.result.type)
    rmw = _rmw_emitter(dt, kind)

    def lane(idx: list[ir.Value]) -> None:
        address, operand = lw.element(ptr, idx), lw.element(value, idx)
        buf.store(b, idx, masked_lane(lw, mask if masked else None, idx,
                                      lambda: rmw(lw, address, operand, ordering)))

    loop_nest(b, buf.shape, lane, scalar=True)
    lw.define(op.result, buf)


def emit_atomic_cas(lw, op: Operation) -> None:
    """Per lane in element order: old = *p; if old == cmp (bitwise): *p = value. Gives old."""
    ptr, cmp, value = op.operands
    dt = op.result.type.dtype
    ordering = _ORDERING[op.attrs["sem"]]
    site = lw.add_site("atomic", op.loc, lw.provenance.buffer(ptr))
    access_check(lw, op.result.type.shape, ptr, None, dt.itemsize, site)
    instrument.trace_access(lw, op, op.result.type.shape, ptr, None)
    b = lw.b
    buf = lw.new_buffer(op.result.type)
    bits = ir.IntType(dt.primitive_bitwidth)

    def lane(idx: list[ir.Value]) -> None:
        address = b.bitcast(lw.element(ptr, idx), bits.as_pointer())
        expected = _to_bits(b, lw.element(cmp, idx), dt)
        desired = _to_bits(b, lw.element(value, idx), dt)
        pair = b.cmpxchg(address, expected, desired, ordering, _FAIL_ORDERING[ordering])
        buf.store(b, idx, _from_bits(b, b.extract_value(pair, 0), dt))

    loop_nest(b, buf.shape, lane, scalar=True)
    lw.define(op.result, buf)


EMITTERS = {
    OP.TILE_LOAD: emit_load,
    OP.TILE_STORE: emit_store,
    OP.TILE_ATOMIC: emit_atomic,
    OP.TILE_ATOMIC_CAS: emit_atomic_cas,
}


def is_true(mask: Value) -> bool:
    """The mask is the constant true, possibly splat or broadcast: no masking needed."""
    while True:
        op = mask.op
        if op is None:
            return False
        if op.name == OP.ARITH_CONSTANT:
            return op.attrs["value"] is True or op.attrs["value"] == 1
        if op.name not in _SAME_VALUES:
            return False
        mask = op.operands[0]


# ----------------------------------------------------------------------------------------------------
# one lane's memory instructions


def _load(b: ir.IRBuilder, address: ir.Value, dt: dtype) -> ir.Value:
    return from_memory(b, b.load(address, align=dt.itemsize), dt)


def _to_bits(b: ir.IRBuilder, value: ir.Value, dt: dtype) -> ir.Value:
    stored = to_memory(b, value, dt)
    if isinstance(stored.type, ir.IntType):
        return stored
    if isinstance(stored.type, ir.PointerType):
        return b.ptrtoint(stored, I64)
    return b.bitcast(stored, ir.IntType(dt.primitive_bitwidth))


def _from_bits(b: ir.IRBuilder, bits: ir.Value, dt: dtype) -> ir.Value:
    mem = memory_type(dt)
    if isinstance(mem, ir.PointerType):
        stored = b.inttoptr(bits, mem)
    elif isinstance(mem, ir.IntType):
        stored = bits
    else:
        stored = b.bitcast(bits, mem)
    return from_memory(b, stored, dt)


Rmw = Callable[..., ir.Value]


def _rmw_emitter(dt: dtype, kind: str) -> Rmw:
    """The instruction sequence of one atomic update for this element type and kind."""
    if is_narrow_float(dt):
        if kind == "xchg":
            return lambda lw, address, value, ordering: _from_bits(
                lw.b, lw.b.atomic_rmw("xchg", address, _to_bits(lw.b, value, dt), ordering), dt)
        return _cas_loop(dt, kind)
    if dt.is_floating():
        op = _RMW_FLOAT.get(kind)
    elif kind in _RMW_SIGNED:
        op = _RMW_SIGNED[kind][0 if dt.is_int_signed() else 1]
    else:
        op = _RMW_INT.get(kind)
    if op is None or dt.is_bool():
        raise NotImplementedError(f"tile.atomic {kind} on {dt.name}")
    if dt.is_ptr():
        raise NotImplementedError("atomics on pointer elements")
    return lambda lw, address, value, ordering: lw.b.atomic_rmw(op, address, value, ordering)


def _cas_loop(dt: dtype, kind: str) -> Rmw:
    """Narrow-float add/max/min: compute in f32, round, and retry a compare-and-swap on the bits."""
    if kind not in ("add", "max", "min"):
        raise NotImplementedError(f"tile.atomic {kind} on {dt.name}")

    def emit(lw, address: ir.Value, value: ir.Value, ordering: str) -> ir.Value:
        from jit.codegen import numerics

        b = lw.b
        first = b.load_atomic(address, "monotonic", dt.itemsize)
        before = b.block
        retry = b.append_basic_block("cas.retry")
        done = b.append_basic_block("cas.done")
        b.branch(retry)
        b.position_at_end(retry)
        old = b.phi(first.type)
        old.add_incoming(first, before)
        current = from_memory(b, old, dt)
        if kind == "add":
            new = numerics.round_to(b, b.fadd(current, value), dt)
        else:
            name = "llvm.maxnum" if kind == "max" else "llvm.minnum"
            new = b.call(intrinsic(lw.module, name, current.type, [current.type] * 2), [current, value])
        pair = b.cmpxchg(address, old, to_memory(b, new, dt), ordering, _FAIL_ORDERING[ordering])
        old.add_incoming(b.extract_value(pair, 0), b.block)
        b.cbranch(b.extract_value(pair, 1), done, retry)
        b.position_at_end(done)
        return current

    return emit

