"""tile.dot: acc + a @ b, accumulated per element in k order, with a register-blocked micro-kernel.

Operands are packed into row-major buffers of the compute type (f32, f64 or i32): narrow floats are
already f32 registers, tf32 operands get their low 13 mantissa bits cleared, int8 widens to i32.
The product is then computed as C[i, j] = fma(A[i, k], B[k, j], C[i, j]) for k = 0, 1, ...: the exact
product the op table asks for, one rounding per step into the accumulator's type, in k order, so
results do not depend on blocking. (For fp16/bf16/fp8/tf32 operands the f32 product is exact anyway.)

The bulk of C is covered by MR x NR micro-tiles held in vector registers across the whole k loop
(explicit LLVM vectors of 256 bits: 6 rows x 2 vectors, then one pass over the leftover rows); the
ragged right strip and tiny leftovers use plain i-k-j loops that LLVM vectorises over j.
"""

from __future__ import annotations

import llvmlite.ir as ir

from dsl.dtypes import dtype
from dsl.ir.core import Operation, TileType, Value
from dsl.ir.ops import OP
from jit.codegen import numerics
from jit.codegen.buffers import Buffer
from jit.codegen.llvm_types import F32, F64, I32, I64, intrinsic, is_narrow_float, register_type
from jit.codegen.loops import counted_loop, loop_nest

VECTOR_BYTES = 32
MR = 6  # rows per micro-tile: 6 x 2 accumulators hide the FMA latency (8 would just match it)
NV = 2  # vectors per micro-tile row


def emit_dot(lw, op: Operation) -> None:
    a, b_operand, acc = op.operands
    precision = op.attrs["input_precision"]
    acc_dt = acc.type.dtype
    compute = register_type(acc_dt)
    pa = _pack(lw, a, compute, precision)
    pb = _pack(lw, b_operand, compute, precision)
    c = _accumulator(lw, acc)
    *batch, m, k = a.type.shape
    n = b_operand.type.shape[-1]
    b = lw.b

    def one(idx: list[ir.Value]) -> None:
        bi = idx[0] if idx else ir.Constant(I64, 0)
        pa_base = b.gep(pa.ptr, [b.mul(bi, ir.Constant(I64, m * k))], inbounds=True)
        pb_base = b.gep(pb.ptr, [b.mul(bi, ir.Constant(I64, k * n))], inbounds=True)
        pc_base = b.gep(c.ptr, [b.mul(bi, ir.Constant(I64, m * n))], inbounds=True)
        _matmul(lw, pa_base, pb_base, pc_base, m, n, k, acc_dt)

    loop_nest(b, tuple(batch), one)
    lw.define(op.result, c, owned=True)


EMITTERS = {OP.TILE_DOT: emit_dot}


def _pack(lw, value: Value, compute: ir.Type, precision: str) -> Buffer:
    """A row-major buffer of the operand in the compute type (the operand's own buffer when it is one)."""
    dt = value.type.dtype
    b = lw.b
    truncate = dt.is_fp32() and precision == "tf32"
    if register_type(dt) == compute and not truncate:
        return lw.contiguous(value)
    packed = lw.new_buffer(TileType(_compute_dtype(compute), value.type.shape))

    def convert(idx: list[ir.Value]) -> ir.Value:
        x = lw.element(value, idx)
        if truncate:
            return numerics.tf32_truncate(b, x)
        if dt.is_floating():
            return b.fpext(x, compute) if compute == F64 and x.type != F64 else x
        if x.type.width < compute.width:
            return b.sext(x, compute) if dt.is_int_signed() else b.zext(x, compute)
        return x

    lw.fill(packed, convert)
    return packed


def _compute_dtype(ty: ir.Type) -> dtype:
    from dsl import dtypes

    return {F32: dtypes.float32, F64: dtypes.float64, I32: dtypes.int32}.get(ty, dtypes.int64)


def _accumulator(lw, acc: Value) -> Buffer:
    """The result buffer, starting as acc: acc's own buffer when nothing else can see it."""
    held = lw.buffers.get(acc)
    if held is not None and acc in lw.owned and lw.use_count.get(acc, 0) == 1 and held.contiguous:
        return held
    c = lw.new_buffer(acc.type)
    lw.store_into(c, acc)
    return c


def _matmul(lw, pa: ir.Value, pb: ir.Value, pc: ir.Value, m: int, n: int, k: int, acc_dt: dtype) -> None:
    compute = pc.type.pointee
    lanes = VECTOR_BYTES // (compute.width // 8 if isinstance(compute, ir.IntType) else
                             (8 if compute == F64 else 4))
    nr = NV * lanes
    n0 = 0 if is_narrow_float(acc_dt) else n - n % nr
    m0 = 0  # rows covered by micro-tiles: MR at a time, then one pass of the leftover rows if >= 3
    if n0:
        m0 = m - m % MR
        if m0:
            _micro_tiles(lw, pa, pb, pc, 0, m0, MR, n0, n, k, lanes)
        if m - m0 >= 3:
            _micro_tiles(lw, pa, pb, pc, m0, m - m0, m - m0, n0, n, k, lanes)
            m0 = m
    if n0 < n and m0:
        _strip(lw, pa, pb, pc, (0, m0), (n0, n), n, k, acc_dt)
    if m0 < m:
        _strip(lw, pa, pb, pc, (m0, m), (0, n), n, k, acc_dt)


def _multiply_add(b: ir.IRBuilder, c: ir.Value, a: ir.Value, x: ir.Value) -> ir.Value:
    """c + a * x: wrapping for integers, one rounding (llvm.fma, an exact product) for floats."""
    element = c.type.element if isinstance(c.type, ir.VectorType) else c.type
    if isinstance(element, ir.IntType):
        return b.add(c, b.mul(a, x))
    return b.call(intrinsic(b.module, "llvm.fma", c.type, [c.type] * 3), [a, x, c])


def _micro_tiles(lw, pa, pb, pc, row0: int, rows_total: int, mr: int, n0: int, n: int, k: int, lanes: int) -> None:
    """C[row0 : row0 + rows_total, :n0] by (mr x NV vectors) tiles kept in registers over the k loop."""
    b = lw.b
    compute = pc.type.pointee
    vec = ir.VectorType(compute, lanes)
    vptr = vec.as_pointer()
    align = compute.width // 8 if isinstance(compute, ir.IntType) else (8 if compute == F64 else 4)
    nr = NV * lanes
    zero_mask = ir.Constant(ir.VectorType(I32, lanes), [0] * lanes)

    def c_address(row: ir.Value, col: ir.Value) -> ir.Value:
        return b.bitcast(b.gep(pc, [b.add(b.mul(row, ir.Constant(I64, n)), col)], inbounds=True), vptr)

    def tile_row(ib: ir.Value, _) -> None:
        i0 = b.add(b.mul(ib, ir.Constant(I64, mr)), ir.Constant(I64, row0))

        def tile(jb: ir.Value, _) -> None:
            j0 = b.mul(jb, ir.Constant(I64, nr))
            rows = [b.add(i0, ir.Constant(I64, r)) for r in range(mr)]
            cols = [b.add(j0, ir.Constant(I64, v * lanes)) for v in range(NV)]
            start = [b.load(c_address(row, col), align=align) for row in rows for col in cols]

            def k_step(kk: ir.Value, accs: list[ir.Value]) -> list[ir.Value]:
                row_of_b = b.mul(kk, ir.Constant(I64, n))
                bv = [b.load(b.bitcast(b.gep(pb, [b.add(row_of_b, col)], inbounds=True), vptr), align=align)
                      for col in cols]
                out = []
                for r, row in enumerate(rows):
                    scalar = b.load(b.gep(pa, [b.add(b.mul(row, ir.Constant(I64, k)), kk)], inbounds=True))
                    splat = b.shuffle_vector(b.insert_element(ir.Constant(vec, ir.Undefined), scalar,
                                                              ir.Constant(I32, 0)), ir.Constant(vec, ir.Undefined),
                                             zero_mask)
                    for v in range(NV):
                        out.append(_multiply_add(b, accs[r * NV + v], splat, bv[v]))
                return out

            final = counted_loop(b, k, k_step, start, name="dot.k", scalar=True)  # vectorised by hand
            for (row, col), value in zip([(row, col) for row in rows for col in cols], final):
                b.store(value, c_address(row, col), align=align)

        counted_loop(b, n0 // nr, tile, name="dot.j", scalar=True)

    counted_loop(b, rows_total // mr, tile_row, name="dot.i", scalar=True)


def _strip(lw, pa, pb, pc, rows: tuple[int, int], cols: tuple[int, int], n: int, k: int, acc_dt: dtype) -> None:
    """C[rows, cols] += A[rows, :] @ B[:, cols] with i-k-j loops (vectorised over j by LLVM)."""
    b = lw.b
    narrow = is_narrow_float(acc_dt)

    def body(idx: list[ir.Value]) -> None:
        i = b.add(idx[0], ir.Constant(I64, rows[0]))
        j = b.add(idx[2], ir.Constant(I64, cols[0]))
        kk = idx[1]
        a = b.load(b.gep(pa, [b.add(b.mul(i, ir.Constant(I64, k)), kk)], inbounds=True))
        x = b.load(b.gep(pb, [b.add(b.mul(kk, ir.Constant(I64, n)), j)], inbounds=True))
        address = b.gep(pc, [b.add(b.mul(i, ir.Constant(I64, n)), j)], inbounds=True)
        value = _multiply_add(b, b.load(address), a, x)
        b.store(numerics.round_to(b, value, acc_dt) if narrow else value, address)

    loop_nest(b, (rows[1] - rows[0], k, cols[1] - cols[0]), body)
