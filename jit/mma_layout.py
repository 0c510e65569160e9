"""How a GPU build spreads a dot's result over the program's warps, and what that layout costs.

Triton gives every tl.dot an MMA layout whose warpsPerCTA it picks in AccelerateMatmul (warpsPerTileV2 for
warp-level MMAs, warpsPerTileV3 for warpgroup MMAs). A warp-level MMA covers 16 x 8 of the result per warp and a
warpgroup MMA 64 rows per group of four warps, so when the chosen warps cover more rows or columns than the tile
has, warps hold copies and compute the same elements (flash attention's 64-row tile on 8 warps does its QK^T and
softmax twice). Rows split across warps make column reductions cross warps, columns split across warps make row
reductions cross warps, and a dot operand computed in registers under a column split must pass through shared
memory to reach every warp that needs its rows.

The rules, from Triton 3.x (lib/Dialect/TritonGPU/Transforms/AccelerateMatmul.cpp):
- warpgroup MMAs: a dot whose result flows into another dot puts all warps along M; otherwise warps start as
  [4, 1] and double along M while M exceeds 16 rows a warp, then along N.
- warp-level MMAs: a dot linked to another dot of its block (through the ops they share, either way) takes the
  first such dot's warps: all along M when its M >= N, else all along N; a lone dot balances its 16 x 8
  repetitions between M and N, preferring M.
"""

from __future__ import annotations

from dataclasses import dataclass

from dsl.dtypes import parse_ir_type
from dsl.ir.core import Block, Operation, Value, uses
from dsl.ir.ops import OP
from simulator.specs import DTYPE_ALIASES, SIMT_DOT_TYPES, MachineSpec

WARP_TILE = (16, 8)  # rows and columns of a dot's result one warp's MMA covers (a warpgroup MMA: 16 rows a warp)
FRAGMENT_LANES = (8, 4)  # lanes of a warp that share a column / a row of its MMA fragment


@dataclass(frozen=True)
class DotLayout:
    """A dot result's warps along M and N, and how many copies of each element the warps hold."""

    warps_m: int
    warps_n: int
    copies: int

    def along(self, shape: tuple[int, ...], axis: int) -> tuple[int, int]:
        """(lanes, distinct warps) a reduction along `axis` of a tile in this layout crosses."""
        warps = (self.warps_m, self.warps_n)[axis]
        return FRAGMENT_LANES[axis], min(warps, max(1, shape[axis] // WARP_TILE[axis]))


def chain_flags(dot: Operation) -> tuple[bool, bool]:
    """(whether the dot's result flows into another dot, whether its block links it to another dot through ops
    they share): what warpsPerTileV3 and warpsPerTileV2 respectively ask."""
    block = dot.parent
    root = block
    while isinstance(root, Block) and root.parent is not None and root.parent.parent is not None:
        root = root.parent.parent
    users = uses(root)
    forward, seen, todo = False, set(), list(dot.results)
    while todo:
        value = todo.pop()
        for user in users.get(value, []):
            if id(user) in seen:
                continue
            seen.add(id(user))
            forward |= user.name == OP.TILE_DOT
            todo.extend(user.results)
    return forward, _linked(dot, block)


def _linked(dot: Operation, block: Block) -> bool:
    """Whether the transitive slice of `dot` (operands' producers and results' users, within its block, not through
    transposes) holds another dot."""
    local = uses(block)
    seen, todo = {id(dot)}, [dot]
    while todo:
        op = todo.pop()
        neighbours = [v.op for v in op.operands if isinstance(v.op, Operation)]
        neighbours += [user for r in op.results for user in local.get(r, [])]
        for other in neighbours:
            if id(other) in seen or other.parent is not block or other.name == OP.TILE_PERMUTE:
                continue
            if other.name == OP.TILE_DOT:
                return True
            seen.add(id(other))
            todo.append(other)
    return False


# ops a dot operand passes through on its way from memory without being computed: which matrix instruction
# a GPU can use depends on whether the operand comes straight from a load and in which memory order
_PASS_THROUGH = frozenset({OP.ARITH_CAST, OP.ARITH_BITCAST, OP.TILE_PERMUTE})


def only_dot_operands(value: Value, users: dict[Value, list[Operation]], block: Block | None = None) -> bool:
    """Whether `value` reaches nothing but tl.dot A and B operands (of dots in `block`, when given), through casts
    and transposes: a GPU build stages it in shared memory as the MMAs read it. users: dsl.ir.core.uses."""
    consumers = users.get(value, [])
    return bool(consumers) and all(
        op.name == OP.TILE_DOT and all(o is not value for o in op.operands[2:])
        and (block is None or op.parent is block)
        or op.name in _PASS_THROUGH and only_dot_operands(op.results[0], users, block)
        for op in consumers)


def dot_operand_load(value: Value) -> tuple[Operation, bool] | None:
    """(the tile.load a dot operand comes from, whether it is transposed on the way), or None when it is computed."""
    transposed = False
    op = value.op
    while op is not None and op.name in _PASS_THROUGH:
        if op.name == OP.TILE_PERMUTE:
            order = tuple(op.attrs["order"])
            transposed ^= order[-2:] == (len(order) - 1, len(order) - 2)
        op = op.operands[0].op
    return (op, transposed) if op is not None and op.name == OP.TILE_LOAD else None


def warps_per_tile(shape: tuple[int, int], num_warps: int, warpgroup: bool, chained: bool) -> tuple[int, int]:
    """Triton's warpsPerCTA for a dot result of `shape`: see the module docstring."""
    m, n = shape
    if warpgroup:
        if chained:
            return num_warps, 1
        warps = [4, 1]
        while warps[0] * warps[1] < num_warps:
            warps[0 if m > WARP_TILE[0] * warps[0] else 1] *= 2
        return warps[0], warps[1]
    if chained:
        return (num_warps, 1) if m >= n else (1, num_warps)
    warps, reps = [1, 1], [-(-m // WARP_TILE[0]), -(-n // WARP_TILE[1])]
    while warps[0] * warps[1] < num_warps:
        if reps[0] >= reps[1]:
            warps[0] *= 2
            reps[0] = max(1, reps[0] // 2)
        else:
            warps[1] *= 2
            reps[1] = max(1, reps[1] // 2)
    return warps[0], warps[1]


def mma_type(dtype, input_precision: str = "tf32") -> str:
    """The matrix-instruction type a dot of `dtype` operands runs as: fp32 operands as TF32 unless the precision is
    ieee (no tensor core)."""
    key = dtype.name
    if dtype.is_fp32():
        key = "fp32" if input_precision == "ieee" else "tf32"
    return DTYPE_ALIASES.get(key, key)


def probe_layouts(probes, live, spec: MachineSpec, num_warps: int) -> dict[int, DotLayout]:
    """The layout of each live dot probe's result (profiler records; jit.codegen.instrument)."""
    dots = [(p, tuple(probes[p]["results"][0][0]),
             mma_type(parse_ir_type(probes[p]["operands"][0][1]), probes[p]["attrs"].get("input_precision", "tf32")),
             tuple(probes[p].get("chained", (False, False))))
            for p in sorted(live) if probes[p]["op"] == OP.TILE_DOT]
    return _assign(dots, spec, num_warps)


def ir_layouts(func, spec: MachineSpec, num_warps: int) -> dict[tuple[int, ...], DotLayout]:
    """The layout of the values shaped like each dot result of a function's tile IR (the first such dot's)."""
    dots = [(i, tuple(op.results[0].type.shape),
             mma_type(op.operands[0].type.dtype, op.attrs.get("input_precision", "tf32")), chain_flags(op))
            for i, op in enumerate(op for op in func.walk() if op.name == OP.TILE_DOT)]
    found = _assign(dots, spec, num_warps)
    return by_shape({i: shape for i, shape, _, _ in dots}, found)


def _assign(dots, spec: MachineSpec, num_warps: int) -> dict:
    """Layouts of (key, result shape, MMA type, chain flags) dots in program order: a warp-level MMA linked to an
    earlier one takes its warps; dots without a matrix instruction (SIMT types) or of another rank have none."""
    found = {}
    linked_warps = None
    for key, shape, kind, (forward, linked) in dots:
        if len(shape) != 2 or kind in SIMT_DOT_TYPES:
            continue
        warpgroup = spec.async_mma(shape[0], num_warps)
        if warpgroup or not linked:
            warps = warps_per_tile(shape, num_warps, warpgroup, forward and warpgroup)
        else:
            linked_warps = linked_warps or warps_per_tile(shape, num_warps, False, True)
            warps = linked_warps
        copies = max(1, WARP_TILE[0] * warps[0] // shape[0]) * max(1, WARP_TILE[1] * warps[1] // shape[1])
        found[key] = DotLayout(warps[0], warps[1], copies)
    return found


def by_shape(shapes: dict, layouts: dict) -> dict[tuple[int, ...], DotLayout]:
    """Tiles shaped like a dot result live in that dot's layout (the first such dot's, in program order);
    shapes: dot key -> its result shape."""
    found: dict[tuple[int, ...], DotLayout] = {}
    for key in sorted(layouts):
        found.setdefault(tuple(shapes[key]), layouts[key])
    return found
