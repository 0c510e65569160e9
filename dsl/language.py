"""The `triton.language` functions kernels call, with Triton's signatures.

Each function is a thin front over `dsl.semantic`; functions Triton marks as tensor members are
also registered in MEMBERS so `x.sum(1)` and `tl.sum(x, 1)` are one implementation.
"""

from __future__ import annotations

import builtins
from collections.abc import Callable
from math import prod as math_prod

from dsl import dtypes as T
from dsl.aggregate import aggregate, aggregate_replace  # noqa: F401 (triton.language names)
from dsl.core import MEMBERS, constexpr, tensor, unwrap
from dsl.errors import CompileTimeAssertionFailure
from dsl.ir.core import TileType
from dsl.ir.ops import OP
from dsl.pointers import block_pointer, load_block, store_block
from dsl.semantic import current


def _member(fn: Callable) -> Callable:
    MEMBERS[fn.__name__] = fn
    return fn


def _t(x) -> tensor:
    return current().to_tensor(x)


def _shape_args(shape) -> list:
    if len(shape) == 1 and isinstance(unwrap(shape[0]), (tuple, list)):
        return list(unwrap(shape[0]))
    return list(shape)


# -- programming model
def program_id(axis) -> tensor:
    axis = unwrap(axis)
    if axis not in (0, 1, 2):
        raise ValueError(f"program_id axis must be 0, 1, or 2 but got {axis}")
    s = current()
    return s.emit(OP.TILE_PROGRAM_ID, [], _scalar(T.int32), axis=axis)


def num_programs(axis) -> tensor:
    axis = unwrap(axis)
    if axis not in (0, 1, 2):
        raise ValueError(f"num_programs axis must be 0, 1, or 2 but got {axis}")
    return current().emit(OP.TILE_NUM_PROGRAMS, [], _scalar(T.int32), axis=axis)


def _scalar(d):
    return TileType(d)


# -- creation
def arange(start, end=None) -> tensor:
    if end is None:
        start, end = 0, start
    return current().arange(start, end)


def full(shape, value, dtype) -> tensor:
    return current().full(_shape_args([shape]), value, unwrap(dtype))


def zeros(shape, dtype) -> tensor:
    return full(shape, 0, dtype)


@_member
def zeros_like(input) -> tensor:
    return full(_t(input).shape, 0, _t(input).dtype)


def full_like(input, value) -> tensor:
    return full(_t(input).shape, value, _t(input).dtype)


def to_tensor(x) -> tensor:
    return _t(x)


def cdiv(x, div):
    """ceil(x / div) for positive div: Python ints at compile time, tensors (C-style `//`) in the kernel."""
    x, div = unwrap(x), unwrap(div)
    return (x + div - 1) // div


MEMBERS["cdiv"] = cdiv

# -- shapes


@_member
def broadcast_to(input, *shape) -> tensor:
    return current().broadcast_to(_t(input), _shape_args(shape))


def broadcast(input, other) -> tuple[tensor, tensor]:
    return tuple(current().broadcast(_t(input), _t(other)))


@_member
def expand_dims(input, axis) -> tensor:
    return current().expand_dims(_t(input), axis)


@_member
def reshape(input, *shape, can_reorder=False) -> tensor:
    return current().reshape(_t(input), _shape_args(shape))


@_member
def view(input, *shape) -> tensor:
    return reshape(input, *shape)


@_member
def ravel(input, can_reorder=False) -> tensor:
    return reshape(input, _t(input).numel)


@_member
def item(input) -> tensor:
    """The one element of a 1-element block, as a scalar."""
    x = _t(input)
    if x.numel != 1:
        raise ValueError(f"item() needs a tensor of one element, got shape {list(x.shape)}")
    return reshape(x, []) if x.type.rank else x


def squeeze(input, dim) -> tensor:
    """Drop axis `dim`, which must have size 1 (Triton 3.6's jit helper)."""
    x = _t(input)
    dim, rank = unwrap(dim), x.type.rank
    if not -rank <= dim < rank:
        raise ValueError(f"invalid axis {dim}. Expected {-rank} <= axis < {rank}")
    dim %= rank
    if x.shape[dim] != 1:
        raise ValueError(f"squeeze: dimension {dim} of shape {list(x.shape)} has size {x.shape[dim]}, not 1")
    return reshape(x, [d for i, d in enumerate(x.shape) if i != dim])


def unsqueeze(input, dim) -> tensor:
    """Insert an axis of size 1 at `dim`."""
    return expand_dims(input, dim)


@_member
def trans(input, *dims) -> tensor:
    x = _t(input)
    dims = _shape_args(dims)
    if not dims:
        order = list(builtins.range(x.type.rank))
        if x.type.rank >= 2:
            order[-1], order[-2] = order[-2], order[-1]
        dims = order
    return current().permute(x, dims)


@_member
def permute(input, *dims) -> tensor:
    return current().permute(_t(input), _shape_args(dims))


def join(a, b) -> tensor:
    s = current()
    a, b = s.broadcast(_t(a), _t(b))
    if a.dtype != b.dtype:
        raise TypeError(f"join: dtypes differ ({a.dtype} and {b.dtype})")
    return s.emit(OP.TILE_JOIN, [a, b], a.type.with_shape(a.shape + (2,)))


@_member
def split(a) -> tuple[tensor, tensor]:
    a = _t(a)
    if not a.shape or a.shape[-1] != 2:
        raise ValueError(f"split: the last dimension must be 2, got shape {list(a.shape)}")
    s = current()
    op = s.builder.create(OP.TILE_SPLIT, [a.handle], [a.type.with_shape(a.shape[:-1])] * 2)
    return tensor(op.results[0]), tensor(op.results[1])


def interleave(a, b) -> tensor:
    c = join(a, b)
    if c.type.rank == 1:  # two scalars: join gave [2], which is already their interleaving
        return c
    return reshape(c, list(c.shape[:-2]) + [c.shape[-2] * 2])


def cat(input, other, can_reorder=False, dim=0) -> tensor:
    s = current()
    a, b = _t(input), _t(other)
    if unwrap(dim) != 0:
        raise ValueError("cat: only dim=0 is supported")
    if a.shape[1:] != b.shape[1:] or a.dtype != b.dtype or a.shape[0] != b.shape[0]:
        raise ValueError(f"cat: shapes {list(a.shape)} and {list(b.shape)} must match")
    return s.emit(OP.TILE_CAT, [a, b], a.type.with_shape((a.shape[0] * 2,) + a.shape[1:]))


@_member
def flip(x, dim=None) -> tensor:
    x = _t(x)
    dim = x.type.rank - 1 if unwrap(dim) is None else _axis(unwrap(dim), x.type.rank, "dim")
    return current().emit(OP.TILE_FLIP, [x], x.type, axis=dim)


@_member
def gather(src, index, axis) -> tensor:
    s = current()
    src, index = _t(src), _t(index)
    axis = unwrap(axis) % src.type.rank
    if index.type.rank != src.type.rank:
        raise ValueError("gather: index and src must have the same rank")
    return s.emit(OP.TILE_GATHER, [src, index], src.type.with_shape(index.shape), axis=axis)


def swizzle2d(i, j, size_i, size_j, size_g):
    """Grouped ordering of a 2-D grid: blocks of size_g rows are walked column by column."""
    ij = i * size_j + j
    size_gj = size_g * size_j
    group_id = ij // size_gj
    off_i = group_id * size_g
    size_g = minimum(size_i - off_i, size_g)
    ij = ij % size_gj
    new_i = off_i + ij % size_g
    new_j = ij // size_g
    return new_i, new_j


# -- casts
@_member
def cast(input, dtype, fp_downcast_rounding=None, bitcast=False) -> tensor:
    return current().cast(_t(input), unwrap(dtype), unwrap(fp_downcast_rounding), unwrap(bitcast))


# -- memory
def load(pointer, mask=None, other=None, boundary_check=(), padding_option="", cache_modifier="",
         eviction_policy="", volatile=False):
    if isinstance(pointer, block_pointer):
        if mask is not None or other is not None:
            raise ValueError("tl.load of a block pointer takes boundary_check, not mask/other")
        return load_block(pointer, boundary_check, padding_option)
    return current().load(pointer, mask, other, unwrap(cache_modifier), unwrap(eviction_policy), unwrap(volatile))


@_member
def store(pointer, value, mask=None, boundary_check=(), cache_modifier="", eviction_policy=""):
    if isinstance(pointer, block_pointer):
        if mask is not None:
            raise ValueError("tl.store of a block pointer takes boundary_check, not mask")
        return store_block(pointer, value, boundary_check)
    current().store(pointer, value, mask, unwrap(cache_modifier), unwrap(eviction_policy))


def _atomic(kind):
    def fn(pointer, val, mask=None, sem=None, scope=None):
        return current().atomic(kind, pointer, val, mask, unwrap(sem), unwrap(scope))

    fn.__name__ = f"atomic_{kind}"
    MEMBERS[fn.__name__] = fn
    return fn


atomic_add = _atomic("add")
atomic_max = _atomic("max")
atomic_min = _atomic("min")
atomic_and = _atomic("and")
atomic_or = _atomic("or")
atomic_xor = _atomic("xor")
atomic_xchg = _atomic("xchg")


@_member
def atomic_cas(pointer, cmp, val, sem=None, scope=None) -> tensor:
    return current().atomic_cas(pointer, cmp, val, unwrap(sem), unwrap(scope))


@_member
def atomic_load(pointer, mask=None, sem=None, scope=None) -> tensor:
    """Atomically load from `pointer` (sem 'acquire', the default, or 'relaxed'); masked-off lanes give 0."""
    return current().atomic_load(pointer, mask, sem, scope)


@_member
def atomic_store(pointer, val, mask=None, sem=None, scope=None) -> None:
    """Atomically store `val` (sem 'release', the default, or 'relaxed')."""
    current().atomic_store(pointer, val, mask, sem, scope)


@_member
def atomic_poll(pointer, expected_value, sem=None, scope=None, timeout_ns=None) -> tensor:
    """Wait until the value at `pointer` equals `expected_value`; True where it did, False where `timeout_ns`
    (shared by the tensor's elements, measured on the host's wall clock) ran out first."""
    return current().atomic_poll(pointer, expected_value, sem, scope, timeout_ns)


def expect_zero(x, mask):
    """Marks values expected to have underflowed to zero where `mask` holds; like Triton outside its debug
    and float-sanitizer modes, `x` is returned unchanged."""
    _t(mask)
    return x


def map_elementwise(scalar_fn, *args, pack=1):
    """Apply the @jit function `scalar_fn` to each element of the broadcast `args` (its own `if`s and loops
    run per element); one tensor, or a tuple when `scalar_fn` returns one."""
    s = current()
    returned_tuple = []

    def call(scalars):
        result = s.call_jit(scalar_fn, scalars) if s.call_jit is not None else scalar_fn(*scalars)
        returned_tuple.append(isinstance(result, (tuple, list)))
        return result

    out = s.map_elementwise(call, args, unwrap(pack))
    return tuple(out) if returned_tuple and returned_tuple[0] else out[0]


def _bitonic_compare_and_swap(x: tensor, flip, i: int) -> tensor:
    """One compare-and-swap stage across the i-th innermost axis of a [2, 2, ..., 2] tensor."""
    rank = x.type.rank
    int_ty = {8: T.int8, 16: T.int16, 32: T.int32, 64: T.int64}[x.dtype.primitive_bitwidth]
    bits = cast(x, int_ty, bitcast=True)
    partner = cast(bits ^ xor_sum(bits, rank - 1 - i, True), x.dtype, bitcast=True)
    is_right = reshape(arange(0, 2), [1] * (rank - i - 1) + [2] + [1] * i)
    return where((x > partner) != (flip ^ is_right).to(T.int1), partner, x)


@_member
def bitonic_merge(x, dim=None, descending=0) -> tensor:
    """Triton's bitonic merge along the last dim: sorts each row that is a bitonic sequence."""
    x = _t(x)
    rank = x.type.rank
    dim = rank - 1 if unwrap(dim) is None else unwrap(dim)
    if dim != rank - 1:
        raise CompileTimeAssertionFailure("only minor dimension is currently supported")
    width, numel = x.shape[-1], x.numel
    if width & (width - 1) or numel & (numel - 1):
        raise ValueError(f"bitonic_merge needs power-of-two sizes, got shape {list(x.shape)}")
    stages = width.bit_length() - 1
    cube = reshape(x, [2] * (numel.bit_length() - 1)) if numel > 1 else x
    flip = int(bool(unwrap(descending)))
    for step in builtins.range(stages):
        cube = _bitonic_compare_and_swap(cube, flip, stages - 1 - step)
    return reshape(cube, list(x.shape))


# -- elementwise
def where(condition, x, y) -> tensor:
    return current().where(condition, x, y)


def add(x, y, sanitize_overflow: bool = True) -> tensor:
    """`x + y` (Triton's explicit form; its overflow sanitizer runs only in Triton's debug mode)."""
    return current().binary("add", x, y)


def sub(x, y, sanitize_overflow: bool = True) -> tensor:
    return current().binary("sub", x, y)


def mul(x, y, sanitize_overflow: bool = True) -> tensor:
    return current().binary("mul", x, y)


def inline_asm_elementwise(asm, constraints, args, dtype, is_pure, pack):
    """Inline GPU assembly (PTX / GCN) cannot be emulated on the CPU: refused with the reason."""
    raise NotImplementedError("tl.inline_asm_elementwise: inline GPU assembly (PTX/GCN) has no meaning on "
                              "wavetile, which compiles kernels for the CPU; write the operation with tl ops "
                              "(or tl.extra.libdevice functions) instead")


def minimum(x, y, propagate_nan=0) -> tensor:
    return current().minmax("min", x, y, bool(unwrap(propagate_nan)))


def maximum(x, y, propagate_nan=0) -> tensor:
    return current().minmax("max", x, y, bool(unwrap(propagate_nan)))


def clamp(x, min, max, propagate_nan=0) -> tensor:
    return minimum(maximum(x, min, propagate_nan), max, propagate_nan)


class PropagateNan:
    NONE = 0
    ALL = 0xFFFF


def _unary(fn_name):
    def fn(x):
        return current().unary_math(fn_name, x)

    fn.__name__ = fn_name
    MEMBERS[fn_name] = fn
    return fn


exp = _unary("exp")
exp2 = _unary("exp2")
log = _unary("log")
log2 = _unary("log2")
sin = _unary("sin")
cos = _unary("cos")
sqrt = _unary("sqrt")
sqrt_rn = sqrt
MEMBERS["sqrt_rn"] = sqrt  # IEEE sqrt is already correctly rounded
rsqrt = _unary("rsqrt")
erf = _unary("erf")
floor = _unary("floor")
ceil = _unary("ceil")
abs = _unary("abs")
tanh = _unary("tanh")


@_member
def sigmoid(x) -> tensor:
    x = _t(x)
    return 1.0 / (1.0 + exp(-x))


@_member
def softmax(x, dim=None, keep_dims=False, ieee_rounding=False) -> tensor:
    x = _t(x)
    axis = x.type.rank - 1 if unwrap(dim) is None else unwrap(dim)
    z = x - max(x, axis, keep_dims=True)
    num = exp(z)
    return fdiv(num, sum(num, axis, keep_dims=True), ieee_rounding)


def fma(x, y, z) -> tensor:
    return current().fma(x, y, z)


def fdiv(x, y, ieee_rounding=False) -> tensor:
    return current().truediv(x, y)


def div_rn(x, y) -> tensor:
    return current().truediv(x, y)


def umulhi(x, y) -> tensor:
    return current().umulhi(x, y)


# -- reductions
def _combine(op):
    def combine(lhs, rhs):
        return (current().binary(op, lhs[0], rhs[0]),)
    return combine


def _minmax_combine(op):
    def combine(lhs, rhs):
        return (current().minmax(op, lhs[0], rhs[0]),)
    return combine


def _bitwise_combine(op):
    def combine(lhs, rhs):
        return (current().bitwise(op, lhs[0], rhs[0]),)
    return combine


def _promote_sum(x: tensor, dtype) -> tensor:
    if dtype is not None:
        return current().cast(x, unwrap(dtype))
    d = x.dtype
    if d.is_int() and d.primitive_bitwidth < 32:
        return current().cast(x, T.int32 if d.is_int_signed() or d.is_bool() else T.uint32)
    if d in (T.float16, T.bfloat16, T.float8e4nv, T.float8e5):
        return current().cast(x, T.float32)
    return x


@_member
def sum(input, axis=None, keep_dims=False, dtype=None) -> tensor:
    x = _promote_sum(_t(input), dtype)
    return current().reduce([x], axis, _combine("add"), unwrap(keep_dims))[0]


def _argcombine(op, tie_break_left=True):
    def combine(lhs, rhs):
        s = current()
        (lv, li), (rv, ri) = lhs, rhs
        better = s.compare("gt" if op == "max" else "lt", rv, lv)
        if lv.dtype.is_floating():
            # NaN wins, like Triton's argmax on GPUs
            better = s.logical("or", better, s.logical("and", s.compare("ne", rv, rv), s.compare("eq", lv, lv)))
        tie = s.logical("and", s.compare("eq", rv, lv), s.compare("lt", ri, li))
        take = s.logical("or", better, tie)
        return s.where(take, rv, lv), s.where(take, ri, li)
    return combine


def _axis(value, rank: int, what: str) -> int:
    """A compile-time axis in [-rank, rank), normalised; a clear error for anything else."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{what} must be a compile-time integer, got {value!r}")
    if rank == 0:
        raise ValueError(f"a scalar has no {what} to work along")
    if not -rank <= value < builtins.max(rank, 1):
        raise ValueError(f"{what} {value} is out of range for a block of rank {rank}")
    return value % builtins.max(rank, 1)


def _index_tensor(x: tensor, axis: int) -> tensor:
    s = current()
    rank = x.type.rank
    idx = s.arange(0, x.shape[axis])
    for _ in builtins.range(axis):
        idx = s.expand_dims(idx, 0)
    for _ in builtins.range(rank - axis - 1):
        idx = s.expand_dims(idx, idx.type.rank)
    return s.broadcast_to(idx, x.shape)


def _reduce_minmax(op, input, axis, return_indices, keep_dims):
    s = current()
    x = _t(input)
    if not unwrap(return_indices):
        return s.reduce([x], axis, _minmax_combine(op), unwrap(keep_dims))[0]
    ax = unwrap(axis)
    if ax is None:
        x = s.reshape(x, (x.numel,))
        ax = 0
    ax = _axis(ax, x.type.rank, "axis")
    values, indices = s.reduce([x, _index_tensor(x, ax)], ax, _argcombine(op), unwrap(keep_dims))
    return values, indices


@_member
def max(input, axis=None, return_indices=False, return_indices_tie_break_left=True, keep_dims=False):
    return _reduce_minmax("max", input, axis, return_indices, keep_dims)


@_member
def min(input, axis=None, return_indices=False, return_indices_tie_break_left=True, keep_dims=False):
    return _reduce_minmax("min", input, axis, return_indices, keep_dims)


@_member
def argmax(input, axis, tie_break_left=True, keep_dims=False) -> tensor:
    return _reduce_minmax("max", input, axis, True, keep_dims)[1]


@_member
def argmin(input, axis, tie_break_left=True, keep_dims=False) -> tensor:
    return _reduce_minmax("min", input, axis, True, keep_dims)[1]


@_member
def xor_sum(input, axis=None, keep_dims=False) -> tensor:
    x = _t(input)
    if not x.dtype.is_int():
        raise TypeError(f"xor_sum needs integers, got {x.dtype}")
    return current().reduce([x], axis, _bitwise_combine("xor"), unwrap(keep_dims))[0]


@_member
def reduce_or(input, axis, keep_dims=False) -> tensor:
    return current().reduce([_t(input)], axis, _bitwise_combine("or"), unwrap(keep_dims))[0]


def _jit_combine(combine_fn):
    s = current()

    def combine(lhs, rhs):
        result = s.call_jit(combine_fn, [*lhs, *rhs])
        return result if isinstance(result, tuple) else (result,)
    return combine


@_member
def reduce(input, axis, combine_fn, keep_dims=False):
    inputs = list(input) if isinstance(input, tuple) else [input]
    out = current().reduce([_t(x) for x in inputs], axis, _jit_combine(combine_fn), unwrap(keep_dims))
    return tuple(out) if isinstance(input, tuple) else out[0]


@_member
def associative_scan(input, axis, combine_fn, reverse=False):
    inputs = list(input) if isinstance(input, tuple) else [input]
    out = current().reduce([_t(x) for x in inputs], axis, _jit_combine(combine_fn), op=OP.TILE_SCAN,
                           extra_attrs={"reverse": bool(unwrap(reverse))})
    return tuple(out) if isinstance(input, tuple) else out[0]


@_member
def cumsum(input, axis=0, reverse=False, dtype=None) -> tensor:
    x = _promote_sum(_t(input), dtype)
    return current().reduce([x], axis, _combine("add"), op=OP.TILE_SCAN,
                            extra_attrs={"reverse": bool(unwrap(reverse))})[0]


@_member
def cumprod(input, axis=0, reverse=False) -> tensor:
    x = _promote_sum(_t(input), None)
    return current().reduce([x], axis, _combine("mul"), op=OP.TILE_SCAN,
                            extra_attrs={"reverse": bool(unwrap(reverse))})[0]


@_member
def sort(x, dim=None, descending=False) -> tensor:
    x = _t(x)
    dim = x.type.rank - 1 if unwrap(dim) is None else _axis(unwrap(dim), x.type.rank, "dim")
    if dim != x.type.rank - 1:
        raise ValueError("sort: only the last dimension can be sorted")
    return current().emit(OP.TILE_SORT, [x], x.type, descending=bool(unwrap(descending)))


@_member
def topk(x, k, dim=None, descending=True) -> tensor:
    """The k largest values along the last dim, in descending order (k a power of two)."""
    x = _t(x)
    return _first_k(sort(x, dim, descending=True), unwrap(k))


def _first_k(ordered: tensor, k: int) -> tensor:
    """The first k elements along the last dim of a sorted tensor (its rows are split into chunks of k,
    and the reduction over chunks keeps the first)."""
    if k == ordered.shape[-1]:
        return ordered
    s = current()
    parts = s.reshape(ordered, list(ordered.shape[:-1]) + [ordered.shape[-1] // k, k])
    return s.reduce([parts], parts.type.rank - 2, lambda lhs, rhs: lhs)[0]


@_member
def histogram(input, num_bins, mask=None) -> tensor:
    s = current()
    x = _t(input)
    if x.type.rank != 1 or not x.dtype.is_int():
        raise ValueError("histogram takes a 1-D integer tensor")
    mask = s.truthy(mask) if mask is not None else s.full(x.shape, True, T.int1)
    mask = s.broadcast_to(mask, x.shape)
    num_bins = unwrap(num_bins)
    return s.emit(OP.TILE_HISTOGRAM, [x, mask], _scalar(T.int32).with_shape((num_bins,)), num_bins=num_bins)


# -- linear algebra
def dot(input, other, acc=None, input_precision=None, allow_tf32=None, max_num_imprecise_acc=None,
        out_dtype=T.float32) -> tensor:
    precision = unwrap(input_precision)
    if precision is None and unwrap(allow_tf32) is not None:
        precision = "tf32" if unwrap(allow_tf32) else "ieee"
    a, b = _t(input), _t(other)
    if a.type.rank > 3 and a.type.rank == b.type.rank:  # Triton folds the batch dims into one
        batch = list(a.shape[:-2])
        fold = [math_prod(batch)]
        a3, b3 = reshape(a, fold + list(a.shape[-2:])), reshape(b, fold + list(b.shape[-2:]))
        acc3 = None if acc is None else reshape(acc, fold + list(_t(acc).shape[-2:]))
        out = current().dot(a3, b3, acc3, precision, unwrap(out_dtype))
        return reshape(out, batch + list(out.shape[-2:]))
    return current().dot(a, b, acc, precision, unwrap(out_dtype))


# -- compile time, debugging, hints
def static_assert(cond, msg="") -> None:
    if not unwrap(cond):
        raise CompileTimeAssertionFailure(f"static_assert failed: {unwrap(msg)}" if unwrap(msg) else
                                          "static_assert failed")


def static_print(*values, sep=" ", end="\n", file=None, flush=False) -> None:
    builtins.print(*[unwrap(v) for v in values], sep=sep, end=end, file=file, flush=flush)


def device_print(prefix, *args, hex=False) -> None:
    s = current()
    values = [_t(a) for a in args]
    s.builder.create(OP.TILE_PRINT, [v.handle for v in values], [],
                     {"prefix": str(unwrap(prefix)), "hex": bool(unwrap(hex))})


def device_assert(cond, msg="", mask=None) -> None:
    s = current()
    c = s.truthy(cond)
    if mask is not None:
        c = s.logical("or", c, s.logical_not(mask))
    s.builder.create(OP.TILE_ASSERT, [c.handle], [], {"message": str(unwrap(msg))})


def debug_barrier() -> None:
    current().builder.create(OP.TILE_BARRIER, [], [])


def multiple_of(input, values):
    return _hint(input, "multiple_of", values)


def max_contiguous(input, values):
    return _hint(input, "max_contiguous", values)


def max_constancy(input, values):
    return _hint(input, "max_constancy", values)


def _hint(input, name: str, values):
    """Triton's alignment hints change no value: they are kept on the op that made it, for the pass that picks
    the vector width of loads and stores (jit.passes.assign_vector_widths reads the last dim's)."""
    handle = getattr(input, "handle", None)
    if handle is not None and handle.op is not None:
        values = unwrap(values)
        last = values[-1] if isinstance(values, (list, tuple)) else values
        handle.op.attrs[name] = int(unwrap(last))
    return input


def assume(cond) -> None:
    return None


class range:
    """A runtime loop; pipelining and unrolling hints are accepted and recorded, not required."""

    def __init__(self, arg1, arg2=None, step=None, num_stages=None, loop_unroll_factor=None,
                 disallow_acc_multi_buffer=False, flatten=False, warp_specialize=False, disable_licm=False):
        if arg2 is None:
            self.start, self.end = 0, arg1
        else:
            self.start, self.end = arg1, arg2
        self.step = 1 if step is None else step
        self.num_stages = num_stages

    def __iter__(self):
        """Eager mode (jit.eager) runs the kernel's loops as Python loops."""
        return iter(builtins.range(int(unwrap(self.start)), int(unwrap(self.end)), int(unwrap(self.step))))


class static_range:
    """A loop unrolled at compile time; its bounds must be constexpr."""

    def __init__(self, arg1, arg2=None, step=None):
        if arg2 is None:
            self.start, self.end = 0, arg1
        else:
            self.start, self.end = arg1, arg2
        self.step = 1 if step is None else step

    def __iter__(self):
        return iter(builtins.range(int(unwrap(self.start)), int(unwrap(self.end)), int(unwrap(self.step))))


def condition(cond, disable_licm=False):
    return cond


__all__ = [name for name in dir() if not name.startswith("_")] + ["constexpr", "tensor"]
_ = constexpr
