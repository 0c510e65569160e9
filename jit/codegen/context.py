"""The state of lowering one kernel: where values live, the builder, the site table, and the few
operations every op lowering needs (allocate a tile buffer, fill it, read an element, fail).

Scalars are SSA values in `scalars`; tiles that are stored live in `buffers`; fused tiles are in
neither and are recomputed by `element`. `owned` marks buffers no other live value aliases, which is
what lets tile.dot accumulate in place. `assume_true` holds the masks known to be all-on in the code
being emitted (the fast version of a masked loop), and `cache` per-block results of check passes.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import llvmlite.ir as ir

from dsl.ir.core import Block, Function, Loc, Operation, TileType, Value
from jit import abi, isel
from jit.codegen import driver, elements, fusion, instrument
from jit.codegen.buffers import Buffer
from jit.codegen.llvm_types import I32, I64, slot_type
from jit.codegen.loops import loop_nest, row_major_strides
from jit.codegen.provenance import Provenance

OpEmitter = Callable[["Lowering", Operation], None]
ALIGN = 64


def _size_of(ty: ir.Type) -> int:
    if isinstance(ty, ir.IntType):
        return max(1, ty.width // 8)
    if isinstance(ty, ir.PointerType | ir.DoubleType):
        return 8
    if isinstance(ty, ir.VectorType):
        return ty.count * _size_of(ty.element)
    return 4  # float


class Lowering:
    """One kernel being lowered into the program function; emitters receive it as `lw`."""

    def __init__(self, func: Function, module: ir.Module, program: ir.Function, emitters: dict[str, OpEmitter],
                 checks: bool, instrument: bool = False):
        self.module = module
        self.instrument = instrument  # emit probes (jit.codegen.instrument)
        self.probes: list[dict] = []
        self.probe_ids: dict = {}
        self.loop_ids: dict[int, int] = {}  # id(loop op) -> the loop's number in the probe records
        self.region_depth = 0  # > 0 inside inlined combine regions (their ops run per element, not per op)
        self.counts_ptr: ir.Value | None = None
        users = fusion.users(func)
        # ops whose instruction is another op's, which the profiler does not count
        self.merged = isel.merged_ops(func.body, users) if instrument else set()
        self.use_count = {value: len(ops) for value, ops in users.items()}
        self.fused = fusion.fused_values(func, users)
        self.assume_true: set[Value] = set()  # masks known to be all-on where code is being emitted
        self.provenance = Provenance(func)
        self.fn = program
        self.emitters = emitters
        self.checks = checks
        self.ctx, *self.pid = program.args
        self.entry = ir.IRBuilder(program.append_basic_block("entry"))
        self.b = ir.IRBuilder(program.append_basic_block("body"))
        self.scalars: dict[Value, ir.Value] = {}
        self.buffers: dict[Value, Buffer] = {}
        self.owned: set[Value] = set()
        self.sites: list[abi.Site] = []
        self._roots = 0
        self.stack_bytes = 0  # upper bound of the program's frame: the runtime sizes thread stacks by it
        self._fail_fn: ir.Function | None = None
        self._find_fn: ir.Function | None = None
        self._cancel_counter: ir.Value | None = None
        self._ctx_cache: dict[int, ir.Value] = {}
        self.cache: dict[tuple, object] = {}  # per-block results of analysis passes (checks.py)
        self.block_key = 0  # a fresh number per emitted block: cached values are valid in that block only
        self._blocks = 0
        self.checks_on: ir.Value | None = None
        if checks:
            self.checks_on = self.entry.icmp_signed("!=", self.ctx_slot(abi.CHECKS), ir.Constant(I64, 0))

    # -- the program's frame
    def finish(self) -> None:
        self.entry.branch(self.fn.blocks[1])
        if not self.b.block.is_terminated:
            self.b.ret(ir.Constant(I32, 0))

    def ctx_slot(self, slot: int) -> ir.Value:
        """A context slot, loaded once in the entry block (which dominates every use)."""
        if slot not in self._ctx_cache:
            self._ctx_cache[slot] = driver.ctx_load(self.entry, self.ctx, slot)
        return self._ctx_cache[slot]

    def ctx_pointer(self, slot: int, ty: ir.Type = driver.I64P) -> ir.Value:
        return self.b.inttoptr(self.ctx_slot(slot), ty)

    # -- buffers
    def new_buffer(self, type: TileType) -> Buffer:
        """A fresh row-major stack buffer (an alloca in the entry block, 64-byte aligned)."""
        alloca = self.scratch(slot_type(type.dtype), type.numel)
        self._roots += 1
        return Buffer(alloca, type.dtype, tuple(type.shape), row_major_strides(type.shape), 0, self._roots)

    def scratch(self, ty: ir.Type, count: int) -> ir.Value:
        """`count` elements of `ty` in the program's stack frame."""
        count = max(1, count)
        alloca = self.entry.alloca(ty, size=ir.Constant(I64, count))
        alloca.align = ALIGN
        self.stack_bytes += -(-count * _size_of(ty) // ALIGN) * ALIGN
        return alloca

    def bind(self, value: Value, buf: Buffer, owned: bool) -> None:
        self.buffers[value] = buf
        if owned:
            self.owned.add(value)

    def define(self, value: Value, buf: Buffer, owned: bool = True) -> None:
        """Give an op result its storage: a scalar result reads the single element of `buf`."""
        if value.type.is_scalar:
            self.scalars[value] = buf.load(self.b, [ir.Constant(I64, 0)] * len(buf.shape))
        else:
            self.bind(value, buf, owned)

    def fill(self, buf: Buffer, elem: Callable[[list[ir.Value]], ir.Value]) -> None:
        """One loop nest over the buffer's shape storing elem(idx)."""
        loop_nest(self.b, buf.shape, lambda idx: buf.store(self.b, idx, elem(idx)))

    def store_into(self, buf: Buffer, value: Value) -> None:
        self.fill(buf, lambda idx: self.element(value, idx))

    def element(self, value: Value, idx: Sequence[ir.Value]) -> ir.Value:
        return elements.element(self, value, list(idx))

    def materialize(self, value: Value) -> Buffer:
        """The value's buffer, storing a fused value (once per call) where it is needed."""
        buf = self.buffers.get(value)
        if buf is None:
            buf = self.new_buffer(value.type)
            self.store_into(buf, value)
        return buf

    def contiguous(self, value: Value) -> Buffer:
        """A row-major buffer holding the value (a copy when its buffer is a strided view)."""
        buf = self.materialize(value)
        if buf.contiguous:
            return buf
        copy = self.new_buffer(value.type)
        self.fill(copy, lambda idx: buf.load(self.b, idx))
        return copy

    # -- ops and regions
    def emit_block(self, block: Block) -> None:
        saved = self.block_key
        self._blocks += 1
        self.block_key = self._blocks
        for op in block.ops:
            if op.info.terminator:
                break
            self.emit_op(op)
        self.block_key = saved

    def emit_op(self, op: Operation) -> None:
        emitter = self.emitters.get(op.name)
        if emitter is None:
            raise NotImplementedError(f"no LLVM lowering for {op.name}")
        if self.instrument and op.name not in instrument.UNCOUNTED:
            instrument.count(self, op)
        emitter(self, op)

    def inline_region(self, block: Block, args: Sequence[ir.Value]) -> list[ir.Value]:
        """Emit a scalar region (a combine function) on the given argument values; return its yields."""
        for arg, value in zip(block.args, args):
            self.scalars[arg] = value
        self.region_depth += 1
        try:
            self.emit_block(block)
        finally:
            self.region_depth -= 1
        return [self.scalars[v] for v in block.terminator.operands]

    # -- failures
    def add_site(self, kind: str, loc: Loc | None, buffer: int | None = None, message: str = "") -> int:
        self.sites.append(abi.Site(kind, loc, buffer, message))
        return len(self.sites) - 1

    def fail(self, code: int | ir.Value, site: int, offset: ir.Value, buffer: ir.Value, lane: ir.Value) -> None:
        """Write the error record and return the code from the program (terminates the current block)."""
        if self._fail_fn is None:
            self._fail_fn = driver.define_fail(self.module)
        code = ir.Constant(I32, code) if isinstance(code, int) else code
        rc = self.b.call(self._fail_fn, [self.ctx, code, ir.Constant(I64, site), *self.pid, offset, buffer, lane])
        self.b.ret(rc)

    def poll_cancel(self) -> None:
        """Leave the program with abi.CANCELLED when the launch was interrupted (emitted at loop back-edges)."""
        if self._cancel_counter is None:
            self._cancel_counter = driver.cancel_counter(self.entry, self.ctx)
        cancelled = driver.cancel_requested(self.b, self._cancel_counter, self.ctx_slot(abi.CANCEL_SEEN))
        stop = self.b.append_basic_block("cancelled")
        go_on = self.b.append_basic_block("not_cancelled")
        self.b.cbranch(cancelled, stop, go_on)
        self.b.position_at_end(stop)
        self.b.ret(ir.Constant(I32, abi.CANCELLED))
        self.b.position_at_end(go_on)

    def find_buffer(self, lo: ir.Value, end: ir.Value) -> ir.Value:
        if self._find_fn is None:
            self._find_fn = driver.define_find_buffer(self.module)
        return self.b.call(self._find_fn, [self.ctx, lo, end])

    def pid_linear(self) -> ir.Value:
        x, y, z = self.pid
        gx, gy = self.ctx_slot(abi.GRID_X), self.ctx_slot(abi.GRID_Y)
        return self.b.add(x, self.b.mul(gx, self.b.add(y, self.b.mul(gy, z))))
