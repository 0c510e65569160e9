"""Structured control flow: scf.for, scf.if, scf.while.

Scalar carried values are phis. Tile carried values live in buffers owned by the loop: inits are
copied in before the first iteration and yields copied back at the end of each one, through
temporaries when a yield reads a buffer the same yield overwrites (yield(b, a)).
scf.for follows Python's range(lb, ub, step) for either sign of step (0 runs no iterations): the trip
count is computed up front, so the loop is a plain counted loop and never overflows its bound.
"""

from __future__ import annotations

import llvmlite.ir as ir

from dsl.ir.core import Operation, Value
from dsl.ir.ops import OP
from jit.codegen import instrument
from jit.codegen.buffers import Buffer
from jit.codegen.llvm_types import I64, register_type
from jit.codegen.loops import counted_loop


def emit_for(lw, op: Operation) -> None:
    lb, ub, step, *inits = op.operands
    body = op.regions[0]
    b = lw.b
    dt = lb.type.dtype
    lb64, ub64, step64 = (_widen(b, lw.scalars[v], dt) for v in (lb, ub, step))
    trip = _trip_count(b, lb64, ub64, step64, dt.is_int_signed())
    carried_args = body.args[1:]
    tiles = _carried_buffers(lw, carried_args, inits)
    scalar_args = [a for a in carried_args if a.type.is_scalar]

    def iteration(k: ir.Value, values: list[ir.Value]) -> list[ir.Value]:
        iv = b.add(lb64, b.mul(k, step64))
        lw.scalars[body.args[0]] = iv if dt.primitive_bitwidth == 64 else b.trunc(iv, register_type(dt))
        for arg, value in zip(scalar_args, values):
            lw.scalars[arg] = value
        instrument.count(lw, op, kind="iteration")
        lw.emit_block(body)
        yields = body.terminator.operands
        assign(lw, [(tiles[a], y) for a, y in zip(carried_args, yields) if a in tiles])
        lw.poll_cancel()
        return [lw.scalars[y] for a, y in zip(carried_args, yields) if a.type.is_scalar]

    finals = counted_loop(b, trip, iteration, [lw.scalars[v] for a, v in zip(carried_args, inits)
                                                if a.type.is_scalar], name="for")
    finals_iter = iter(finals)
    for arg, result in zip(carried_args, op.results):
        if arg in tiles:
            lw.bind(result, tiles[arg], owned=True)
        else:
            lw.scalars[result] = next(finals_iter)


def emit_if(lw, op: Operation) -> None:
    b = lw.b
    results = op.results
    tiles = {r: lw.new_buffer(r.type) for r in results if not r.type.is_scalar}
    branches = [b.append_basic_block("if.then"), b.append_basic_block("if.else")]
    merge = b.append_basic_block("if.end")
    b.cbranch(lw.scalars[op.operands[0]], *branches)
    incoming = []
    for region, block in zip(op.regions, branches):
        b.position_at_end(block)
        lw.emit_block(region)
        yields = region.terminator.operands
        for result, value in zip(results, yields):
            if result in tiles:
                lw.store_into(tiles[result], value)
        incoming.append(([lw.scalars[v] for r, v in zip(results, yields) if r.type.is_scalar], b.block))
        b.branch(merge)
    b.position_at_end(merge)
    scalar_results = [r for r in results if r.type.is_scalar]
    for i, result in enumerate(scalar_results):
        phi = b.phi(register_type(result.type.dtype))
        for values, block in incoming:
            phi.add_incoming(values[i], block)
        lw.scalars[result] = phi
    for result, buf in tiles.items():
        lw.bind(result, buf, owned=True)


def emit_while(lw, op: Operation) -> None:
    before, after = op.regions
    b = lw.b
    tiles = _carried_buffers(lw, before.args, op.operands)
    pre = b.block
    header = b.append_basic_block("while.before")
    body = b.append_basic_block("while.after")
    exit_block = b.append_basic_block("while.end")
    b.branch(header)
    b.position_at_end(header)
    phis = {}
    for arg, init in zip(before.args, op.operands):
        if arg.type.is_scalar:
            phi = phis[arg] = b.phi(register_type(arg.type.dtype))
            phi.add_incoming(lw.scalars[init], pre)
            lw.scalars[arg] = phi
    lw.emit_block(before)
    condition = before.terminator
    forwarded = [_storage(lw, v) for v in condition.operands[1:]]
    b.cbranch(lw.scalars[condition.operands[0]], body, exit_block)

    b.position_at_end(body)
    _bind_all(lw, after.args, forwarded)
    instrument.count(lw, op, kind="iteration")
    lw.emit_block(after)
    yields = after.terminator.operands
    assign(lw, [(tiles[a], y) for a, y in zip(before.args, yields) if a in tiles])
    lw.poll_cancel()
    for arg, value in zip(before.args, yields):
        if arg in phis:
            phis[arg].add_incoming(lw.scalars[value], b.block)
    b.branch(header)

    b.position_at_end(exit_block)
    _bind_all(lw, op.results, forwarded)


EMITTERS = {OP.SCF_FOR: emit_for, OP.SCF_IF: emit_if, OP.SCF_WHILE: emit_while}


def assign(lw, pairs: list[tuple[Buffer, Value]]) -> None:
    """Copy each value into its carried buffer, as if all copies happened at once."""
    pending = [(dst, src) for dst, src in pairs if lw.buffers.get(src) != dst]
    roots = {dst.root for dst, _ in pending}
    staged: list[tuple[Buffer, Value | Buffer]] = []
    for dst, src in pending:
        held = lw.buffers.get(src)
        if held is not None and held.root in roots:
            tmp = lw.new_buffer(src.type)
            lw.fill(tmp, lambda idx, held=held: held.load(lw.b, idx))
            staged.append((dst, tmp))
        else:
            staged.append((dst, src))
    for dst, src in staged:
        if isinstance(src, Buffer):
            lw.fill(dst, lambda idx, src=src: src.load(lw.b, idx))
        else:
            lw.store_into(dst, src)


def _carried_buffers(lw, args: list[Value], inits: list[Value]) -> dict[Value, Buffer]:
    """A loop-owned buffer per tile argument, holding its init."""
    tiles = {}
    for arg, init in zip(args, inits):
        if not arg.type.is_scalar:
            tiles[arg] = lw.new_buffer(arg.type)
            lw.store_into(tiles[arg], init)
            lw.bind(arg, tiles[arg], owned=True)
    return tiles


def _storage(lw, value: Value):
    return lw.scalars[value] if value.type.is_scalar else lw.materialize(value)


def _bind_all(lw, targets: list[Value], sources: list) -> None:
    for target, source in zip(targets, sources):
        if isinstance(source, Buffer):
            lw.bind(target, source, owned=False)
        else:
            lw.scalars[target] = source


def _widen(b: ir.IRBuilder, value: ir.Value, dt) -> ir.Value:
    if isinstance(value, ir.Constant):  # keep constants constant, so constant bounds give a constant trip
        v = _const(value, dt.is_int_signed()) & ((1 << 64) - 1)
        return ir.Constant(I64, v - (1 << 64) if v >= 1 << 63 else v)
    if dt.primitive_bitwidth == 64:
        return value
    return b.sext(value, I64) if dt.is_int_signed() else b.zext(value, I64)


def _trip_count(b: ir.IRBuilder, lb: ir.Value, ub: ir.Value, step: ir.Value, signed: bool) -> int | ir.Value:
    """len(range(lb, ub, step)) as i64 (0 for step 0); an int when all three are constants."""
    if all(isinstance(v, ir.Constant) for v in (lb, ub, step)):
        lo, hi, st = (_const(v, signed) for v in (lb, ub, step))
        if not signed:
            lo, hi, st = (v & ((1 << 64) - 1) for v in (lo, hi, st))
        return len(range(lo, hi, st)) if st else 0
    zero, one = ir.Constant(I64, 0), ir.Constant(I64, 1)
    safe_step = b.select(b.icmp_unsigned("==", step, zero), one, step)
    up = b.add(b.udiv(b.sub(b.sub(ub, lb), one), safe_step), one)
    if not signed:
        runs = b.and_(b.icmp_unsigned("!=", step, zero), b.icmp_unsigned("<", lb, ub))
        return b.select(runs, up, zero)
    down = b.add(b.udiv(b.sub(b.sub(lb, ub), one), b.sub(zero, safe_step)), one)
    up = b.select(b.icmp_signed("<", lb, ub), up, zero)
    down = b.select(b.icmp_signed(">", lb, ub), down, zero)
    return b.select(b.icmp_signed(">", step, zero), up, b.select(b.icmp_signed("<", step, zero), down, zero))


def _const(value: ir.Constant, signed: bool) -> int:
    v = int(value.constant)
    width = value.type.width
    v &= (1 << width) - 1
    return v - (1 << width) if signed and v >= 1 << (width - 1) else v
