"""Shared helper for the codegen emitter tests: JIT `for i: out[i] = f(in[i])` loops and call them on numpy.

The loops go through `jit.engine` (host CPU, O3 new pass manager, MCJIT), the same path kernels take, so
what the tests measure (accuracy, vectorisation, speed) is what generated kernels get.
"""

from __future__ import annotations

import ctypes
from collections.abc import Callable

import llvmlite.ir as ir
import numpy as np
import pytest

from jit import engine

F32, F64 = ir.FloatType(), ir.DoubleType()
_NUMPY = {"float": np.float32, "double": np.float64, "i8": np.uint8, "i16": np.uint16, "i32": np.uint32,
          "i64": np.uint64}


class MapKernel:
    """A compiled elementwise loop; calling it maps numpy arrays to a new output array."""

    def __init__(self, loaded: engine.LoadedKernel, asm: str, in_dtypes: list, out_dtype, lanes: int) -> None:
        self._loaded = loaded  # owns the machine code
        self.asm = asm
        self.in_dtypes = in_dtypes
        self.out_dtype = out_dtype
        self.lanes = lanes  # elements per loop iteration (LLVM vector types load several)
        argtypes = [ctypes.c_void_p] * (len(in_dtypes) + 1) + [ctypes.c_int64]
        self._fn = ctypes.CFUNCTYPE(None, *argtypes)(loaded.address)

    def __call__(self, *arrays: np.ndarray) -> np.ndarray:
        ins = [np.ascontiguousarray(a, dtype=d) for a, d in zip(arrays, self.in_dtypes, strict=True)]
        n = ins[0].size
        assert all(a.size == n for a in ins) and n % self.lanes == 0
        out = np.empty(n, dtype=self.out_dtype)
        self._fn(*[a.ctypes.data for a in ins], out.ctypes.data, n // self.lanes)
        return out.reshape(ins[0].shape)


def build_map_module(emit: Callable[..., ir.Value], in_types: list[ir.Type], out_type: ir.Type) -> ir.Module:
    """`void map(in0*, ..., out*, i64 n)`: out[i] = emit(builder, in0[i], ...), a plain counted loop.

    With LLVM vector types each iteration handles one vector, and n counts vectors.
    """
    mod = ir.Module(name="map")
    ptr = ir.PointerType()
    fn = ir.Function(mod, ir.FunctionType(ir.VoidType(), [ptr] * (len(in_types) + 1) + [ir.IntType(64)]), "map")
    for arg in fn.args[:-1]:
        arg.add_attribute("noalias")
    n = fn.args[-1]
    entry, loop, done = fn.append_basic_block("entry"), fn.append_basic_block("loop"), fn.append_basic_block("done")
    b = ir.IRBuilder(entry)
    b.cbranch(b.icmp_signed(">", n, ir.Constant(n.type, 0)), loop, done)
    b.position_at_end(loop)
    i = b.phi(n.type, "i")
    i.add_incoming(ir.Constant(n.type, 0), entry)
    # explicit element alignment: without it LLVM assumes a vector type's full alignment (vmovaps)
    xs = [b.load(b.gep(p, [i], source_etype=t), typ=t, align=_align(t)) for p, t in zip(fn.args, in_types)]
    y = emit(b, *xs)
    assert y.type == out_type, (y.type, out_type)
    b.store(y, b.gep(fn.args[len(in_types)], [i], source_etype=out_type), align=_align(out_type))
    nxt = b.add(i, ir.Constant(n.type, 1), flags=["nuw", "nsw"])
    i.add_incoming(nxt, loop)
    b.cbranch(b.icmp_signed("==", nxt, n), done, loop)
    b.position_at_end(done)
    b.ret_void()
    return mod


def compile_map(emit: Callable[..., ir.Value], in_types: list[ir.Type], out_type: ir.Type) -> MapKernel:
    mod = build_map_module(emit, in_types, out_type)
    compiled = engine.optimize_and_emit(str(mod), "map")
    loaded = engine.load(compiled.obj, symbol="map")
    return MapKernel(loaded, compiled.asm, [_numpy(t) for t in in_types], _numpy(out_type),
                     in_types[0].count if isinstance(in_types[0], ir.VectorType) else 1)


def _align(ty: ir.Type) -> int:
    return np.dtype(_numpy(ty)).itemsize


def _numpy(ty: ir.Type):
    return _NUMPY[str(ty.element if isinstance(ty, ir.VectorType) else ty)]


@pytest.fixture(scope="session")
def jit_map() -> Callable[..., MapKernel]:
    """`jit_map(emit, in_types, out_type, key=None)` -> MapKernel; kernels with a key are compiled once."""
    cache: dict = {}

    def get(emit, in_types, out_type, key=None) -> MapKernel:
        if key is None:
            return compile_map(emit, list(in_types), out_type)
        if key not in cache:
            cache[key] = compile_map(emit, list(in_types), out_type)
        return cache[key]

    return get
