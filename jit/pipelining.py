"""Which loads a GPU build software-pipelines: Triton's rule, so the profiler charges the round trips a GPU waits for.

Triton (its AssignLatencies pass) pipelines loads only in innermost `scf.for` loops whose num_stages (the loop's
`tl.range` hint, else the launch's) is above 1. In a loop with `tl.dot` it takes the loads that feed a dot's A or
B operand through ops of the loop body, walking back from each dot; a load met on the way to another such load's
address is one stage further, and loads as far as num_stages - 1 stages are left synchronous. In a loop without
`tl.dot` it takes every load of the body, but only when the loop carries a num_stages hint. Loads of fewer than 4
contiguous bytes per thread cannot become asynchronous copies; the profiler, which knows the layout, decides that.
"""

from __future__ import annotations

from dsl.ir.core import Block, Operation
from dsl.ir.ops import OP, Trait, with_trait

_LOOPS = (OP.SCF_FOR, OP.SCF_WHILE)
_WRITES = with_trait(Trait.WRITES_MEMORY)


def enclosing_loop(op: Operation) -> Operation | None:
    """The innermost loop whose body holds `op` (directly or inside an `if`)."""
    block = op.parent
    while isinstance(block, Block) and block.parent is not None:
        owner = block.parent
        if owner.name in _LOOPS:
            return owner
        block = owner.parent
    return None


def load_pipelining(load: Operation) -> dict:
    """How a GPU build treats a tile.load: {"loop": the enclosing loop op or None, "stages": the loop's
    num_stages hint (None: the launch's), "distance": the load's stage distance when Triton would pipeline
    it given enough stages (None when it never would), "level": how many loads of the same loop body (or of
    the straight-line code around it) its address waits for, one after another, "serial": whether it waits for
    the previous iteration's loads, "constant": whether the loop's trip count is a compile-time constant, "writes":
    whether the loop's body writes memory (a later iteration's loads may not move above the write: without
    noalias pointers they may read what it wrote)}."""
    loop = enclosing_loop(load)
    level = _level(load, load.parent)
    if loop is None:
        return {"loop": None, "stages": None, "distance": None, "level": level, "serial": False, "constant": False,
                "writes": False}
    stages = loop.attrs.get("num_stages")
    body = loop.regions[0]
    innermost = loop.name == OP.SCF_FOR and not any(op.name in _LOOPS for op in body.walk() if op is not loop)
    distance = None
    if innermost and load.parent is body:
        distance = _distances(body, with_hint=stages is not None).get(id(load))
    return {"loop": loop, "stages": stages, "distance": distance, "level": level, "serial": _serial(load, loop),
            "constant": constant_trips(loop), "writes": any(op.name in _WRITES for op in body.walk())}


def constant_trips(loop: Operation) -> bool:
    """Whether the loop's trip count is known when it is compiled (an `scf.for` whose bounds and step are
    constants, as `range(TOP_K)` of a constexpr): the backend may then unroll it fully."""
    return loop.name == OP.SCF_FOR and all(v.op is not None and v.op.name == OP.ARITH_CONSTANT
                                           for v in loop.operands[:3])


def _serial(load: Operation, loop: Operation) -> bool:
    """Whether the load's address waits for a load of the previous iteration (a pointer chase: the loop carries a
    loaded value into the next address), so no unrolling or pipelining can overlap the iterations' round trips."""
    body = loop.regions[0]
    carried = {id(arg): i for i, arg in enumerate(body.args[1:])}
    yielded = body.terminator.operands if body.terminator is not None else []

    def sources(values) -> tuple[set[int], bool]:
        """The carried values `values` are computed from in the body, and whether a load is on the way."""
        args, loads, seen, todo = set(), False, set(), list(values)
        while todo:
            value = todo.pop()
            if id(value) in carried:
                args.add(carried[id(value)])
            op = value.op
            if op is None or id(op) in seen or not _inside(op, body):
                continue
            seen.add(id(op))
            loads |= op.name == OP.TILE_LOAD
            todo += _nested_operands(op)
        return args, loads

    args, _ = sources(load.operands[:1])
    return any(i < len(yielded) and sources([yielded[i]])[1] for i in args)


def _inside(op: Operation, block: Block) -> bool:
    """Whether `op` is in `block`, directly or inside an op that is."""
    while isinstance(op, Operation) and isinstance(op.parent, Block):
        if op.parent is block:
            return True
        op = op.parent.parent
    return False


def _level(load: Operation, block: Block, limit: int = 256) -> int:
    """The longest chain of loads in `block` that the load's address is computed from (a page-table gather: 1)."""
    memo: dict[int, int] = {}

    def depth(op: Operation) -> int:
        if id(op) in memo or len(memo) > limit:
            return memo.get(id(op), 0)
        memo[id(op)] = 0
        found = max((depth(v.op) for v in op.operands if v.op is not None and v.op.parent is block), default=0)
        memo[id(op)] = found + (1 if op.name == OP.TILE_LOAD else 0)
        return memo[id(op)]

    return max((depth(v.op) for v in load.operands[:1] if v.op is not None and v.op.parent is block), default=0)


def _distances(body: Block, with_hint: bool) -> dict[int, int]:
    """id(load) -> stage distance of the loads Triton's walk reaches in one loop body."""
    dots = [op for op in body.ops if op.name == OP.TILE_DOT]
    found: dict[int, int] = {}
    excluded: set[int] = set()

    def walk(op: Operation, distance: int, seen: set[int]) -> None:
        if id(op) in seen or id(op) in excluded:
            return
        seen.add(id(op))
        if op.name == OP.TILE_LOAD:
            if found.get(id(op), distance) != distance:  # reached at two distances: Triton leaves it alone
                del found[id(op)]
                excluded.add(id(op))
                return
            found[id(op)] = distance
            distance += 1
        operands = op.operands[:2] if op.name == OP.TILE_DOT else _nested_operands(op)
        for value in operands:
            source = value.op
            if source is not None and source.parent is body:
                walk(source, distance, seen)

    for dot in dots:  # each dot's walk starts afresh
        walk(dot, 0, set())
    if not dots and with_hint:
        seen: set[int] = set()  # one walk over the whole body
        for op in body.ops:
            if op.name != OP.TILE_LOAD:
                walk(op, 0, seen)
    return found


def _nested_operands(op: Operation) -> list:
    """The op's operands and the values its regions use from outside them (MLIR's getNestedOperands)."""
    values = list(op.operands)
    for region in op.regions:
        defined = {id(arg) for arg in region.args}
        for inner in region.walk():
            defined.update(id(r) for r in inner.results)
            values.extend(v for v in inner.operands if id(v) not in defined)
    return values


def phase_keys(loads: dict[int, dict], num_stages: int, vector_bytes: dict[int, int],
               barrier_loops: frozenset = frozenset()) -> dict[int, str]:
    """The memory phase of each load probe (simulator.Counters.phase_rounds): "loop:depth:chain", with ":serial"
    when a load of the loop waits for the previous iteration's, ":constant" when the loop's trip count is a
    compile-time constant and ":ordered" when its body writes memory or waits at a barrier (barrier_loops: the
    loop ids whose ops do, a cross-warp reduction's exchange for one), so no later iteration's loads move above it.

    loads: probe -> its record (jit.codegen.instrument: loop, loop_stages, pipeline_distance, level); vector_bytes:
    probe -> the contiguous bytes one thread loads at once. The loads of one loop form one phase; depth is the
    iterations of loads in flight (Triton's (stages - 1) / (farthest distance + 1), or 0 when any load of the loop
    stays synchronous); chain the dependent round trips of an iteration (1 + the longest chain of loads a
    synchronous address waits for). Loads outside loops form the phase "-"."""
    by_loop: dict[object, list[int]] = {}
    for probe, info in loads.items():
        by_loop.setdefault(info.get("loop"), []).append(probe)
    keys = {}
    for loop, probes in by_loop.items():
        serial = any(loads[p].get("serial") for p in probes)
        constant = any(loads[p].get("constant") for p in probes)
        ordered = loop in barrier_loops or any(loads[p].get("writes") for p in probes)
        depth = 0
        if loop is not None:
            stages = loads[probes[0]].get("loop_stages") or num_stages
            distances = [loads[p].get("pipeline_distance") for p in probes]
            if all(d is not None and d < stages - 1 and vector_bytes.get(p, 0) >= 4 for d, p in zip(distances, probes)):
                depth = (stages - 1) // (max(distances) + 1)
        chain = 1 if depth else 1 + max(loads[p].get("level", 0) for p in probes)
        key = (f"{'-' if loop is None else loop}:{depth}:{chain}" + (":serial" if serial else "")
               + (":constant" if constant else "") + (":ordered" if ordered and loop is not None else ""))
        keys.update(dict.fromkeys(probes, key))
    return keys
