"""Test-only: build tile IR by hand, lower it, compile it at O3 for the host and run it through jit.abi.

Stands in for the engine and the runtime so that the code generator can be tested on its own.
"""

from __future__ import annotations

import ctypes
import struct
import threading
from dataclasses import dataclass, field

import llvmlite.binding as llvm
import numpy as np

from dsl import dtypes as T
from dsl.ir import Block, Builder, Function, TileType, Value, verify
from jit import abi
from jit.codegen import CodegenOptions, lower

_machine = None


def target_machine(fresh: bool = False) -> llvm.TargetMachine:
    """The host target machine; `fresh` for one an execution engine will own (and free)."""
    global _machine
    if _machine is None or fresh:
        llvm.initialize_native_target()
        llvm.initialize_native_asmprinter()
        llvm.initialize_native_asmparser()
        target = llvm.Target.from_default_triple()
        machine = target.create_target_machine(cpu=llvm.get_host_cpu_name(),
                                               features=llvm.get_host_cpu_features().flatten(), opt=3, jit=True)
        if fresh:
            return machine
        _machine = machine
    return _machine


# ----------------------------------------------------------------------------------------------------
# building IR


def ptr(dt: T.dtype) -> TileType:
    return TileType(T.pointer_type(dt))


def scalar(dt: T.dtype) -> TileType:
    return TileType(dt)


def tile(dt: T.dtype, *shape: int) -> TileType:
    return TileType(dt, tuple(shape))


class KernelBuilder:
    """A Builder with shorthands for the ops tests use most."""

    def __init__(self, name: str, **args: TileType):
        self.func = Function(name, list(args), Block(list(args.values())))
        self.b = Builder(self.func.body)
        self.args = self.func.args

    def op(self, name: str, operands: list[Value], type: TileType, **attrs) -> Value:
        return self.b.value(name, operands, type, **attrs)

    def const(self, value, dt: T.dtype, *shape: int) -> Value:
        return self.b.constant(value, TileType(dt, tuple(shape)))

    def pid(self, axis: int = 0) -> Value:
        return self.op("tile.program_id", [], scalar(T.int32), axis=axis)

    def arange(self, n: int, start: int = 0) -> Value:
        return self.op("tile.arange", [], tile(T.int32, n), start=start, end=start + n)

    def splat(self, x: Value, *shape: int) -> Value:
        return self.op("tile.splat", [x], TileType(x.type.dtype, shape))

    def binary(self, name: str, a: Value, c: Value, **attrs) -> Value:
        return self.op(f"arith.{name}", [a, c], a.type, **attrs)

    def cmp(self, pred: str, a: Value, c: Value) -> Value:
        return self.op("arith.cmp", [a, c], a.type.with_dtype(T.int1), predicate=pred)

    def addptr(self, p: Value, offset: Value) -> Value:
        if p.type.is_scalar and not offset.type.is_scalar:
            p = self.splat(p, *offset.type.shape)
        return self.op("tile.addptr", [p, offset], offset.type.with_dtype(p.type.dtype))

    def load(self, p: Value, mask: Value | None = None, other=None) -> Value:
        elem = p.type.dtype.element_ty
        shape = p.type.shape
        if mask is None:
            mask = self.const(True, T.int1, *shape)
        if other is None:
            other = self.const(0, elem, *shape)
        elif not isinstance(other, Value):
            other = self.const(other, elem, *shape)
        return self.op("tile.load", [p, mask, other], TileType(elem, shape), cache="", eviction="", volatile=False)

    def store(self, p: Value, value: Value, mask: Value | None = None) -> None:
        if mask is None:
            mask = self.const(True, T.int1, *p.type.shape)
        self.b.create("tile.store", [p, value, mask], [], {"cache": "", "eviction": ""})

    def reduce(self, xs: list[Value], axis: int, combine) -> list[Value]:
        """combine(builder, lhs list, rhs list) -> list of scalar Values."""
        region = Block([TileType(x.type.dtype) for x in xs] * 2)
        with self.b.at(region):
            out = combine(self, region.args[:len(xs)], region.args[len(xs):])
            self.b.create("scf.yield", out, [])
        shape = xs[0].type.shape
        types = [TileType(x.type.dtype, shape[:axis] + shape[axis + 1:]) for x in xs]
        return self.b.create("tile.reduce", xs, types, {"axis": axis}, [region]).results

    def scan(self, xs: list[Value], axis: int, combine, reverse: bool = False) -> list[Value]:
        region = Block([TileType(x.type.dtype) for x in xs] * 2)
        with self.b.at(region):
            out = combine(self, region.args[:len(xs)], region.args[len(xs):])
            self.b.create("scf.yield", out, [])
        return self.b.create("tile.scan", xs, [x.type for x in xs], {"axis": axis, "reverse": reverse},
                             [region]).results

    def done(self) -> Function:
        verify(self.func)
        return self.func


# ----------------------------------------------------------------------------------------------------
# compiling and running


@dataclass
class Result:
    rc: int
    error: dict[str, int]
    prints: list[tuple[int, int, list[int]]] = field(default_factory=list)


_ERR_NAMES = {abi.ERR_CODE: "code", abi.ERR_SITE: "site", abi.ERR_PID_X: "pid_x", abi.ERR_PID_Y: "pid_y",
              abi.ERR_PID_Z: "pid_z", abi.ERR_OFFSET: "offset", abi.ERR_BUFFER: "buffer", abi.ERR_LANE: "lane"}
PrintCallback = ctypes.CFUNCTYPE(None, ctypes.c_int64, ctypes.c_int64, ctypes.c_void_p, ctypes.c_int64)


class Kernel:
    def __init__(self, func: Function, checks: bool = True, with_asm: bool = False):
        self.func = func
        self.lowered = lower(func, CodegenOptions(checks=checks))
        self.sites = self.lowered.sites
        tm = target_machine()
        module = llvm.parse_assembly(self.lowered.llvm_ir)
        module.verify()
        module.triple = llvm.get_process_triple()
        module.data_layout = str(tm.target_data)
        pto = llvm.create_pipeline_tuning_options(speed_level=3)
        pb = llvm.create_pass_builder(tm, pto)
        pb.getModulePassManager().run(module, pb)
        self.optimized_ir = str(module)
        self.asm = tm.emit_assembly(module) if with_asm else ""
        self.engine = llvm.create_mcjit_compiler(module, target_machine(fresh=True))
        self.engine.finalize_object()
        address = self.engine.get_function_address(abi.ENTRY)
        self.entry = ctypes.CFUNCTYPE(ctypes.c_int32, ctypes.c_void_p)(address)

    def __call__(self, *args, grid=(1,), chunk: int | None = None, pid_order=None, threads: int = 1,
                 extra_buffers=(), checks: int = 1) -> Result:
        return self.prepare(*args, grid=grid, chunk=chunk, pid_order=pid_order, threads=threads,
                            extra_buffers=extra_buffers, checks=checks)()

    def prepare(self, *args, grid=(1,), chunk: int | None = None, pid_order=None, threads: int = 1,
                extra_buffers=(), checks: int = 1):
        """Bind a launch once; the returned function runs it (for timing without Python overhead)."""
        grid = tuple(grid) + (1,) * (3 - len(grid))
        total = grid[0] * grid[1] * grid[2]
        slots = (ctypes.c_int64 * max(1, len(args)))()
        buffers = []
        for i, (arg, value) in enumerate(zip(self.func.args, args)):
            slots[i] = _encode(arg.type.dtype, value)
            if arg.type.dtype.is_ptr():
                buffers.append(_extent(value))
        buffers += [_extent(x) for x in extra_buffers]
        table = (ctypes.c_int64 * max(2, 2 * len(buffers)))()
        for i, (base, nbytes) in enumerate(buffers):
            table[2 * i], table[2 * i + 1] = base, nbytes
        counter = ctypes.c_int64(0)
        error = (ctypes.c_int64 * abi.ERROR_SLOTS)()
        prints: list = []
        lock = threading.Lock()

        def on_print(site, pid, data, nbytes):
            values = list((ctypes.c_int64 * (nbytes // 8)).from_address(data)) if nbytes else []
            with lock:
                prints.append((site, pid, values))

        callback = PrintCallback(on_print)
        order = np.asarray(pid_order, dtype=np.int64) if pid_order is not None else None
        ctx = (ctypes.c_int64 * abi.CONTEXT_SLOTS)()
        ctx[abi.ARGS] = ctypes.addressof(slots)
        ctx[abi.BUFFERS] = ctypes.addressof(table)
        ctx[abi.N_BUFFERS] = len(buffers)
        ctx[abi.GRID_X], ctx[abi.GRID_Y], ctx[abi.GRID_Z] = grid
        ctx[abi.NEXT_PID] = ctypes.addressof(counter)
        ctx[abi.CHUNK] = chunk if chunk is not None else max(1, total // threads)
        ctx[abi.ERROR] = ctypes.addressof(error)
        ctx[abi.PRINT_CALLBACK] = ctypes.cast(callback, ctypes.c_void_p).value or 0
        ctx[abi.PID_ORDER] = order.ctypes.data if order is not None else 0
        ctx[abi.CHECKS] = checks
        address = ctypes.addressof(ctx)
        keep = (slots, table, counter, error, callback, order, ctx, args)

        def launch() -> Result:
            assert keep
            counter.value = 0
            if threads == 1:
                rc = self.entry(address)
            else:
                codes = [0] * threads

                def work(t):
                    codes[t] = self.entry(address)
                pool = [threading.Thread(target=work, args=(t,)) for t in range(threads)]
                for t in pool:
                    t.start()
                for t in pool:
                    t.join()
                rc = next((c for c in codes if c), 0)
            return Result(rc, {name: error[slot] for slot, name in _ERR_NAMES.items()}, prints)

        return launch


def _extent(value) -> tuple[int, int]:
    if isinstance(value, np.ndarray):
        return value.ctypes.data, value.nbytes
    if isinstance(value, tuple):
        return value
    return int(value), 0


def _encode(dt: T.dtype, value) -> int:
    if dt.is_ptr():
        return _extent(value)[0]
    if dt.is_fp32():
        return struct.unpack("<I", struct.pack("<f", value))[0]
    if dt.is_fp64():
        return struct.unpack("<q", struct.pack("<d", value))[0]
    if dt.is_fp16():
        return int(np.float16(value).view(np.uint16))
    v = int(value) & ((1 << 64) - 1)
    return v - (1 << 64) if v >= 1 << 63 else v


def compile_kernel(func: Function, checks: bool = True, with_asm: bool = False) -> Kernel:
    return Kernel(func, checks, with_asm)


# ----------------------------------------------------------------------------------------------------
# elementwise maps: out[i] = f(in0[i], in1[i], ...) over a masked 1-D launch


def map_function(in_dtypes: list[T.dtype], out_dtypes, emit, block: int = 128) -> Function:
    """emit(kb, loaded tiles) -> the tile to store, or a list of tiles when out_dtypes is a list."""
    many = isinstance(out_dtypes, list)
    outs = out_dtypes if many else [out_dtypes]
    args = {f"in{i}": ptr(d) for i, d in enumerate(in_dtypes)}
    args.update({f"out{i}": ptr(d) for i, d in enumerate(outs)})
    kb = KernelBuilder("map", **args, n=scalar(T.int32))
    ins, out_ptrs, n = kb.args[:len(in_dtypes)], kb.args[len(in_dtypes):-1], kb.args[-1]
    base = kb.binary("mul", kb.pid(), kb.const(block, T.int32))
    offs = kb.binary("add", kb.splat(base, block), kb.arange(block))
    mask = kb.cmp("lt", offs, kb.splat(n, block))
    loaded = [kb.load(kb.addptr(p, offs), mask) for p in ins]
    values = emit(kb, loaded)
    for p, value in zip(out_ptrs, values if many else [values]):
        kb.store(kb.addptr(p, offs), value, mask)
    return kb.done()


def numpy_storage(dt: T.dtype) -> np.dtype:
    """The numpy dtype whose elements hold `dt` values (ml_dtypes for bf16 and fp8)."""
    import ml_dtypes

    special = {"bf16": ml_dtypes.bfloat16, "fp8e4nv": ml_dtypes.float8_e4m3fn, "fp8e5": ml_dtypes.float8_e5m2}
    return np.dtype(special.get(dt.name, dt.to_numpy()))


def run_map(kernel: Kernel, arrays: list[np.ndarray], out_dtypes, block: int = 128):
    """The outputs of a map kernel (a list when out_dtypes is a list)."""
    many = isinstance(out_dtypes, list)
    n = arrays[0].size
    outs = [np.zeros(n, numpy_storage(d)) for d in (out_dtypes if many else [out_dtypes])]
    result = kernel(*arrays, *outs, n, grid=((n + block - 1) // block,))
    assert result.rc == 0, result.error
    return outs if many else outs[0]
