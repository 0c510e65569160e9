"""What a GPU build of a kernel would allocate per program: shared memory and registers.

Read off the kernel's ops (the profiler's probe records, or its tile IR for registers), so both the profiler
and a compiled kernel's Triton-style `n_regs` / `metadata.shared` use one estimate.
"""

from __future__ import annotations

import math

from dsl.dtypes import parse_ir_type
from dsl.ir.core import uses
from dsl.ir.ops import OP, OPS, Trait, with_trait
from jit import shared_model
from jit.mma_layout import dot_operand_load, ir_layouts, mma_type, only_dot_operands
from simulator.specs import SIMT_DOT_TYPES, MachineSpec, current_spec

_COMBINES = with_trait(Trait.COMBINES)  # reductions and scans


def shared_bytes(probes, live, spec, num_warps, num_stages, padding) -> int:
    """Shared memory one program allocates: pipelined dot operands plus the largest scratch."""
    scratch = 0
    staged = max((_buffers(spec, rows, num_warps, num_stages) * copied + through_registers
                  for rows, copied, through_registers in _staged_dot_groups(probes, live)), default=0)
    for p in live:
        info = probes[p]
        if (info["op"] == OP.TILE_PERMUTE and shared_model.moves_fastest_dim(tuple(info["attrs"]["order"]))
                and not info["attrs"].get("staged")):
            src = info["operands"][0]
            itemsize = max(1, parse_ir_type(src[1]).itemsize)
            rows = math.prod(src[0][:-1]) if len(src[0]) > 1 else 1
            scratch = max(scratch, rows * (src[0][-1] + padding) * itemsize)
        elif info["op"] == OP.TILE_REDUCE:
            scratch = max(scratch, reduce_exchange(info, num_warps, spec.warp_size)[2])
        elif info["op"] in _COMBINES:
            shape = tuple(info["operands"][0][0])
            itemsize = max(1, parse_ir_type(info["operands"][0][1]).itemsize)
            scratch = max(scratch, shared_model.cross_warp(shape, int(info["attrs"]["axis"]), itemsize, num_warps,
                                                           spec.warp_size)[2])
    return staged + scratch


def reduce_exchange(info: dict, num_warps: int, warp_size: int) -> tuple:
    """jit.shared_model.reduction_exchange for a tile.reduce probe: every operand's partials, in the layout the
    reduction inherits (its `size_per_thread`, jit.passes.assign_reduction_order)."""
    itemsizes = tuple(max(1, parse_ir_type(operand[1]).itemsize) for operand in info["operands"])
    return shared_model.reduction_exchange(tuple(info["operands"][0][0]), int(info["attrs"]["axis"]), itemsizes,
                                           num_warps, warp_size, info["attrs"].get("size_per_thread", 1))


def _buffers(spec, rows: int, num_warps: int, num_stages: int) -> int:
    """Operand buffers Triton's pipeliner allocates: one per stage for warpgroup MMAs, one fewer for warp-level
    MMAs (every H200 compile fact of the sweeps: simulator/data/h200_compile_facts.jsonl)."""
    return max(1, num_stages if spec.async_mma(rows, num_warps) else num_stages - 1)


def _staged_dot_groups(probes, live) -> list[tuple[int, int, int]]:
    """(tile rows, bytes of one pipeline stage copied asynchronously, bytes loaded through registers) per group of
    dots that read a common loaded tile: a gated MLP's two projections of x stage x once and both weight tiles
    beside it, so a group holds each distinct operand once. Dots that share no loaded operand (attention's two
    products) are separate groups, of which the larger sets the allocation, as Triton's did on the attention
    sweep. An operand loaded through registers (_async_copyable) has one buffer whatever the stages: Triton's
    fp16 matmuls over rows of 1,000 elements allocate one stage of A and B at 2 to 5 stages."""
    groups: list[tuple[set, dict, int]] = []  # (source loads, operand key -> (bytes, copied), tile rows)
    for p in live:
        info = probes[p]
        if info["op"] != OP.TILE_DOT:
            continue
        (a_shape, a_type), (b_shape, _), _ = info["operands"]
        itemsize = max(1, parse_ir_type(a_type).itemsize)  # B is staged in A's type
        sources = list(info.get("sources") or (None, None))[:2]
        keys = [("load", source[0]) if source else ("reg", p, position) for position, source in enumerate(sources)]
        copied = [source is None or _async_copyable(probes[source[0]]["attrs"],
                                                    parse_ir_type(probes[source[0]]["results"][0][1]).itemsize)
                  for source in sources]
        operands = dict(zip(keys, zip((math.prod(a_shape) * itemsize, math.prod(b_shape) * itemsize), copied)))
        loads = {key for key in keys if key[0] == "load"}
        rows = a_shape[-2]
        for group in [group for group in groups if group[0] & loads]:
            groups.remove(group)
            loads |= group[0]
            operands.update(group[1])
            rows = min(rows, group[2])
        groups.append((loads, operands, rows))
    return [(rows, sum(n for n, copied in operands.values() if copied),
             sum(n for n, copied in operands.values() if not copied)) for _, operands, rows in groups]


_LOOPS = (OP.SCF_FOR, OP.SCF_WHILE)


def kernel_register_bytes(kernel, spec: MachineSpec | str | None = None) -> int:
    """register_bytes of a compiled kernel's tile IR on a machine (default: the current one), its accumulators
    weighed by the kind of its dots there (MMA_WEIGHTS); computed once per kernel and machine."""
    from dsl.ir import parse_function

    spec = current_spec(spec)
    cache = kernel.metadata.setdefault("register_bytes", {})  # machine name -> bytes
    if spec.name not in cache:
        func = parse_function(kernel.asm["ir"])
        num_warps = kernel.options.num_warps
        cache[spec.name] = register_bytes(func, MMA_WEIGHTS[dot_kind(func, spec, num_warps)],
                                          layout_copies(func, spec, num_warps))
    return cache[spec.name]


def dot_kind(func, spec: MachineSpec, num_warps: int) -> str:
    """How a kernel's dots hold their accumulators: "sync" when one issues warp-level MMAs (mma.sync: operand
    fragments in registers beside the accumulator), "async" when all issue warpgroup MMAs reading both operands from
    shared memory, "async_registers" when one of those takes an operand computed in registers (attention's P @ V) or
    of a K-major-only type."""
    dots = [op for op in func.walk() if op.name == OP.TILE_DOT]
    types = [mma_type(op.operands[0].type.dtype, op.attrs.get("input_precision", "tf32")) for op in dots]
    if set(types) & set(SIMT_DOT_TYPES) or not all(
            spec.async_mma(op.results[0].type.shape[0], num_warps) for op in dots):
        return "sync"
    # an operand of a K-major-only type may be transposed through registers on its way to shared memory
    loaded = all(dot_operand_load(operand) is not None for op in dots for operand in op.operands[:2])
    return "async" if loaded and not set(types) & set(spec.mma_kmajor_types) else "async_registers"


# Values in a dot's register layouts weigh this many times more than others: the allocator keeps them whole,
# spread evenly over the threads, where it reuses or recomputes much of the rest. A warp-level MMA also holds its
# operands' fragments in registers; a warpgroup MMA reads them from shared memory, or one from registers where it
# was computed there. benchmarks/gpu/fit_registers.py finds 2.5 and 1.25 best over the calibration configs' Triton
# register counts, and 2.0 for "async_registers" (median error 13.1 %, 13.7 % with 1.75); 1.75 ranks the
# calibration groups' configs better (python -m simulator.validate --split calibration: rho 0.83, 0.80 with 2.0).
MMA_WEIGHTS = {"sync": 2.5, "async_registers": 1.75, "async": 1.25}
MMA_WEIGHT = MMA_WEIGHTS["sync"]


def register_bytes(func, mma_weight: float = MMA_WEIGHT, copies: dict | None = None) -> int:
    """Bytes of tile values one program keeps in registers at most: the peak of live_profile, a value in a dot's
    accumulator layout counting mma_weight times its bytes."""
    return int(peak_bytes(live_profile(func, copies), mma_weight))


def layout_copies(func, spec: MachineSpec, num_warps: int) -> dict[tuple[int, ...], int]:
    """Copies the warps hold of the values shaped like a dot result whose MMA layout replicates it (jit.mma_layout:
    attention's 64-row tile on 8 warps is held twice)."""
    return {shape: layout.copies for shape, layout in ir_layouts(func, spec, num_warps).items() if layout.copies > 1}


def peak_bytes(profile: list[tuple[int, float, float]], mma_weight: float) -> float:
    """The most bytes a live_profile holds at once, accumulator-layout bytes counting mma_weight times."""
    live = most = 0.0
    for _, other, mma in profile:
        live += other + mma_weight * mma
        most = max(most, live)
    return most


def live_profile(func, copies: dict | None = None) -> list[tuple[int, float, float]]:
    """(position, change of other bytes, change of accumulator-layout bytes) of the tile values live in one program,
    from a liveness sweep over the tile IR in program order. A value lives from its definition to its last use
    (to just before it when an elementwise op of the same shape, or a dot adding into it, uses it: they work in
    place); one used inside a loop but defined before it lives through the whole loop (every iteration reads it);
    a loop's carried value lives from the body's start to its last use there, and what the body yields for it
    from its definition on; a tile loaded at the top level from where the backend can issue it (_hoist_loads).
    Floating-point values count their bytes (fp16 packs two to a register), pointer tiles and the offset tiles
    several accesses share their addresses' bytes (_address_bytes), other integer indices and masks nothing
    (recomputed where used)
    unless they hold data, tiles loaded for a dot of the same loop nothing where an async copy moves them to shared
    memory (_async_copyable): the weights that fit Triton's register counts best (simulator/data/
    h200_compile_facts.jsonl, calibration configs; simulator.estimate_registers scales it). copies: shape -> the
    copies of values of that shape a replicated MMA layout holds (layout_copies)."""
    copies = copies or {}
    order: dict[int, int] = {}  # id(op) -> position in program order
    spans: dict[int, tuple[int, int]] = {}  # id(op with regions) -> (its position, its body's last)
    loops: dict[int, list] = {}  # id(op) -> the loops that enclose it, outermost first

    def visit(ops, enclosing: list) -> None:
        for op in ops:
            order[id(op)] = len(order)
            loops[id(op)] = enclosing
            if op.regions:
                inner = enclosing + [op] if op.name in _LOOPS else enclosing
                for region in op.regions:
                    visit(region.ops, inner)
                spans[id(op)] = (order[id(op)], len(order) - 1)

    visit(func.body.ops, [])
    ranges: dict[int, list] = {}  # id(value) -> [value, first, last]
    for op in func.walk():
        done = spans[id(op)][1] if op.regions else order[id(op)]
        for result in op.results:
            ranges[id(result)] = [result, done, done]
        for region in op.regions:
            for arg in region.args:  # carried values and induction variables: from the body's start to their last use
                ranges[id(arg)] = [arg, spans[id(op)][0], spans[id(op)][0]]
    for op in func.walk():
        at = order[id(op)]
        elementwise = OPS[op.name].elementwise and op.results
        for value in op.operands:
            entry = ranges.get(id(value))
            if entry is None:
                continue
            # an elementwise op of the same shape computes in place, element by element, and a dot adds into its
            # accumulator: the operand's registers become the result's (a chain of them holds one tile, not one per op)
            in_place = (elementwise and value.type.shape == op.results[0].type.shape
                        or op.name == OP.TILE_DOT and value is op.operands[2])
            last = at - 1 if in_place else at
            for loop in loops[id(op)]:  # a use inside a loop the value was defined before
                first, end = spans[id(loop)]
                if entry[1] < first:
                    last = max(last, end)
                    break
            entry[2] = max(entry[2], last)
    writes = sorted(order[id(op)] for op in func.walk() if op.name in _WRITES)  # positions loads may not pass
    operands = _staged_operands(func)
    staged = operands | _streamed_values(func, order, loops, writes)
    mma = _accumulator_values(func, staged)
    data = _integer_data(func)
    _hoist_addresses(func, loops, spans, ranges)
    _hoist_loads(func, order, ranges, writes)
    addresses = _address_bytes(func, operands)
    events = []
    for value, first, last in ranges.values():
        size = 0.0 if id(value) in staged else _register_weight(value.type, id(value) in data, addresses.get(id(value)))
        size *= copies.get(tuple(value.type.shape), 1)
        if size:
            other, acc = (0.0, size) if id(value) in mma else (size, 0.0)
            events += [(first, other, acc), (last + 1, -other, -acc)]
    return sorted(events)


_REPEATS = with_trait(Trait.REPEATS)
_WRITES = with_trait(Trait.WRITES_MEMORY)


def _streamed_values(func, order: dict[int, int], loops: dict[int, list], writes: list[int]) -> set[int]:
    """ids of tiles that only one reduction of the same block folds, directly or through elementwise ops and
    broadcasts: each thread adds its elements in as they arrive, so the backend's pressure-aware scheduler
    interleaves the loads with the fold and the tile is never whole in registers (Triton's column sum of a
    256 x 128 tile on one warp takes 72 registers, h200_compile_facts.jsonl). A store between them pins the
    loads before it (the pointers may alias), and the tile is kept. Inside a loop the tile is kept too: Triton
    issues the next iterations' loads ahead (software pipelining), so it is whole (paged decode's K tile)."""
    users: dict[int, list] = {}
    for op in func.walk():
        for value in op.operands:
            users.setdefault(id(value), []).append(op)
    found: set[int] = set()

    def streamed(value, block, start: int) -> bool:
        consumers = {id(op): op for op in users.get(id(value), [])}
        if len(consumers) != 1 or not value.type.shape:  # one fold: two would need the whole tile, one after the other
            return False
        for op in consumers.values():
            if op.parent is not block:
                return False
            if op.name == OP.TILE_REDUCE:
                end = order[id(op)]
                if any(start < at < end for at in writes):
                    return False
                continue
            same_shape = OPS[op.name].elementwise and op.results[0].type.shape == value.type.shape
            if not (same_shape or op.name in _REPEATS) or not streamed(op.results[0], block, start):
                return False
        return True

    for op in func.walk():
        if op.regions or loops[id(op)] or not op.results or not op.results[0].type.shape:
            continue
        if streamed(op.results[0], op.parent, order[id(op)]):
            found.add(id(op.results[0]))
    return found


def _staged_operands(func) -> set[int]:
    """ids of tiles loaded in a loop that reach only that loop's dots' A and B operands (through casts and
    transposes): a GPU build copies them into shared memory asynchronously, so they never occupy registers (a
    loop-invariant operand loaded before the loop stays in registers)."""
    users = uses(func.body)
    found: set[int] = set()
    for op in func.walk():
        if op.name == OP.TILE_LOAD and _async_copyable(op.attrs, op.results[0].type.dtype.itemsize) and \
                only_dot_operands(op.results[0], users, op.parent):
            chain = [op]
            while chain:
                step = chain.pop()
                found.add(id(step.results[0]))
                chain += [use for use in users.get(step.results[0], []) if use.name != OP.TILE_DOT]
    return found


def _async_copyable(attrs: dict, itemsize: int) -> bool:
    """Whether Triton's pipeliner can copy a load (its attrs, its element size) into shared memory asynchronously:
    an async copy moves 4, 8 or 16 bytes per instruction, so an access narrower than 4 bytes (fp16 rows whose
    stride or bound is not a multiple of 16: one element per instruction) is loaded into registers and stored to
    shared memory from there. A load strided along the last dim is copied along the dim laid out fastest
    instead (a linear layer's [N, K] weight read as K x N), as wide as what is known of it there."""
    return _vector(attrs) * itemsize >= 4


def _vector(attrs: dict) -> int:
    """Elements one instruction of an access moves along the dim its layout runs fastest."""
    return int(attrs.get("fastest_vector" if attrs.get("strided") else "vector", 4))


def _accumulator_values(func, staged: set[int] = frozenset()) -> set[int]:
    """ids of the values in a dot's register layouts: its results, what elementwise ops make of them at the same
    shape (Triton keeps their layout), loop-carried values that such values are yielded to, and operands that are
    not staged through shared memory (a loop-invariant tile the dot reads from registers every iteration)."""
    found: set[int] = set()
    for _ in range(3):  # carried values feed back through loops: a few passes reach the fixed point
        before = len(found)
        for op in func.walk():
            if op.name == OP.TILE_DOT:
                found.update(id(r) for r in op.results)
                found.update(id(v) for v in op.operands[:2] if id(v) not in staged)
            elif OPS[op.name].elementwise and op.results and any(
                    id(v) in found and v.type.shape == op.results[0].type.shape for v in op.operands):
                found.update(id(r) for r in op.results)
            elif op.name == OP.SCF_FOR:
                body = op.regions[0]
                yielded = body.terminator.operands if body.terminator is not None else []
                for i, value in enumerate(yielded):
                    if id(value) in found:
                        found.update((id(body.args[i + 1]), id(op.results[i])))
        if len(found) == before:
            break
    return found


_RECOMPUTABLE = with_trait(Trait.FROM_INDEX) | with_trait(Trait.REPEATS) | with_trait(Trait.REINDEX) | with_trait(
    Trait.INDEX_ARITH)


def _integer_data(func) -> set[int]:
    """ids of integer tiles that hold data rather than indices: loaded, hashed (a multiply's high half, a bitcast),
    converted from floats or carried through a loop, or computed from such a tile. The GPU keeps them in registers
    like floats; index and mask arithmetic on aranges and scalars it recomputes where used."""
    found: set[int] = set()
    for op in func.walk():
        for region in op.regions:
            found.update(id(arg) for arg in region.args if arg.type.shape)
        derived = op.name not in _RECOMPUTABLE or any(
            id(v) in found or (v.type.shape and v.type.dtype.is_floating()) for v in op.operands)
        if derived:
            found.update(id(r) for r in op.results if r.type.shape and not r.type.dtype.is_floating())
    return found


def _hoist_addresses(func, loops: dict[int, list], spans: dict[int, tuple[int, int]], ranges: dict[int, list]) -> None:
    """Widen to the whole loop the live range of each pointer tile a loop's access reads that no load of the same
    loop feeds: LLVM hoists the loop-invariant part of each vector's offset out of the loop and keeps it in a
    register (a row sum of 64 x 256 fp16 elements of unaligned rows, one element per access, on 8 warps: 255
    registers, h200_compile_facts.jsonl)."""
    for op in _accesses(func):
        pointer = op.operands[0]
        entry = ranges.get(id(pointer))
        inner = loops[id(op)][-1] if loops[id(op)] else None
        if entry is None or inner is None or _loaded_in(pointer, inner):
            continue
        first, end = spans[id(inner)]
        entry[1], entry[2] = min(entry[1], first), max(entry[2], end)


def _hoist_loads(func, order: dict[int, int], ranges: dict[int, list], writes: list[int]) -> None:
    """Start the live range of each tile load at the function's top level where its data dependences allow, after
    the last write before it: the backend issues independent loads early so their round trips overlap, and the
    tiles of an unrolled stencil's taps are live together (Triton's depthwise 3x3 convolution of a 64 x 32 fp32
    tile on 4 warps takes 218 registers, h200_compile_facts.jsonl). Address arithmetic moves up with its load;
    loops, branches, reductions and writes stay where they are."""
    ready: dict[int, int] = {}  # id(value) -> the earliest position it can be computed at
    for op in func.walk():
        at = order[id(op)]
        earliest = max((ready.get(id(value), 0) for value in op.operands), default=0)
        if op.regions or op.parent is not func.body or op.name in _WRITES or op.name in _COMBINES:
            earliest = at
        elif op.name == OP.TILE_LOAD and op.results[0].type.shape:
            earliest = max([earliest] + [w + 1 for w in writes if w < at])
            entry = ranges.get(id(op.results[0]))
            if entry is not None:
                entry[1] = min(entry[1], earliest)
        for result in op.results:
            ready[id(result)] = earliest


def _address_bytes(func, staged: set[int] = frozenset()) -> dict[int, float]:
    """Register bytes per element of each pointer tile a load or store reads: an offset per vector the access moves,
    32-bit or, where the tile of offsets the access adds is 64-bit (`.to(tl.int64)` row offsets, a block pointer's),
    64-bit, widened onto the 64-bit base where used (a dot operand tile that runs contiguously along another dim than
    its last, in `staged` (_staged_operands): copied a vector along that dim, 16 bytes for a K-major B; Triton's
    A @ W^T of bf16 over 64 x 256 tiles on 2 warps takes 251 registers where counting one offset an element gives
    405), and a whole 64-bit address per vector for a pointer tile a loop
    carries to a load an async copy cannot move (each thread advances its own and loads through registers; with
    async copies Triton's counts fit the offset better). An integer offset tile that the pointers of two or more
    accesses add (a row's load and its store) in straight-line code is computed once and kept from the first to
    the last: a 32-bit offset per vector of the widest of them; across a loop the backend recomputes it (Triton's
    causally masked softmax over unaligned 1,500-wide bf16 rows, one element per access: 80 registers for 32
    elements a thread, h200_compile_facts.jsonl)."""
    vectors: dict[int, int] = {}
    wide: set[int] = set()  # pointer and offset tiles whose offsets are 64-bit
    narrow: set[int] = set()  # pointer tiles of accesses an async copy cannot move
    sharing: dict[int, list] = {}  # id(offset tile) -> the accesses whose pointers add it
    for op in _accesses(func):
        pointer = op.operands[0]
        vector = _vector(op.attrs) if op.name == OP.TILE_LOAD and id(op.results[0]) in staged else \
            int(op.attrs.get("vector", 4))
        vectors[id(pointer)] = max(vectors.get(id(pointer), 1), vector)
        if op.name == OP.TILE_LOAD and not _async_copyable(op.attrs, op.results[0].type.dtype.itemsize):
            narrow.add(id(pointer))
        source = pointer.op
        if source is not None and source.name == OP.TILE_ADDPTR and source.operands[1].type.shape:
            offset = id(source.operands[1])
            sharing.setdefault(offset, []).append(op)
            vectors[offset] = max(vectors.get(offset, 1), vector)
            if source.operands[1].type.dtype.itemsize == 8:
                wide.update((id(pointer), offset))
    found = {key: (8.0 if key in wide else 4.0) / vector for key, vector in vectors.items()
             if key not in sharing or len(sharing[key]) > 1 and _straight_line(sharing[key])}
    for loop in func.walk():
        if loop.name == OP.SCF_FOR and loop.regions[0].terminator is not None:
            body = loop.regions[0]
            for arg, update in zip(body.args[1:], body.terminator.operands):
                if id(arg) in narrow:
                    found[id(arg)] = found[id(update)] = 8.0 / vectors[id(arg)]
    return found


def _straight_line(accesses: list) -> bool:
    """Whether the accesses lie in one block with no loop between the first and the last."""
    block = accesses[0].parent
    if any(op.parent is not block for op in accesses):
        return False
    at = [block.ops.index(op) for op in accesses]
    return not any(op.name in _LOOPS for op in block.ops[min(at):max(at)])


def _accesses(func):
    """The loads and stores of tiles (not scalars)."""
    return (op for op in func.walk() if op.name in (OP.TILE_LOAD, OP.TILE_STORE) and op.operands[0].type.shape)


def _loaded_in(value, loop) -> bool:
    """Whether a load inside `loop` feeds value (a gather's addresses change with what each iteration reads)."""
    seen, todo = set(), [value]
    while todo:
        op = todo.pop().op
        if op is None or id(op) in seen or not _inside(op, loop):
            continue
        if op.name == OP.TILE_LOAD:
            return True
        seen.add(id(op))
        todo += op.operands
    return False


def _inside(op, loop) -> bool:
    while op is not None:
        if op is loop:
            return True
        op = op.parent.parent if op.parent is not None else None
    return False


def _register_weight(type_, data: bool = False, address_bytes: float | None = None) -> float:
    if not type_.shape:
        return 0.0
    dtype = type_.dtype
    if dtype.is_ptr():  # _address_bytes; a pointer tile no access reads: an offset per 4-element vector
        return (1.0 if address_bytes is None else address_bytes) * math.prod(type_.shape)
    if dtype.is_floating() or data:
        return float(math.prod(type_.shape) * dtype.itemsize)
    return (address_bytes or 0.0) * math.prod(type_.shape)  # an offset tile accesses share (_address_bytes)
