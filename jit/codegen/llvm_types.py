"""LLVM types for tile IR dtypes, in the three forms a value takes: register, global memory, stack slot.

Registers: int1 -> i1, intN/uintN -> iN (signedness lives in the dtype), fp32/fp64 -> float/double,
fp16/bf16/fp8 -> float holding a value exact in the narrow format, pointers -> typed LLVM pointers (the
textual IR prints `ptr`, but typed pointers let GEPs scale offsets by the element size).
Global memory stores bools as bytes and narrow floats as their bits; stack buffers keep registers as
they are (bools as bytes), so a narrow-float tile is decoded once, when it is loaded.
"""

from __future__ import annotations

import llvmlite.ir as ir

from dsl.dtypes import dtype
from jit.codegen import numerics

I1 = ir.IntType(1)
I8 = ir.IntType(8)
I16 = ir.IntType(16)
I32 = ir.IntType(32)
I64 = ir.IntType(64)
F32 = ir.FloatType()
F64 = ir.DoubleType()


def is_narrow_float(dt: dtype) -> bool:
    """fp16, bf16 and fp8: computed in fp32 registers, rounded after every op."""
    return dt.is_floating() and dt.primitive_bitwidth < 32


def register_type(dt: dtype) -> ir.Type:
    if dt.is_ptr():
        return memory_type(dt.element_ty).as_pointer()
    if dt.is_floating():
        return F64 if dt.primitive_bitwidth == 64 else F32
    return ir.IntType(dt.primitive_bitwidth)


def memory_type(dt: dtype) -> ir.Type:
    """The element type in global memory (numpy's storage)."""
    if dt.is_bool():
        return I8
    if is_narrow_float(dt):
        return ir.IntType(dt.primitive_bitwidth)
    return register_type(dt)


def slot_type(dt: dtype) -> ir.Type:
    """The element type of stack tile buffers."""
    return I8 if dt.is_bool() else register_type(dt)


def to_slot(b: ir.IRBuilder, value: ir.Value, dt: dtype) -> ir.Value:
    return b.zext(value, I8) if dt.is_bool() else value


def from_slot(b: ir.IRBuilder, value: ir.Value, dt: dtype) -> ir.Value:
    return b.trunc(value, I1) if dt.is_bool() else value


def to_memory(b: ir.IRBuilder, value: ir.Value, dt: dtype) -> ir.Value:
    if dt.is_bool():
        return b.zext(value, I8)
    if is_narrow_float(dt):
        return numerics.encode(b, value, dt)
    return value


def from_memory(b: ir.IRBuilder, value: ir.Value, dt: dtype) -> ir.Value:
    if dt.is_bool():
        return b.icmp_unsigned("!=", value, ir.Constant(I8, 0))
    if is_narrow_float(dt):
        return numerics.decode(b, value, dt)
    return value


def constant(dt: dtype, value) -> ir.Constant:
    """A register constant; narrow floats must already be rounded to their format by the caller."""
    ty = register_type(dt)
    if dt.is_floating():
        return ir.Constant(ty, float(value))
    if dt.is_ptr():
        return ir.Constant(I64, int(value)).inttoptr(ty) if int(value) else ir.Constant(ty, None)
    bits = dt.primitive_bitwidth
    v = int(value) & ((1 << bits) - 1)
    if bits > 1 and v >= 1 << (bits - 1):
        v -= 1 << bits
    return ir.Constant(ty, v)


def type_suffix(ty: ir.Type) -> str:
    """LLVM's overloaded-intrinsic suffix: f32, i64, v8f32, ..."""
    if isinstance(ty, ir.VectorType):
        return f"v{ty.count}{type_suffix(ty.element)}"
    if isinstance(ty, ir.FloatType):
        return "f32"
    if isinstance(ty, ir.DoubleType):
        return "f64"
    if isinstance(ty, ir.HalfType):
        return "f16"
    if isinstance(ty, ir.IntType):
        return f"i{ty.width}"
    raise TypeError(f"no intrinsic suffix for {ty}")


def intrinsic(module: ir.Module, name: str, ret: ir.Type, args: list[ir.Type],
              overloads: list[ir.Type] | None = None) -> ir.Function:
    """Declare (once) an overloaded LLVM intrinsic; `overloads` picks the name suffixes (default: ret)."""
    full = ".".join([name] + [type_suffix(t) for t in (overloads if overloads is not None else [ret])])
    fn = module.globals.get(full)
    if fn is None:
        fn = ir.Function(module, ir.FunctionType(ret, args), name=full)
    return fn


def external(module: ir.Module, name: str, ret: ir.Type, args: list[ir.Type]) -> ir.Function:
    """Declare (once) a C function resolved from the process at load time (libm)."""
    fn = module.globals.get(name)
    if fn is None:
        fn = ir.Function(module, ir.FunctionType(ret, args), name=name)
    return fn
