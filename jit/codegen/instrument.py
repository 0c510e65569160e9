"""Instrumentation for the simulator: per-op execution counts and address traces of memory ops.

Only the instrumented variant (Options.instrument) emits any of this; plain code is unchanged.
Every counted op gets a *probe*: an index into a counts array that the op increments each time it
executes, and a JSON-able description (op name, source line, shapes, dtypes, the attributes the
profiler needs). Global loads, stores and atomics also append one trace record per traced execution
to their own stream (so a stream is a [records, words] matrix the runtime reads without parsing):

    [linear program id, address_0 .. address_{numel-1}, mask bytes (one per element, padded to 8)]

as int64 words, addresses being the byte address of each tile element in row-major order (the mask
part only for masked ops; 1 = active). The runtime maps elements to warps and lanes afterwards
(jit.layout), so the code here knows nothing of the machine.

The instrumentation record (context slot abi.COUNTERS -> int64[abi.INSTR_SLOTS]) points at the
stream table (base, capacity, cursor per probe), a grow callback and the counts array. A record
that does not fit calls grow(record, probe, words): the runtime keeps the filled chunk and installs
a fresh, larger one, so a trace never overflows. Instrumented code runs on one thread.

The record's stride S thins the trace inside loops: a program traces every S-th execution of each memory op
(counted from the op's count at the program's start), from execution (-g) mod S where g = program id //
2**PHASE_GROUP_BITS: neighbouring programs sample the same loop iterations, so reuse between them stays visible,
and successive groups rotate the phase, so a loop's last, partial iteration is traced as often as its first;
the counts still see every execution.
"""

from __future__ import annotations

import llvmlite.ir as ir

from dsl.ir.core import Operation, Value
from dsl.ir.ops import OP, Trait, with_trait
from jit import abi
from jit.codegen.llvm_types import I8, I64
from jit.codegen.loops import linear_index, loop_nest, row_major_strides
from jit.mma_layout import chain_flags, dot_operand_load
from jit.passes.assign_vector_widths import known_int
from jit.pipelining import enclosing_loop, load_pipelining

GROW_TYPE = ir.FunctionType(ir.VoidType(), [I64, I64, I64])
PHASE_GROUP_BITS = 7  # programs traced with one phase of a thinned loop: 128, about one wave of a GPU

# ops that emit no GPU instruction of their own (constants, index remaps folded into consumers)
SILENT = with_trait(Trait.SILENT)
_COMBINES = with_trait(Trait.COMBINES)
# ops whose counts come from their traces (memory ops), or that have none
UNCOUNTED = SILENT | with_trait(Trait.READS_MEMORY) | with_trait(Trait.WRITES_MEMORY)


def describe(op: Operation, trace: bool = False, merged: set[Operation] = frozenset()) -> dict:
    """What the profiler needs to know about a probed op, as JSON-able data. merged: ops whose instruction is
    another's (jit.isel); a combine region lists the others, which run per element."""
    attrs = {k: v for k, v in op.attrs.items() if isinstance(v, (int, str, bool, float, list, tuple))}
    info = {
        "op": op.name,
        "line": op.loc.line if op.loc else None,
        "results": [_type(v) for v in op.results],
        "operands": [_type(v) for v in op.operands],
        "attrs": {k: list(v) if isinstance(v, tuple) else v for k, v in attrs.items()},
        "trace": trace,
    }
    if op.name in _COMBINES:
        info["combine"] = [o.name for o in op.regions[0].ops if not o.info.terminator and o not in merged]
    if op.name in (OP.ARITH_DIV, OP.ARITH_REM) and op.results[0].type.dtype.is_int():
        info["divisor"] = _divisor(op)
    return info


def _divisor(op: Operation) -> str:
    """Whether an integer division's divisor is known when the kernel compiles ("power_of_two", "constant" or
    "runtime"), or, for a remainder, whether a division of the same operands gives it ("after_division")."""
    if op.name == OP.ARITH_REM and any(other.name == OP.ARITH_DIV and other.operands == op.operands
                                       for other in op.parent.ops):
        return "after_division"
    constant = known_int(op.operands[1])
    if constant is None:
        return "runtime"
    constant = abs(constant)
    return "power_of_two" if constant and constant & (constant - 1) == 0 else "constant"


def _type(value: Value) -> list:
    return [list(value.type.shape), value.type.dtype.ir]


def new_probe(lw, op: Operation, trace: bool = False, kind: str | None = None) -> int:
    info = describe(op, trace, lw.merged)
    if kind:
        info["kind"] = kind
    if op.name == OP.TILE_DOT:
        info["sources"] = [_operand_source(lw, v) for v in op.operands[:2]]
        info["chained"] = list(chain_flags(op))  # which warps its MMA layout takes (jit.mma_layout)
    elif op.name == OP.TILE_LOAD:  # how a GPU build issues it
        pipelining = load_pipelining(op)
        info["loop_stages"] = pipelining["stages"]
        info["pipeline_distance"] = pipelining["distance"]
        info["level"] = pipelining["level"]
        info["serial"] = pipelining["serial"]
        info["constant"] = pipelining["constant"]
        info["writes"] = pipelining["writes"]
    elif op in lw.merged:
        info["merged"] = True
    loop = enclosing_loop(op)  # the loop the op runs in: memory phases and their instructions
    info["loop"] = None if loop is None else lw.loop_ids.setdefault(id(loop), len(lw.loop_ids))
    lw.probes.append(info)
    return len(lw.probes) - 1


def _operand_source(lw, value: Value) -> list | None:
    """[probe of the tile.load the dot operand comes from, transposed on the way], or None when it is computed."""
    source = dot_operand_load(value)
    probe = None if source is None else lw.probe_ids.get((source[0], None))
    return None if probe is None else [probe, source[1]]


def _record(lw) -> ir.Value:
    return lw.ctx_pointer(abi.COUNTERS)


def count(lw, op: Operation, kind: str | None = None) -> None:
    """Add one to the op's execution counter (one probe per op, or per (op, kind))."""
    if not lw.instrument or lw.region_depth:
        return
    key = (op, kind)
    probe = lw.probe_ids.get(key)
    if probe is None:
        probe = lw.probe_ids[key] = new_probe(lw, op, kind=kind)
    _increment(lw, probe)


def _increment(lw, probe: int) -> ir.Value:
    """Count one execution; returns how many executions of this probe the current program made before."""
    b = lw.b
    if lw.counts_ptr is None:
        record = lw.entry.inttoptr(lw.ctx_slot(abi.COUNTERS), I64.as_pointer())
        raw = lw.entry.load(lw.entry.gep(record, [ir.Constant(I64, abi.INSTR_COUNTS)], inbounds=True))
        lw.counts_ptr = lw.entry.inttoptr(raw, I64.as_pointer())
    at_start = lw.entry.load(lw.entry.gep(lw.counts_ptr, [ir.Constant(I64, probe)], inbounds=True))
    slot = b.gep(lw.counts_ptr, [ir.Constant(I64, probe)], inbounds=True)
    count = b.load(slot)
    b.store(b.add(count, ir.Constant(I64, 1)), slot)
    return b.sub(count, at_start)


def record_words(numel: int, masked: bool) -> int:
    """int64 words of one trace record."""
    return 1 + numel + ((numel + 7) // 8 if masked else 0)


def trace_access(lw, op: Operation, shape: tuple[int, ...], ptr: Value, mask: Value | None) -> None:
    """Count the op and append its trace record: every element's address, and the mask when given."""
    if not lw.instrument or lw.region_depth:
        return
    probe = new_probe(lw, op, trace=True)
    lw.probes[probe]["masked"] = mask is not None
    lw.probe_ids[(op, None)] = probe
    done = _increment(lw, probe)
    b = lw.b
    record = b.inttoptr(lw.ctx_slot(abi.COUNTERS), I64.as_pointer())
    stride = b.load(b.gep(record, [ir.Constant(I64, abi.INSTR_STRIDE)], inbounds=True))
    phase = b.lshr(lw.pid_linear(), ir.Constant(I64, PHASE_GROUP_BITS))
    with b.if_then(b.icmp_unsigned("==", b.urem(b.add(done, phase), stride), ir.Constant(I64, 0))):
        _append_record(lw, record, probe, shape, ptr, mask)


def _append_record(lw, record: ir.Value, probe: int, shape: tuple[int, ...], ptr: Value, mask: Value | None) -> None:
    b = lw.b
    numel = 1
    for s in shape:
        numel *= s
    need = ir.Constant(I64, record_words(numel, mask is not None))
    table = b.inttoptr(b.load(b.gep(record, [ir.Constant(I64, abi.INSTR_STREAMS)], inbounds=True)),
                       I64.as_pointer())

    def field(slot: int) -> ir.Value:
        return b.gep(table, [ir.Constant(I64, 3 * probe + slot)], inbounds=True)

    full = b.icmp_signed(">", b.add(b.load(field(abi.STREAM_CURSOR)), need), b.load(field(abi.STREAM_CAPACITY)))
    with b.if_then(full, likely=False):
        grow_address = b.load(b.gep(record, [ir.Constant(I64, abi.INSTR_GROW)], inbounds=True))
        grow = b.inttoptr(grow_address, GROW_TYPE.as_pointer())
        b.call(grow, [b.ptrtoint(record, I64), ir.Constant(I64, probe), need])
    cursor = b.load(field(abi.STREAM_CURSOR))
    base = b.gep(b.inttoptr(b.load(field(abi.STREAM_BASE)), I64.as_pointer()), [cursor])
    b.store(lw.pid_linear(), base)
    strides = row_major_strides(shape)
    addresses = b.gep(base, [ir.Constant(I64, 1)], inbounds=True)

    def lane(idx: list[ir.Value]) -> None:
        at = linear_index(b, idx, strides)
        b.store(b.ptrtoint(lw.element(ptr, idx), I64), b.gep(addresses, [at], inbounds=True))

    loop_nest(b, shape, lane)
    if mask is not None:
        flags = b.bitcast(b.gep(addresses, [ir.Constant(I64, numel)], inbounds=True), I8.as_pointer())

        def flag(idx: list[ir.Value]) -> None:
            at = linear_index(b, idx, strides)
            b.store(b.zext(lw.element(mask, idx), I8), b.gep(flags, [at], inbounds=True))

        loop_nest(b, shape, flag)
    b.store(b.add(cursor, need), field(abi.STREAM_CURSOR))
