"""Lowering a verified tile IR function to an LLVM module: the entry point and the op dispatch table.

The stages, in order:
  1. analyse: which tile values are fused into their consumer (fusion) and which pointer argument
     each pointer derives from (provenance);
  2. emit the program function `i32 program(ctx, pid_x, pid_y, pid_z)`: decode the arguments from the
     context, then lower the body op by op through EMITTERS;
  3. emit the exported grid driver (abi.ENTRY) that runs programs from the shared counter.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import llvmlite.binding as llvm
import llvmlite.ir as ir

from dsl.ir.core import Function, Operation, Value
from dsl.ir.ops import OP, OPS
from jit import abi
from jit.codegen import atomic_access, control, debug, dot, driver, elements, fusion, mapped, memory, reduce, shapes
from jit.codegen.context import Lowering
from jit.codegen.llvm_types import F32, F64, I32, I64, is_narrow_float, register_type
from jit.codegen.numerics import decode


@dataclass
class CodegenOptions:
    checks: bool = True  # bounds and alignment checks on global memory ops
    instrument: bool = False  # op counters and address traces for the simulator (jit.codegen.instrument)


@dataclass
class LoweredModule:
    llvm_ir: str
    sites: list[abi.Site]
    stack_bytes: int = 0  # the program's stack frame (tile buffers), so callers can size thread stacks
    probes: list[dict] = field(default_factory=list)  # instrumented variants: one entry per probe


def lower(func: Function, options: CodegenOptions) -> LoweredModule:
    """Build the LLVM module of one kernel; `func` must have passed dsl.ir.verify."""
    module = ir.Module(name=func.name)
    module.triple = llvm.get_process_triple()
    program = ir.Function(module, driver.PROGRAM_TYPE, name="wavetile_program")
    program.linkage = "internal"
    lw = Lowering(func, module, program, EMITTERS, options.checks, options.instrument)
    _bind_arguments(lw, func.args)
    lw.emit_block(func.body)
    lw.finish()
    driver.define_grid(module, program)
    return LoweredModule(str(module), lw.sites, lw.stack_bytes + FRAME_SLACK, lw.probes)


FRAME_SLACK = 64 * 1024  # spills, the driver's frame and the callees' (fail, find_buffer, print callback)


def _bind_arguments(lw: Lowering, args: list[Value]) -> None:
    """Argument i is the int64 slot ARGS[i]: pointers as addresses, ints extended, fp32 in the low bits."""
    b = lw.entry
    slots = driver.ctx_pointer(b, lw.ctx, abi.ARGS)
    for i, arg in enumerate(args):
        if not arg.type.is_scalar:
            raise NotImplementedError("tile-typed kernel arguments")
        dt = arg.type.dtype
        raw = b.load(b.gep(slots, [ir.Constant(I64, i)], inbounds=True))
        if dt.is_ptr():
            value = b.inttoptr(raw, register_type(dt))
        elif dt.is_fp64():
            value = b.bitcast(raw, F64)
        elif dt.is_fp32():
            value = b.bitcast(b.trunc(raw, I32), F32)
        elif is_narrow_float(dt):
            value = decode(b, b.trunc(raw, ir.IntType(dt.primitive_bitwidth)), dt)
        else:
            value = b.trunc(raw, register_type(dt)) if dt.primitive_bitwidth < 64 else raw
        lw.scalars[arg] = value


def _program_id(lw: Lowering, op: Operation) -> None:
    lw.scalars[op.result] = lw.b.trunc(lw.pid[op.attrs["axis"]], I32)


def _num_programs(lw: Lowering, op: Operation) -> None:
    lw.scalars[op.result] = lw.b.trunc(lw.ctx_slot(abi.GRID_X + op.attrs["axis"]), I32)


def _nothing(lw: Lowering, op: Operation) -> None:
    """tile.barrier: a program runs on one thread, so there is nothing to wait for."""


EMITTERS = {
    **{name: elements.emit_pure for name in fusion.FUSABLE},
    OP.TILE_PROGRAM_ID: _program_id,
    OP.TILE_NUM_PROGRAMS: _num_programs,
    OP.TILE_BARRIER: _nothing,
    **memory.EMITTERS,
    **atomic_access.EMITTERS,
    **mapped.EMITTERS,
    **control.EMITTERS,
    **reduce.EMITTERS,
    **dot.EMITTERS,
    **shapes.EMITTERS,
    **debug.EMITTERS,
}

_MISSING = sorted(name for name, info in OPS.items() if name not in EMITTERS and not info.terminator)
assert not _MISSING, f"ops without a lowering: {_MISSING}"
