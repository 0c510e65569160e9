"""The op table: every op of the tile IR, declared once.

Each row says how many operands, results and regions the op has, which attributes it needs,
whether it is pure and elementwise, which instruction class the simulator counts it as, which
traits it has (the properties passes and executors ask about, see `Trait`), and what it means.
The verifier, printer, parser, passes, interpreter, profiler and LLVM lowering all look ops up
here, by the constants of `OP` (`OP.ARITH_ADD == "arith.add"`) and by the sets `with_trait`
derives from the rows; adding an op is one row plus its lowerings.

Semantics shared by all rows:
- Operands of an elementwise op have the result's shape; the frontend inserts `tile.splat` and
  `tile.broadcast` first. Scalars are shape ().
- Integer arithmetic wraps (two's complement). `arith.div` / `arith.rem` on integers truncate toward
  zero like C (Triton's `//` and `%` on tensors); x / 0 gives -1 (all ones) and x % 0 gives x, and
  INT_MIN / -1 gives INT_MIN, so no input traps. Shifts by >= the bit width give 0 (`arith.shr` on a
  signed type gives the sign fill), as the GPU does.
- Float ops on fp16 / bf16 / fp8 compute in fp32 and round the result to the element type
  (round to nearest even), which equals the GPU's correctly rounded narrow arithmetic.
- Comparisons give int1; float comparisons are ordered except `ne`, which is unordered (true on NaN).
- `math.*` functions are within 2 ulp of the correctly rounded result (jit/mathlib.py states
  each bound); `math.sin` / `math.cos` give NaN for |x| > 2^48 (fp32) or 2^40 (fp64), where their
  argument reduction would lose every bit.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the IR's classes look their op up here, so the table must not import them at run time
    from dsl.ir.core import Operation


class VerifyError(Exception):
    """The IR breaks a rule of the op table (a compiler bug, or hand-written IR that is wrong)."""


class Trait:
    """What a pass or executor may assume of an op; a row lists the traits it has.

    Traits are facts about the op's meaning, not about one consumer, so each set a pass needs is
    derived from them (`with_trait`) instead of being kept by hand next to the pass.
    """

    FROM_INDEX = "from_index"  # each element is a function of its index alone (constants, aranges, splats)
    REPEATS = "repeats"  # repeats operand 0's elements along new or size-1 dims, in their order
    REINDEX = "reindex"  # moves or repeats operand 0's lanes by an index map; addresses and bounds see through
    SAME_VALUES = "same_values"  # every result element is an element of operand 0, unchanged (a uniform
    #                              operand gives a uniform result; value ranges pass through)
    SELECTS = "selects"  # every result element is one of the operands' elements (a choice, no arithmetic)
    INDEX_ARITH = "index_arith"  # one cheap instruction on integers and pointers: index and mask arithmetic
    CONSUMES_ELEMENTS = "consumes_elements"  # reads its tile operands element by element, or materialises
    #                                          them where it is, so a fused operand is computed inline
    COMBINES = "combines"  # folds its operands' elements along an axis with its combine region (reduce, scan)
    READS_MEMORY = "reads_memory"
    WRITES_MEMORY = "writes_memory"
    SILENT = "silent"  # emits no GPU instruction of its own (folded into its consumers), so it is not counted


@dataclass(frozen=True)
class OpInfo:
    name: str
    operands: int  # -1 = variadic
    results: int  # -1 = variadic
    regions: int = 0
    attrs: tuple[str, ...] = ()  # required attributes
    # warp-instruction class the profiler counts per element: a key of simulator.INSTRUCTION_CLASSES (the
    # float classes count as "integer", multiplies as "integer_multiply", on integer types), or one the profiler
    # counts by its own fields:
    # memory, atomic, tensor, barrier, none (no SIMT instruction: a register renaming or a layout change)
    cls: str = "other"
    pure: bool = True
    elementwise: bool = False
    terminator: bool = False
    verify: Callable[[Operation], None] | None = None
    doc: str = ""
    traits: frozenset[str] = frozenset()
    # operands whose elements the result carries (for tile.addptr: whose base address), so a pointer
    # result derives from the buffers of these operands
    carries: tuple[int, ...] = ()


def _same_shapes(op: Operation) -> None:
    shapes = {v.type.shape for v in op.operands} | {v.type.shape for v in op.results}
    if len(shapes) > 1:
        raise VerifyError(f"{op.name}: operands and results must share one shape, got {sorted(shapes)}")


def _same_types(op: Operation) -> None:
    _same_shapes(op)
    types = {v.type.dtype for v in op.operands} | {v.type.dtype for v in op.results}
    if len(types) > 1:
        raise VerifyError(f"{op.name}: operands and result must share one element type, got {sorted(map(str, types))}")


def _check_cmp(op: Operation) -> None:
    _same_shapes(op)
    if op.operands[0].type.dtype != op.operands[1].type.dtype:
        raise VerifyError("arith.cmp: operands must share one element type")
    if not op.result.type.dtype.is_bool():
        raise VerifyError("arith.cmp: result must be int1")
    if op.attrs["predicate"] not in ("eq", "ne", "lt", "le", "gt", "ge"):
        raise VerifyError(f"arith.cmp: unknown predicate {op.attrs['predicate']!r}")


def _check_select(op: Operation) -> None:
    _same_shapes(op)
    cond, a, b = op.operands
    if not cond.type.dtype.is_bool() or a.type.dtype != b.type.dtype or a.type.dtype != op.result.type.dtype:
        raise VerifyError("arith.select: (int1, T, T) -> T")


def _check_addptr(op: Operation) -> None:
    _same_shapes(op)
    ptr, offset = op.operands
    if not ptr.type.dtype.is_ptr() or not offset.type.dtype.is_int() or op.result.type.dtype != ptr.type.dtype:
        raise VerifyError("tile.addptr: (ptr<T>, integer) -> ptr<T>")


def _check_bitcast(op: Operation) -> None:
    _same_shapes(op)
    if op.operands[0].type.dtype.primitive_bitwidth != op.result.type.dtype.primitive_bitwidth:
        raise VerifyError("arith.bitcast: source and result widths differ")


def _check_splat(op: Operation) -> None:
    if not op.operands[0].type.is_scalar or op.operands[0].type.dtype != op.result.type.dtype:
        raise VerifyError("tile.splat: takes a scalar of the result's element type")


def _check_broadcast(op: Operation) -> None:
    src, dst = op.operands[0].type, op.result.type
    if src.rank != dst.rank or any(s not in (1, d) for s, d in zip(src.shape, dst.shape)):
        raise VerifyError(f"tile.broadcast: cannot broadcast {src} to {dst}")


def _check_expand_dims(op: Operation) -> None:
    src, dst, axis = op.operands[0].type, op.result.type, op.attrs["axis"]
    if dst.shape != src.shape[:axis] + (1,) + src.shape[axis:]:
        raise VerifyError(f"tile.expand_dims: {src} with axis {axis} does not give {dst}")


def _check_reshape(op: Operation) -> None:
    if op.operands[0].type.numel != op.result.type.numel:
        raise VerifyError("tile.reshape: element counts differ")


def _check_permute(op: Operation) -> None:
    src, order = op.operands[0].type, tuple(op.attrs["order"])
    if sorted(order) != list(range(src.rank)) or op.result.type.shape != tuple(src.shape[i] for i in order):
        raise VerifyError(f"tile.permute: bad order {order} for {src}")


def _check_dot(op: Operation) -> None:
    a, b, acc = (v.type for v in op.operands)
    if a.rank not in (2, 3) or a.rank != b.rank or acc.shape != a.shape[:-1] + b.shape[-1:] \
            or a.shape[-1] != b.shape[-2] or (a.rank == 3 and a.shape[0] != b.shape[0]):
        raise VerifyError(f"tile.dot: shapes {a}, {b}, {acc} do not form a matrix product")
    if op.result.type != acc:
        raise VerifyError("tile.dot: result type must equal the accumulator's")


def _check_load(op: Operation) -> None:
    _same_shapes(op)
    ptr, mask, other = op.operands
    if not ptr.type.dtype.is_ptr() or not mask.type.dtype.is_bool() \
            or other.type.dtype != ptr.type.dtype.element_ty or op.result.type.dtype != other.type.dtype:
        raise VerifyError("tile.load: (ptr<T>, int1, T) -> T")


def _check_store(op: Operation) -> None:
    _same_shapes(op)
    ptr, value, mask = op.operands
    if not ptr.type.dtype.is_ptr() or value.type.dtype != ptr.type.dtype.element_ty or not mask.type.dtype.is_bool():
        raise VerifyError(f"{op.name}: (ptr<T>, T, int1)")


def _check_atomic(op: Operation) -> None:
    _same_shapes(op)
    ptr, value = op.operands[:2]
    if not ptr.type.dtype.is_ptr() or value.type.dtype != ptr.type.dtype.element_ty:
        raise VerifyError(f"{op.name}: value type must be the pointee type")


def _check_atomic_load(op: Operation) -> None:
    _same_shapes(op)
    ptr, mask = op.operands
    if not ptr.type.dtype.is_ptr() or not mask.type.dtype.is_bool() \
            or op.result.type.dtype != ptr.type.dtype.element_ty:
        raise VerifyError("tile.atomic_load: (ptr<T>, int1) -> T")


def _check_atomic_poll(op: Operation) -> None:
    ptr, expected, timeout = op.operands
    if ptr.type.shape != expected.type.shape or op.result.type.shape != ptr.type.shape:
        raise VerifyError("tile.atomic_poll: pointer, expected value and result must share one shape")
    if not ptr.type.dtype.is_ptr() or expected.type.dtype != ptr.type.dtype.element_ty \
            or not op.result.type.dtype.is_bool() or timeout.type.shape or timeout.type.dtype.name != "int64":
        raise VerifyError("tile.atomic_poll: (ptr<T>, T, int64 scalar) -> int1")


def _check_map_elementwise(op: Operation) -> None:
    _same_shapes(op)
    pack = op.attrs["pack"]
    region = op.regions[0]
    if len(region.args) != pack * len(op.operands) or len(region.terminator.operands) != pack * len(op.results):
        raise VerifyError("tile.map_elementwise: the region takes `pack` scalars per operand and yields `pack` "
                          "per result")
    numel = 1
    for d in op.operands[0].type.shape:
        numel *= d
    if numel % pack:
        raise VerifyError(f"tile.map_elementwise: pack {pack} does not divide {numel} elements")


def _check_reduce(op: Operation) -> None:
    axis = op.attrs["axis"]
    for src, res in zip(op.operands, op.results):
        if res.type.shape != src.type.shape[:axis] + src.type.shape[axis + 1:]:
            raise VerifyError(f"tile.reduce: result shape must drop axis {axis} of {src.type}")
    if len(op.regions[0].args) != 2 * len(op.operands):
        raise VerifyError("tile.reduce: the combine region takes (lhs..., rhs...)")


def _check_scan(op: Operation) -> None:
    for src, res in zip(op.operands, op.results):
        if res.type != src.type:
            raise VerifyError("tile.scan: results have the operands' types")
    if len(op.regions[0].args) != 2 * len(op.operands):
        raise VerifyError("tile.scan: the combine region takes (lhs..., rhs...)")


def _check_for(op: Operation) -> None:
    lb, ub, step, *inits = op.operands
    body = op.regions[0]
    if not all(v.type.is_scalar and v.type.dtype.is_int() for v in (lb, ub, step)):
        raise VerifyError("scf.for: bounds and step are integer scalars")
    if [a.type for a in body.args] != [lb.type] + [v.type for v in inits]:
        raise VerifyError("scf.for: body arguments are (induction variable, carried values...)")
    _check_yield(body, [r.type for r in op.results], "scf.for")


def _check_if(op: Operation) -> None:
    if not (op.operands[0].type.is_scalar and op.operands[0].type.dtype.is_bool()):
        raise VerifyError("scf.if: the condition is an int1 scalar")
    for region in op.regions:
        _check_yield(region, [r.type for r in op.results], "scf.if")


def _check_while(op: Operation) -> None:
    before, after = op.regions
    cond = before.terminator
    if cond is None or cond.name != "scf.condition":
        raise VerifyError("scf.while: the before region ends in scf.condition")
    if [v.type for v in cond.operands[1:]] != [r.type for r in op.results] or \
            [a.type for a in after.args] != [r.type for r in op.results]:
        raise VerifyError("scf.while: scf.condition forwards the results' types to the after region")
    _check_yield(after, [a.type for a in before.args], "scf.while")


def _check_yield(block, types, owner: str) -> None:
    term = block.terminator
    if term is None or term.name != "scf.yield":
        raise VerifyError(f"{owner}: region must end in scf.yield")
    if [v.type for v in term.operands] != types:
        got = [str(v.type) for v in term.operands]
        raise VerifyError(f"{owner}: scf.yield types {got} != {[str(t) for t in types]}")


def _row(name, operands, results, traits=(), **kw) -> OpInfo:
    return OpInfo(name, operands, results, traits=frozenset(traits), **kw)


_T = Trait
_SHAPE = (_T.SAME_VALUES, _T.SILENT)  # lanes renamed in registers: same values, no instruction
# the unary math functions: jit/mathlib.py has the algorithm of each "special" one (the LLVM lowering and
# the numpy reference at once); the "fp_add" ones are single IEEE operations
MATH_UNARY_ROWS = (("exp", "special"), ("exp2", "special"), ("log", "special"), ("log2", "special"),
                   ("sin", "special"), ("cos", "special"), ("tanh", "special"), ("sqrt", "special"),
                   ("rsqrt", "special"), ("erf", "special"), ("cbrt", "special"),
                   ("floor", "fp_add"), ("ceil", "fp_add"), ("trunc", "fp_add"), ("rint", "fp_add"),
                   ("abs", "fp_add"))

_ROWS: list[OpInfo] = [
    # -- values and indices
    _row("arith.constant", 0, 1, attrs=("value",), cls="other", traits=(_T.FROM_INDEX, _T.SILENT),
         doc="A scalar, or a tile with every element equal to `value`."),
    _row("tile.arange", 0, 1, attrs=("start", "end"), cls="integer", traits=(_T.FROM_INDEX,),
         doc="int32 [start, end)."),
    _row("tile.program_id", 0, 1, attrs=("axis",), cls="other", traits=(_T.SILENT,),
         doc="This program's index on grid axis 0, 1 or 2 (int32)."),
    _row("tile.num_programs", 0, 1, attrs=("axis",), cls="other", traits=(_T.SILENT,),
         doc="The grid's size on an axis (int32)."),
    # -- elementwise arithmetic
    _row("arith.add", 2, 1, cls="fp_add", elementwise=True, verify=_same_types, traits=(_T.INDEX_ARITH,)),
    _row("arith.sub", 2, 1, cls="fp_add", elementwise=True, verify=_same_types, traits=(_T.INDEX_ARITH,)),
    _row("arith.mul", 2, 1, cls="fp_mul", elementwise=True, verify=_same_types, traits=(_T.INDEX_ARITH,)),
    _row("arith.div", 2, 1, cls="special", elementwise=True, verify=_same_types,
         doc="Float: IEEE division, correctly rounded. Integer: truncating (C)."),
    _row("arith.rem", 2, 1, cls="special", elementwise=True, verify=_same_types,
         doc="Float: C fmod (sign of the dividend). Integer: C remainder."),
    _row("arith.min", 2, 1, attrs=("propagate_nan",), cls="fp_add", elementwise=True, verify=_same_types,
         traits=(_T.INDEX_ARITH, _T.SELECTS),
         doc="Float: if propagate_nan, NaN when either is NaN; else the non-NaN operand (minNum)."),
    _row("arith.max", 2, 1, attrs=("propagate_nan",), cls="fp_add", elementwise=True, verify=_same_types,
         traits=(_T.INDEX_ARITH, _T.SELECTS)),
    _row("arith.and", 2, 1, cls="integer", elementwise=True, verify=_same_types, traits=(_T.INDEX_ARITH,)),
    _row("arith.or", 2, 1, cls="integer", elementwise=True, verify=_same_types, traits=(_T.INDEX_ARITH,)),
    _row("arith.xor", 2, 1, cls="integer", elementwise=True, verify=_same_types, traits=(_T.INDEX_ARITH,)),
    _row("arith.shl", 2, 1, cls="integer", elementwise=True, verify=_same_types, traits=(_T.INDEX_ARITH,)),
    _row("arith.shr", 2, 1, cls="integer", elementwise=True, verify=_same_types, traits=(_T.INDEX_ARITH,),
         doc="Arithmetic shift for signed element types, logical for unsigned."),
    _row("arith.umulhi", 2, 1, cls="integer_multiply", elementwise=True, verify=_same_types,
         doc="High half of the full-width product (as unsigned for uint types, signed otherwise)."),
    _row("arith.neg", 1, 1, cls="fp_add", elementwise=True, verify=_same_types, traits=(_T.INDEX_ARITH,)),
    _row("arith.not", 1, 1, cls="integer", elementwise=True, verify=_same_types, traits=(_T.INDEX_ARITH,),
         doc="Bitwise complement."),
    _row("arith.fma", 3, 1, cls="fp_fma", elementwise=True, verify=_same_types, doc="a*b+c with one rounding."),
    _row("arith.cmp", 2, 1, attrs=("predicate",), cls="compare_select", elementwise=True, verify=_check_cmp,
         traits=(_T.INDEX_ARITH,)),
    _row("arith.select", 3, 1, cls="compare_select", elementwise=True, verify=_check_select,
         traits=(_T.INDEX_ARITH, _T.SELECTS), carries=(1, 2)),
    _row("arith.cast", 1, 1, attrs=("rounding",), cls="conversion", elementwise=True, verify=_same_shapes,
         traits=(_T.INDEX_ARITH,),
         doc="Value conversion. int->int: truncate or extend by the source's signedness; float->float: "
             "round per `rounding` ('rtne' or 'rtz'), narrowing to fp8 saturates to the largest finite; "
             "float->int: toward zero, saturating, NaN->0; int->float: nearest even; to int1: x != 0; "
             "ptr<->int64 and ptr->ptr: the address unchanged."),
    _row("arith.bitcast", 1, 1, cls="conversion", elementwise=True, verify=_check_bitcast,
         doc="Reinterpret the bits."),
    _row("tile.addptr", 2, 1, cls="integer", elementwise=True, verify=_check_addptr, traits=(_T.INDEX_ARITH,),
         carries=(0,), doc="ptr + offset * sizeof(element): the offset counts elements, as in Triton."),
] + [
    _row(f"math.{fn}", 1, 1, cls=cls, elementwise=True, verify=_same_types) for fn, cls in MATH_UNARY_ROWS
] + [
    _row("math.pow", 2, 1, cls="special", elementwise=True, verify=_same_types),
    # -- shapes (pure index remaps; no data movement on their own)
    _row("tile.splat", 1, 1, cls="none", verify=_check_splat, carries=(0,),
         traits=(*_SHAPE, _T.FROM_INDEX, _T.REPEATS), doc="Every element is the scalar operand."),
    _row("tile.broadcast", 1, 1, cls="none", verify=_check_broadcast, carries=(0,),
         traits=(*_SHAPE, _T.REPEATS, _T.REINDEX), doc="Dims of size 1 repeat; ranks equal."),
    _row("tile.expand_dims", 1, 1, attrs=("axis",), cls="none", verify=_check_expand_dims, carries=(0,),
         traits=(*_SHAPE, _T.REPEATS, _T.REINDEX)),
    _row("tile.reshape", 1, 1, cls="none", verify=_check_reshape, carries=(0,),
         traits=(*_SHAPE, _T.CONSUMES_ELEMENTS), doc="Same elements in row-major order."),
    _row("tile.permute", 1, 1, attrs=("order",), cls="none", verify=_check_permute, carries=(0,),
         traits=(_T.SAME_VALUES, _T.REINDEX), doc="result.shape[i] = src.shape[order[i]]."),
    _row("tile.join", 2, 1, cls="none", carries=(0, 1), traits=(_T.CONSUMES_ELEMENTS,),
         doc="Stack two equal tiles along a new minor dim of size 2."),
    _row("tile.split", 1, 2, cls="none", carries=(0,),
         doc="Inverse of join: the last dim (size 2) split in two tiles."),
    _row("tile.cat", 2, 1, cls="none", carries=(0, 1), traits=(_T.CONSUMES_ELEMENTS,),
         doc="Concatenate along dim 0."),
    _row("tile.flip", 1, 1, attrs=("axis",), cls="none", verify=_same_types, carries=(0,),
         traits=(_T.SAME_VALUES, _T.REINDEX)),
    _row("tile.gather", 2, 1, attrs=("axis",), cls="shuffle", carries=(0,), traits=(_T.CONSUMES_ELEMENTS,),
         doc="result[i..] = src[i.. with index[i..] on `axis`]; index has the result's shape."),
    # -- reductions and scans: the region combines (lhs..., rhs...) into (out...)
    _row("tile.reduce", -1, -1, regions=1, attrs=("axis",), cls="shuffle", verify=_check_reduce,
         traits=(_T.COMBINES, _T.CONSUMES_ELEMENTS),
         doc="Pairwise tree along `axis`: while n > 1, x[i] = combine(x[i], x[i + n/2]) for i < n/2. "
             "This fixed order is what the interpreter and the compiled code both follow."),
    _row("tile.scan", -1, -1, regions=1, attrs=("axis", "reverse"), cls="shuffle", verify=_check_scan,
         traits=(_T.COMBINES, _T.CONSUMES_ELEMENTS),
         doc="Inclusive scan along `axis`, sequential in index order (reverse: from the end)."),
    _row("tile.sort", 1, 1, attrs=("descending",), cls="compare_select", verify=_same_types,
         traits=(_T.CONSUMES_ELEMENTS,), doc="Sort along the last dim."),
    _row("tile.histogram", 2, 1, attrs=("num_bins",), cls="integer", traits=(_T.CONSUMES_ELEMENTS,),
         doc="(x, mask) -> int32[num_bins]: counts of x == b for masked-in elements; out-of-range x ignored."),
    _row("tile.map_elementwise", -1, -1, regions=1, attrs=("pack",), cls="branch", pure=False,
         verify=_check_map_elementwise,
         doc="body(scalars...) -> scf.yield(scalars...) per group of `pack` consecutive row-major elements, in "
             "element order: operand i's group elements are args i*pack..i*pack+pack-1, result r's are yields "
             "r*pack..r*pack+pack-1. Scalar control flow in the body runs per element."),
    # -- tensor cores
    _row("tile.dot", 3, 1, attrs=("input_precision",), cls="tensor", verify=_check_dot,
         traits=(_T.CONSUMES_ELEMENTS,),
         doc="acc + a @ b (2-D, or batched 3-D). fp32 operands: 'tf32' keeps the top 10 mantissa bits of "
             "each operand (the tensor cores ignore the low 13), 'ieee' and 'tf32x3' are exact fp32 "
             "products; sums are accumulated in the accumulator's type in k order."),
    # -- global memory
    _row("tile.load", 3, 1, attrs=("cache", "eviction", "volatile"), cls="memory", pure=False, verify=_check_load,
         traits=(_T.READS_MEMORY, _T.CONSUMES_ELEMENTS),
         doc="(ptr, mask, other): masked-off lanes give `other` and touch no memory."),
    _row("tile.store", 3, 0, attrs=("cache", "eviction"), cls="memory", pure=False, verify=_check_store,
         traits=(_T.WRITES_MEMORY, _T.CONSUMES_ELEMENTS), doc="(ptr, value, mask)."),
    _row("tile.atomic", 3, 1, attrs=("kind", "sem", "scope"), cls="atomic", pure=False, verify=_check_atomic,
         traits=(_T.READS_MEMORY, _T.WRITES_MEMORY, _T.CONSUMES_ELEMENTS),
         doc="(ptr, value, mask) -> old value per lane; kind is add, max, min, and, or, xor or xchg."),
    _row("tile.atomic_cas", 3, 1, attrs=("sem", "scope"), cls="atomic", pure=False,
         traits=(_T.READS_MEMORY, _T.WRITES_MEMORY, _T.CONSUMES_ELEMENTS),
         doc="(ptr, cmp, value) -> old value; writes value where old == cmp."),
    _row("tile.atomic_load", 2, 1, attrs=("sem", "scope"), cls="memory", pure=False, verify=_check_atomic_load,
         traits=(_T.READS_MEMORY, _T.CONSUMES_ELEMENTS),
         doc="(ptr, mask) -> one atomic load per active lane (sem acquire or relaxed); masked-off lanes give 0."),
    _row("tile.atomic_store", 3, 0, attrs=("sem", "scope"), cls="memory", pure=False, verify=_check_store,
         traits=(_T.WRITES_MEMORY, _T.CONSUMES_ELEMENTS),
         doc="(ptr, value, mask): one atomic store per active lane (sem release or relaxed), in element order."),
    _row("tile.atomic_poll", 3, 1, attrs=("sem", "scope"), cls="memory", pure=False, verify=_check_atomic_poll,
         traits=(_T.READS_MEMORY, _T.CONSUMES_ELEMENTS),
         doc="(ptr, expected, timeout_ns) -> int1: per lane in element order, atomic loads until the value "
             "equals `expected` (bitwise) or the launch-wide wall clock passes the budget, which all lanes share "
             "from the op's start; every lane loads at least once; timeout_ns < 0 means no timeout."),
    # -- control flow
    _row("scf.for", -1, -1, regions=1, cls="branch", pure=False, verify=_check_for,
         doc="(lb, ub, step, inits...): body(iv, carried...) runs for iv in range(lb, ub, step); optional "
             "attribute num_stages: tl.range's software-pipelining hint."),
    _row("scf.if", 1, -1, regions=2, cls="branch", pure=False, verify=_check_if),
    _row("scf.while", -1, -1, regions=2, cls="branch", pure=False, verify=_check_while,
         doc="before(carried...) -> scf.condition(c, values...); while c, after(values...) -> scf.yield(carried...)."),
    _row("scf.yield", -1, 0, cls="branch", pure=False, terminator=True, traits=(_T.SILENT,)),
    _row("scf.condition", -1, 0, cls="branch", pure=False, terminator=True, traits=(_T.SILENT,)),
    # -- debugging and synchronisation
    _row("tile.print", -1, 0, attrs=("prefix", "hex"), cls="other", pure=False, traits=(_T.CONSUMES_ELEMENTS,)),
    _row("tile.assert", 1, 0, attrs=("message",), cls="other", pure=False, traits=(_T.CONSUMES_ELEMENTS,),
         doc="Fails the launch, naming the source line, where an element of the condition is false."),
    _row("tile.barrier", 0, 0, cls="barrier", pure=False),
]

OPS: dict[str, OpInfo] = {row.name: row for row in _ROWS}


def with_trait(*traits: str) -> frozenset[str]:
    """The names of the ops that have every one of `traits` (computed once per query; callers keep it)."""
    unknown = set(traits) - set(_TRAITS)
    if unknown:
        raise ValueError(f"unknown op traits {sorted(unknown)}; known: {sorted(_TRAITS)}")
    return frozenset(name for name, info in OPS.items() if info.traits.issuperset(traits))


def constant_name(op_name: str) -> str:
    """The `OP` attribute of an op name: "arith.add" -> "ARITH_ADD"."""
    return op_name.replace(".", "_").upper()


class OP:
    """Every op name as a constant (OP.ARITH_ADD == "arith.add"), generated from the table: code that names
    an op says OP.X, so a misspelt name is an AttributeError (tests/dsl/ir/test_op_table.py checks every
    use in the code base), not a string compare that silently never matches."""


for _name in OPS:
    setattr(OP, constant_name(_name), _name)

_TRAITS = {value: key for key, value in vars(Trait).items() if not key.startswith("_")}
UNARY_MATH = tuple(name.split(".")[1] for name in OPS if name.startswith("math.") and OPS[name].operands == 1)
