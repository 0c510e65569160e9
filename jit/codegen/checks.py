"""Bounds and alignment checks of global memory accesses, and the lane statistics they share.

A check is two-phase. The fast phase folds the active lanes into a few numbers in one vectorisable
pass, then compares them with the buffer (or, when the pointer's origin is unknown, looks the range
up among all registered buffers). Only when that fails does a scalar loop find the first bad lane,
write the error record, and return the error code from the program.

For pointers of the form `base + offsets` (pointer_base), the pass computes min and max of the integer
offsets, which vectorise as native 32-bit min/max, and alignment is a property of the base alone.
Accesses in one block that share offsets and mask (x + offs, y + offs, out + offs under one mask)
share one pass: statistics are cached per block.
"""

from __future__ import annotations

from dataclasses import dataclass

import llvmlite.ir as ir

from dsl.ir.core import Value
from jit import abi
from jit.codegen import ranges
from jit.codegen.addresses import element_offset, offset_key, offset_terms, pointer_base
from jit.codegen.llvm_types import I1, I8, I32, I64, intrinsic, register_type
from jit.codegen.loops import linear_index, loop_nest, row_major_strides

_UINT64_MAX = ir.Constant(I64, -1)
_TRUE = ir.Constant(I1, 1)


@dataclass(frozen=True)
class OffsetStats:
    any_on: ir.Value  # i1: some lane is active
    lo: ir.Value | None  # i64 smallest / largest active offset, None when there are no offsets
    hi: ir.Value | None


def access_check(lw, shape: tuple[int, ...], ptr: Value, mask: Value | None, size: int, site: int) -> None:
    """Fail the program unless every active lane's `size`-byte element lies inside the pointer's buffer
    and is aligned to `size`."""
    if not lw.checks:
        return
    b = lw.b
    buffer = lw.provenance.buffer(ptr)
    cont = b.append_basic_block("check.ok")
    envelope = _envelope(lw, ptr, size)
    if envelope is not None:  # cheap and usually enough: the exact pass runs only when it is not
        first, end, bits, valid = envelope
        exact = b.append_basic_block("check.exact")
        fits = b.and_(valid, _inside(lw, buffer, first, end, bits, size))
        b.cbranch(b.or_(fits, b.not_(lw.checks_on)), cont, exact).set_weights([1 << 20, 1])
        b.position_at_end(exact)
    # in a conditional block when there is an envelope: its values must not be cached for later ops
    any_on, first, end, bits = _bounds(lw, shape, ptr, mask, size, cached=envelope is None)
    ok = b.or_(b.or_(b.not_(any_on), _inside(lw, buffer, first, end, bits, size)), b.not_(lw.checks_on))
    slow = b.append_basic_block("check.slow")
    b.cbranch(ok, cont, slow).set_weights([1 << 20, 1])
    b.position_at_end(slow)
    _find_bad_lane(lw, shape, ptr, mask, size, buffer, site)
    b.branch(cont)
    b.position_at_end(cont)


def _inside(lw, buffer: int | None, first: ir.Value, end: ir.Value, bits: ir.Value, size: int) -> ir.Value:
    """i1: bytes [first, end) lie in the buffer (in some registered buffer when `buffer` is None) and the
    low bits of `bits` show `size`-byte alignment."""
    b = lw.b
    if buffer is not None:
        start, nbytes = buffer_bounds(lw, ir.Constant(I64, buffer))
        inside = b.and_(b.icmp_signed(">=", b.sub(first, start), ir.Constant(I64, 0)),
                        b.icmp_signed("<=", b.sub(end, start), nbytes))
    else:
        inside = b.icmp_signed(">=", lw.find_buffer(first, end), ir.Constant(I64, 0))
    if size > 1:
        aligned = b.icmp_unsigned("==", b.and_(bits, ir.Constant(I64, size - 1)), ir.Constant(I64, 0))
        inside = b.and_(inside, aligned)
    return inside


def _envelope(lw, ptr: Value, size: int):
    """(first byte, end byte, alignment bits, valid) bounding every lane, masked or not, of a `base + offsets`
    pointer (when `valid`), or None for other pointers. The sum of the offset terms' minima bounds the
    smallest lane from below and the sum of their maxima the largest from above; each term's bounds come
    from its construction (jit.codegen.ranges) or from the small tile it was broadcast from (a 64x32 tile
    of row + column offsets costs 64 + 32 lanes, not 2048)."""
    base = pointer_base(lw, ptr)
    terms = offset_terms(ptr) if base is not None else []
    if base is None or any(t.type.dtype.primitive_bitwidth > 32 for t in terms):
        return None  # sums of 64-bit terms could wrap; the exact pass handles those
    b = lw.b
    lo = hi = ir.Constant(I64, 0)
    valid = _TRUE
    for term in terms:
        term_lo, term_hi, term_valid = _term_range(lw, term)
        lo, hi, valid = b.add(lo, term_lo), b.add(hi, term_hi), b.and_(valid, term_valid)
    base_address = b.ptrtoint(lw.scalars[base], I64)
    step = ir.Constant(I64, size)
    first = b.add(base_address, b.mul(lo, step))
    end = b.add(base_address, b.mul(b.add(hi, ir.Constant(I64, 1)), step))
    return first, end, base_address, valid


def _term_range(lw, term: Value) -> tuple[ir.Value, ir.Value, ir.Value]:
    """(min, max, valid) of an integer offset tile as i64: from its construction when possible, else a pass
    over the tile it repeats (cached per block)."""
    bounds = ranges.interval(lw, term)
    if bounds is not None:
        return bounds.lo, bounds.hi, bounds.valid
    while term.op is not None and term.op.name in ranges.SAME_VALUES:
        term = term.op.operands[0]
    key = (lw.block_key, "range", term)
    if key not in lw.cache:
        signed = term.type.dtype.is_int_signed()
        if term.type.is_scalar:
            low = high = lw.scalars[term]
        else:
            ty = register_type(term.type.dtype)
            low, high, _ = _min_max(lw, term.type.shape, lambda idx: lw.element(term, idx), None, signed, ty,
                                    masked=False)
        lw.cache[key] = (*_widen(lw.b, low, high, signed), _TRUE)
    return lw.cache[key]


def _unless(lw, known: ir.Value, values: list[ir.Value], compute) -> list[ir.Value]:
    """`values` where the i1 `known` holds, else what `compute()` returns, computed only then."""
    b = lw.b
    first = b.block
    with b.if_then(b.not_(known), likely=False):
        computed = compute()
        second = b.block
    merged = []
    for value, other in zip(values, computed):
        phi = b.phi(value.type)
        phi.add_incoming(value, first)
        phi.add_incoming(other, second)
        merged.append(phi)
    return merged


def byte_range(lw, shape: tuple[int, ...], ptr: Value, mask: Value | None, size: int):
    """(some lane may be active, first byte, end byte), covering at least the active lanes' elements."""
    envelope = _envelope(lw, ptr, size)
    if envelope is None:
        any_on, first, end, _ = _bounds(lw, shape, ptr, mask, size)
        return any_on, first, end
    first, end, _, valid = envelope

    def exact():
        any_on, exact_first, exact_end, _ = _bounds(lw, shape, ptr, mask, size, cached=False)
        return [any_on, exact_first, exact_end]

    return tuple(_unless(lw, valid, [_TRUE, first, end], exact))


def _bounds(lw, shape, ptr: Value, mask: Value | None, size: int, cached: bool = True):
    """(any lane active, first byte, end byte, bits whose low bits give the alignment)."""
    base = pointer_base(lw, ptr)
    if base is None:
        return _address_bounds(lw, shape, ptr, mask, size)
    b = lw.b
    stats = offset_stats(lw, shape, ptr, mask) if cached else _offset_pass(lw, shape, ptr, mask, cached=False)
    base_address = b.ptrtoint(lw.scalars[base], I64)
    step = ir.Constant(I64, size)
    if stats.lo is None:
        return stats.any_on, base_address, b.add(base_address, step), base_address
    first = b.add(base_address, b.mul(stats.lo, step))
    end = b.add(base_address, b.mul(b.add(stats.hi, ir.Constant(I64, 1)), step))
    if _may_wrap(ptr):  # offsets whose byte distance wraps 64 bits are outside every buffer: say so
        limit = abi.WRAP_LIMIT_BYTES // size
        fits = b.and_(b.icmp_signed(">=", stats.lo, ir.Constant(I64, -limit)),
                      b.icmp_signed("<", stats.hi, ir.Constant(I64, limit)))
        first, end = b.select(fits, first, ir.Constant(I64, 0)), b.select(fits, end, ir.Constant(I64, 0))
    return stats.any_on, first, end, base_address


def _may_wrap(ptr: Value) -> bool:
    """Whether some offset term of a `base + offsets` pointer is 64-bit (or several terms add up in i64)."""
    terms = offset_terms(ptr)
    return len(terms) > 1 or any(t.type.dtype.primitive_bitwidth >= 64 for t in terms)


def all_active(lw, shape: tuple[int, ...], mask: Value) -> ir.Value:
    """i1: every lane of the mask is on (cached per block): proven from the mask's construction when it can
    be (jit.codegen.ranges), else by an and-reduction pass."""
    key = (lw.block_key, "all", mask)
    if key not in lw.cache:
        proven = ranges.provably_all_on(lw, mask)
        if proven is None:
            lw.cache[key] = _reduce_mask(lw, shape, mask, any_lane=False)
        else:  # the pass runs only when the proof fails (partial tiles): a scalar loop, cheap to compile
            exact = lambda: [_reduce_mask(lw, shape, mask, any_lane=False, scalar=True)]  # noqa: E731
            lw.cache[key] = _unless(lw, proven, [_TRUE], exact)[0]
    return lw.cache[key]


def offset_stats(lw, shape: tuple[int, ...], ptr: Value, mask: Value | None) -> OffsetStats:
    """Min and max active offset of a `base + offsets` pointer, and whether any or all lanes are on."""
    key = (lw.block_key, "offsets", offset_key(ptr), mask)
    if key not in lw.cache:
        lw.cache[key] = _offset_pass(lw, shape, ptr, mask)
    return lw.cache[key]


def _offset_pass(lw, shape, ptr: Value, mask: Value | None, cached: bool = True) -> OffsetStats:
    """Min/max of the offsets over all lanes and, in the same pass, whether every lane is on; only when
    some lane is off does a second pass take min/max over the active lanes (selects cost as much as
    the rest of the pass, and most programs have every lane on). `cached`: share the all-on bit with
    later ops of the block (only where this code dominates them); uncached passes are on cold paths and
    compile as scalar loops."""
    b = lw.b
    terms = offset_terms(ptr)
    if not terms:
        any_on = _TRUE if mask is None else _reduce_mask(lw, shape, mask, any_lane=True, scalar=not cached)
        return OffsetStats(any_on, None, None)
    wide = len(terms) > 1
    signed = wide or terms[0].type.dtype.is_int_signed()
    ty = I64 if wide else register_type(terms[0].type.dtype)
    offsets = lambda idx: element_offset(lw, ptr, idx, wide)  # noqa: E731
    lo, hi, all_on = _min_max(lw, shape, offsets, mask, signed, ty, masked=False, scalar=not cached)
    if all_on is None:
        return OffsetStats(_TRUE, *_widen(b, lo, hi, signed))
    if cached:
        lw.cache[(lw.block_key, "all", mask)] = all_on
    lo, hi = _unless(lw, all_on, [lo, hi],
                     lambda: _min_max(lw, shape, offsets, mask, signed, ty, masked=True, scalar=True)[:2])
    any_on = b.icmp_signed("<=", lo, hi) if signed else b.icmp_unsigned("<=", lo, hi)
    return OffsetStats(any_on, *_widen(b, lo, hi, signed))


def _min_max(lw, shape, offsets, mask: Value | None, signed: bool, ty: ir.IntType, masked: bool,
             scalar: bool = False):
    """One pass: (min, max) of `offsets(lane index)` (of active lanes only when `masked`), and the and of
    the mask over all lanes (None without a mask, or when `masked`)."""
    b = lw.b
    top, bottom = _extremes(ty, signed)
    lo_slot, hi_slot = lw.scratch(ty, 1), lw.scratch(ty, 1)
    b.store(top, lo_slot)
    b.store(bottom, hi_slot)
    all_slot = None
    if mask is not None and not masked:
        all_slot = lw.scratch(I8, 1)
        b.store(ir.Constant(I8, 1), all_slot)
    smallest = intrinsic(lw.module, "llvm.smin" if signed else "llvm.umin", ty, [ty, ty])
    largest = intrinsic(lw.module, "llvm.smax" if signed else "llvm.umax", ty, [ty, ty])

    def lane(idx: list[ir.Value]) -> None:
        offset = offsets(idx)
        low = high = offset
        if masked:
            active = lw.element(mask, idx)
            low, high = b.select(active, offset, top), b.select(active, offset, bottom)
        elif all_slot is not None:
            b.store(b.and_(b.load(all_slot), b.zext(lw.element(mask, idx), I8)), all_slot)
        b.store(b.call(smallest, [b.load(lo_slot), low]), lo_slot)
        b.store(b.call(largest, [b.load(hi_slot), high]), hi_slot)

    loop_nest(b, shape, lane, scalar=scalar)
    all_on = None if all_slot is None else b.icmp_unsigned("!=", b.load(all_slot), ir.Constant(I8, 0))
    return b.load(lo_slot), b.load(hi_slot), all_on


def _widen(b: ir.IRBuilder, lo: ir.Value, hi: ir.Value, signed: bool) -> tuple[ir.Value, ir.Value]:
    if lo.type.width < 64:
        extend = b.sext if signed else b.zext
        return extend(lo, I64), extend(hi, I64)
    return lo, hi


def _extremes(ty: ir.IntType, signed: bool) -> tuple[ir.Constant, ir.Constant]:
    """(largest, smallest) value of the type: the identities of min and max."""
    if signed:
        return ir.Constant(ty, (1 << (ty.width - 1)) - 1), ir.Constant(ty, -(1 << (ty.width - 1)))
    return ir.Constant(ty, -1), ir.Constant(ty, 0)


def _reduce_mask(lw, shape, mask: Value, any_lane: bool, scalar: bool = False) -> ir.Value:
    """i1: some lane is on (or-reduction) or every lane is on (and-reduction), in one pass."""
    b = lw.b
    slot = lw.scratch(I8, 1)
    b.store(ir.Constant(I8, 0 if any_lane else 1), slot)

    def lane(idx: list[ir.Value]) -> None:
        bit = b.zext(lw.element(mask, idx), I8)
        b.store(b.or_(b.load(slot), bit) if any_lane else b.and_(b.load(slot), bit), slot)

    loop_nest(b, shape, lane, scalar=scalar)
    return b.icmp_unsigned("!=", b.load(slot), ir.Constant(I8, 0))


def _address_bounds(lw, shape, ptr: Value, mask: Value | None, size: int):
    """(any lane active, first byte, end byte, or of all addresses) over full 64-bit lane addresses,
    for pointer tiles that are not one base plus offsets (loaded or stored pointers)."""
    b = lw.b
    slots = [lw.scratch(I64, 1) for _ in range(3)]
    for slot, init in zip(slots, (_UINT64_MAX, ir.Constant(I64, 0), ir.Constant(I64, 0))):
        b.store(init, slot)
    umin = intrinsic(lw.module, "llvm.umin", I64, [I64, I64])
    umax = intrinsic(lw.module, "llvm.umax", I64, [I64, I64])

    def lane(idx: list[ir.Value]) -> None:
        address = b.ptrtoint(lw.element(ptr, idx), I64)
        low, high, ored = address, address, address
        if mask is not None:
            active = lw.element(mask, idx)
            low = b.select(active, address, _UINT64_MAX)
            high = ored = b.select(active, address, ir.Constant(I64, 0))
        b.store(b.call(umin, [b.load(slots[0]), low]), slots[0])
        b.store(b.call(umax, [b.load(slots[1]), high]), slots[1])
        b.store(b.or_(b.load(slots[2]), ored), slots[2])

    loop_nest(b, shape, lane)
    lo, hi, bits = (b.load(slot) for slot in slots)
    return b.icmp_unsigned("<=", lo, hi), lo, b.add(hi, ir.Constant(I64, size)), bits


def buffer_bounds(lw, index: ir.Value) -> tuple[ir.Value, ir.Value]:
    """(base address, size in bytes) of registered buffer `index`."""
    b = lw.b
    table = lw.ctx_pointer(abi.BUFFERS)
    two = b.mul(index, ir.Constant(I64, 2))
    return b.load(b.gep(table, [two])), b.load(b.gep(table, [b.add(two, ir.Constant(I64, 1))]))


def _find_bad_lane(lw, shape, ptr: Value, mask: Value | None, size: int, buffer: int | None, site: int) -> None:
    """The slow path: scan lanes in order; the first out-of-bounds or misaligned one fails the program.
    Lanes of an unknown-provenance pointer that straddle buffers but are each inside one pass."""
    b = lw.b
    strides = row_major_strides(shape)

    def lane(idx: list[ir.Value]) -> None:
        address = b.ptrtoint(lw.element(ptr, idx), I64)
        end = b.add(address, ir.Constant(I64, size))
        if buffer is not None:
            found = ir.Constant(I64, buffer)
            base, nbytes = buffer_bounds(lw, found)
            outside = b.not_(b.and_(b.icmp_unsigned(">=", address, base),
                                    b.icmp_unsigned("<=", end, b.add(base, nbytes))))
        else:
            found = lw.find_buffer(address, end)
            outside = b.icmp_signed("<", found, ir.Constant(I64, 0))
            before = b.block
            with b.if_then(b.not_(outside)):  # the table may be empty: read it only for a found buffer
                known, _ = buffer_bounds(lw, found)
                known_in = b.block
            base = b.phi(I64)
            base.add_incoming(known, known_in)
            base.add_incoming(ir.Constant(I64, 0), before)
        misaligned = b.icmp_unsigned("!=", b.and_(address, ir.Constant(I64, size - 1)), ir.Constant(I64, 0))
        bad = b.or_(outside, misaligned)
        if mask is not None:
            bad = b.and_(bad, lw.element(mask, idx))
        with b.if_then(bad, likely=False):
            code = b.select(outside, ir.Constant(I32, abi.OUT_OF_BOUNDS), ir.Constant(I32, abi.MISALIGNED))
            offset = b.sdiv(b.sub(address, base), ir.Constant(I64, size))
            if buffer is None:
                offset = b.select(outside, address, offset)
            lw.fail(code, site, offset, found, linear_index(b, idx, strides))

    loop_nest(b, shape, lane, scalar=True)
