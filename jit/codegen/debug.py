"""tile.print and tile.assert: the kernel's own voice at run time.

print packs every operand's elements, in order, as 8-byte values (floats as f64, integers sign- or
zero-extended, bools 0/1, pointers as addresses) and hands them to the runtime's callback.
assert checks all elements in a vectorisable pass and only looks for the first failing lane when
one failed.
"""

from __future__ import annotations

import llvmlite.ir as ir

from dsl.ir.core import Operation
from dsl.ir.ops import OP
from jit import abi
from jit.codegen.llvm_types import F64, I8, I64
from jit.codegen.loops import linear_index, loop_nest, row_major_strides

CALLBACK_TYPE = ir.FunctionType(ir.VoidType(), [I64, I64, I8.as_pointer(), I64])


def emit_print(lw, op: Operation) -> None:
    b = lw.b
    site = lw.add_site("print", op.loc, None, str(op.attrs.get("prefix", "")))
    total = sum(max(1, v.type.numel) for v in op.operands)
    data = lw.scratch(I64, total)
    start = 0
    for value in op.operands:
        dt = value.type.dtype
        shape = value.type.shape
        strides = row_major_strides(shape)

        def pack(idx: list[ir.Value], value=value, dt=dt, strides=strides, start=start) -> None:
            x = lw.element(value, idx)
            if dt.is_floating():
                x = b.bitcast(x if x.type == F64 else b.fpext(x, F64), I64)
            elif dt.is_ptr():
                x = b.ptrtoint(x, I64)
            elif x.type.width < 64:
                x = b.sext(x, I64) if dt.is_int_signed() else b.zext(x, I64)
            b.store(x, b.gep(data, [linear_index(b, idx, strides, start)], inbounds=True))

        loop_nest(b, shape, pack)
        start += max(1, value.type.numel)
    callback = lw.ctx_slot(abi.PRINT_CALLBACK)
    with b.if_then(b.icmp_unsigned("!=", callback, ir.Constant(I64, 0))):
        fn = b.inttoptr(callback, CALLBACK_TYPE.as_pointer())
        b.call(fn, [ir.Constant(I64, site), lw.pid_linear(), b.bitcast(data, I8.as_pointer()),
                    ir.Constant(I64, 8 * total)])


def emit_assert(lw, op: Operation) -> None:
    (cond,) = op.operands
    b = lw.b
    site = lw.add_site("assert", op.loc, None, str(op.attrs.get("message", "")))
    shape = cond.type.shape
    failed = lw.scratch(I8, 1)
    b.store(ir.Constant(I8, 0), failed)
    loop_nest(b, shape, lambda idx: b.store(
        b.or_(b.load(failed), b.zext(b.not_(lw.element(cond, idx)), I8)), failed))
    slow = b.append_basic_block("assert.failed")
    cont = b.append_basic_block("assert.ok")
    b.cbranch(b.icmp_unsigned("!=", b.load(failed), ir.Constant(I8, 0)), slow, cont).set_weights([1, 1 << 20])
    b.position_at_end(slow)
    strides = row_major_strides(shape)

    def find(idx: list[ir.Value]) -> None:
        with b.if_then(b.not_(lw.element(cond, idx)), likely=False):
            lw.fail(abi.ASSERT_FAILED, site, ir.Constant(I64, 0), ir.Constant(I64, -1),
                    linear_index(b, idx, strides))

    loop_nest(b, shape, find, scalar=True)
    b.branch(cont)
    b.position_at_end(cont)


EMITTERS = {OP.TILE_PRINT: emit_print, OP.TILE_ASSERT: emit_assert}
