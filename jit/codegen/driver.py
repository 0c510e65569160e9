"""The module's fixed parts: the exported grid entry (abi.ENTRY), the error-record writer and the
buffer lookup used by checks whose pointer provenance is unknown.

The entry takes chunks of linear program ids from the shared counter in the context, so any number of
threads can run one launch; the first failing program stops the others by moving the counter past
the end of the grid.
"""

from __future__ import annotations

import llvmlite.ir as ir

from jit import abi
from jit.codegen.llvm_types import I32, I64
from jit.codegen.loops import counted_loop

I64P = I64.as_pointer()
PROGRAM_TYPE = ir.FunctionType(I32, [I64P, I64, I64, I64])  # (ctx, pid x, pid y, pid z) -> error code
FAIL_TYPE = ir.FunctionType(I32, [I64P, I32, I64, I64, I64, I64, I64, I64, I64])


def ctx_load(b: ir.IRBuilder, ctx: ir.Value, slot: int) -> ir.Value:
    return b.load(b.gep(ctx, [ir.Constant(I64, slot)], inbounds=True))


def ctx_pointer(b: ir.IRBuilder, ctx: ir.Value, slot: int, ty: ir.Type = I64P) -> ir.Value:
    return b.inttoptr(ctx_load(b, ctx, slot), ty)


def cancel_counter(b: ir.IRBuilder, ctx: ir.Value) -> ir.Value:
    """i64* the interrupt counter (abi.CANCEL), or the CANCEL_SEEN slot itself when a context has none."""
    address = ctx_load(b, ctx, abi.CANCEL)
    own = b.gep(ctx, [ir.Constant(I64, abi.CANCEL_SEEN)], inbounds=True)
    return b.select(b.icmp_unsigned("!=", address, ir.Constant(I64, 0)), b.inttoptr(address, I64P), own)


def cancel_requested(b: ir.IRBuilder, counter: ir.Value, seen: ir.Value) -> ir.Value:
    """i1: the interrupt counter moved since the launch started (Ctrl-C)."""
    return b.icmp_signed("!=", b.load_atomic(counter, "monotonic", 8), seen)


def define_grid(module: ir.Module, program: ir.Function) -> ir.Function:
    """i32 wavetile_grid(i64* ctx): run programs from the shared counter until the grid is done."""
    fn = ir.Function(module, ir.FunctionType(I32, [I64P]), name=abi.ENTRY)
    (ctx,) = fn.args
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    gx, gy, gz = (ctx_load(b, ctx, s) for s in (abi.GRID_X, abi.GRID_Y, abi.GRID_Z))
    gxy = b.mul(gx, gy)
    grid_total = b.mul(gxy, gz)
    subset = ctx_load(b, ctx, abi.PROGRAM_COUNT)
    total = b.select(b.icmp_signed(">", subset, ir.Constant(I64, 0)), subset, grid_total)
    counter = ctx_pointer(b, ctx, abi.NEXT_PID)
    raw_chunk = ctx_load(b, ctx, abi.CHUNK)
    chunk = b.select(b.icmp_signed(">", raw_chunk, ir.Constant(I64, 0)), raw_chunk, ir.Constant(I64, 1))
    order = ctx_pointer(b, ctx, abi.PID_ORDER)
    has_order = b.icmp_unsigned("!=", b.ptrtoint(order, I64), ir.Constant(I64, 0))
    interrupts, seen = cancel_counter(b, ctx), ctx_load(b, ctx, abi.CANCEL_SEEN)

    take = fn.append_basic_block("take")
    run = fn.append_basic_block("run")
    done = fn.append_basic_block("done")
    failed = fn.append_basic_block("failed")
    cancelled = fn.append_basic_block("cancelled")
    b.branch(take)

    b.position_at_end(take)
    start = b.atomic_rmw("add", counter, chunk, "monotonic")
    b.cbranch(b.icmp_signed(">=", start, total), done, run)

    b.position_at_end(run)
    end = b.add(start, chunk)
    end = b.select(b.icmp_signed("<", end, total), end, total)
    # the loop over the chunk, written out so that a failure can leave it
    loop = fn.append_basic_block("program")
    next_block = fn.append_basic_block("next")
    pre = b.block
    b.branch(loop)
    b.position_at_end(loop)
    p = b.phi(I64)
    p.add_incoming(start, pre)
    with b.if_else(has_order) as (then, otherwise):
        with then:
            then_block = b.block
            mapped = b.load(b.gep(order, [p]))
        with otherwise:
            else_block = b.block
    pid = b.phi(I64)
    pid.add_incoming(mapped, then_block)
    pid.add_incoming(p, else_block)
    x = b.srem(pid, gx)
    rest = b.sdiv(pid, gx)
    y = b.srem(rest, gy)
    z = b.sdiv(pid, gxy)
    rc = b.call(program, [ctx, x, y, z])
    b.cbranch(b.icmp_unsigned("!=", rc, ir.Constant(I32, 0)), failed, next_block)

    b.position_at_end(next_block)
    p_next = b.add(p, ir.Constant(I64, 1))
    more = fn.append_basic_block("more")
    p.add_incoming(p_next, more)
    b.cbranch(cancel_requested(b, interrupts, seen), cancelled, more)
    b.position_at_end(more)
    b.cbranch(b.icmp_signed("<", p_next, end), loop, take)

    b.position_at_end(failed)
    b.store_atomic(total, counter, "monotonic", 8)
    b.ret(rc)

    b.position_at_end(cancelled)
    b.store_atomic(total, counter, "monotonic", 8)
    b.ret(ir.Constant(I32, abi.CANCELLED))

    b.position_at_end(done)
    b.ret(ir.Constant(I32, 0))
    return fn


def define_fail(module: ir.Module) -> ir.Function:
    """i32 fail(ctx, code, site, pid x, y, z, offset, buffer, lane): write the error record, return code.

    Only the first failure of a launch writes the record (a compare-and-swap on the code slot), so
    concurrent failures never interleave their fields.
    """
    fn = ir.Function(module, FAIL_TYPE, name="wavetile_fail")
    fn.linkage = "internal"
    fn.attributes.add("noinline")
    fn.attributes.add("cold")
    ctx, code, *fields = fn.args
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    record = ctx_pointer(b, ctx, abi.ERROR)
    code64 = b.zext(code, I64)
    won = b.extract_value(b.cmpxchg(record, ir.Constant(I64, 0), code64, "seq_cst", "seq_cst"), 1)
    with b.if_then(won):
        slots = (abi.ERR_SITE, abi.ERR_PID_X, abi.ERR_PID_Y, abi.ERR_PID_Z, abi.ERR_OFFSET, abi.ERR_BUFFER,
                 abi.ERR_LANE)
        for slot, value in zip(slots, fields):
            b.store(value, b.gep(record, [ir.Constant(I64, slot)]))
    b.ret(code)
    return fn


def define_find_buffer(module: ir.Module) -> ir.Function:
    """i64 find_buffer(ctx, lo, end): index of a registered buffer holding [lo, end), or -1."""
    fn = ir.Function(module, ir.FunctionType(I64, [I64P, I64, I64]), name="wavetile_find_buffer")
    fn.linkage = "internal"
    fn.attributes.add("noinline")
    ctx, lo, end = fn.args
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    table = ctx_pointer(b, ctx, abi.BUFFERS)
    count = ctx_load(b, ctx, abi.N_BUFFERS)

    def probe(i: ir.Value, carried: list[ir.Value]) -> list[ir.Value]:
        (found,) = carried
        base = b.load(b.gep(table, [b.mul(i, ir.Constant(I64, 2))]))
        size = b.load(b.gep(table, [b.add(b.mul(i, ir.Constant(I64, 2)), ir.Constant(I64, 1))]))
        inside = b.and_(b.icmp_unsigned(">=", lo, base), b.icmp_unsigned("<=", end, b.add(base, size)))
        first = b.and_(inside, b.icmp_signed("<", found, ir.Constant(I64, 0)))
        return [b.select(first, i, found)]

    (found,) = counted_loop(b, count, probe, [ir.Constant(I64, -1)], name="probe")
    b.ret(found)
    return fn
