"""Triton's typing rules: promotion, broadcasting, casts, and the IR each language operation emits.

The frontend visits the kernel's AST; every operation on tensors lands here, through the
`Semantic` object of the kernel being compiled (a context variable, so builtins need no hidden
builder argument). Errors raised here are plain `TypeError`/`ValueError`; the frontend attaches
the source line.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from dsl import dtypes as T
from dsl.core import ACTIVE_SEMANTIC, active_semantic, constexpr, tensor, unwrap
from dsl.ir.builder import Builder
from dsl.ir.core import Block, TileType
from dsl.ir.ops import OP

MAX_NUMEL = 1 << 20
_current = ACTIVE_SEMANTIC  # (jit.kernel reads it to tell eager mode)
current: Callable[[], Semantic] = active_semantic


def is_pow2(n: int) -> bool:
    return n > 0 and n & (n - 1) == 0


def _kind_rank(d: T.dtype) -> int:
    if d.is_ptr():
        raise TypeError(f"invalid operand of type {d} (pointers take only + and - of integers)")
    return {"bool": 0, "uint": 1, "int": 1, "float": 2}[d.kind]  # Triton's kinds: bool < integral < floating


def _check_literal_fits(value, dtype: T.dtype) -> None:
    """Triton's checks on a Python int combined with an integer tensor of type `dtype`."""
    if isinstance(value, bool) or not isinstance(value, int) or not dtype.is_int() or dtype.is_bool():
        return
    if value < 0 and not dtype.is_int_signed():
        raise ValueError("Cannot perform a binary operation between an unsigned tensor and a negative scalar. "
                         "Perform a explicit cast on one of them.")
    bits = dtype.primitive_bitwidth
    low, high = (-(1 << (bits - 1)), (1 << (bits - 1)) - 1) if dtype.is_int_signed() else (0, (1 << bits) - 1)
    if not low <= value <= high:
        raise ValueError(f"Scalar {value} is out of range for type {dtype}")


class Semantic:
    """Emits typed IR for one kernel. `call_jit` inlines a @jit function (set by the frontend)."""

    def __init__(self, builder: Builder, call_jit: Callable | None = None):
        self.builder = builder
        self.call_jit = call_jit

    def activate(self):
        return _current.set(self)

    def deactivate(self, token) -> None:
        _current.reset(token)

    # -- making tensors
    def emit(self, name: str, operands: list[tensor], type: TileType, **attrs) -> tensor:
        return tensor(self.builder.value(name, [o.handle for o in operands], type, **attrs))

    def scalar_constant(self, value, dtype: T.dtype) -> tensor:
        if dtype.is_floating():
            value = float(value)
        elif dtype.is_bool():
            value = bool(value)
        else:
            value = int(value)
        return tensor(self.builder.constant(value, TileType(dtype)))

    def to_tensor(self, value, like: tensor | None = None) -> tensor:
        """A Python value as a scalar tensor with Triton's literal types."""
        value = unwrap(value)
        if isinstance(value, tensor):
            return value
        if isinstance(value, bool):
            return self.scalar_constant(value, T.int1)
        if isinstance(value, int):
            dtype = T.integer_dtype(value)
            if dtype is None:
                raise ValueError(f"integer {value} does not fit in 64 bits")
            return self.scalar_constant(value, dtype)
        if isinstance(value, float):
            return self.scalar_constant(value, T.float32)
        raise TypeError(f"cannot use {type(value).__name__} {value!r} as a tensor")

    def full(self, shape: Sequence[int], value, dtype: T.dtype) -> tensor:
        if not isinstance(dtype, T.dtype):
            raise TypeError(f"dtype must be a tl dtype such as tl.float32, got {dtype!r}")
        shape = self.check_shape(shape)
        scalar = value if isinstance(value, tensor) else self.scalar_constant(unwrap(value), dtype)
        if scalar.dtype != dtype:
            scalar = self.cast(scalar, dtype)
        if not shape:
            return scalar
        if scalar.handle.op is not None and scalar.handle.op.name == OP.ARITH_CONSTANT:
            return tensor(self.builder.constant(scalar.handle.op.attrs["value"], TileType(dtype, shape)))
        return self.splat(scalar, shape)

    def check_shape(self, shape) -> tuple[int, ...]:
        shape = tuple(int(unwrap(d)) for d in (shape if isinstance(shape, (list, tuple)) else [shape]))
        for d in shape:
            if not is_pow2(d):
                raise ValueError(f"shape {list(shape)}: every block dimension must be a power of 2, got {d}")
        n = 1
        for d in shape:
            n *= d
        if n > MAX_NUMEL:
            raise ValueError(f"a block holds at most {MAX_NUMEL} elements; shape {list(shape)} has {n}")
        return shape

    def arange(self, start, end) -> tensor:
        start, end = unwrap(start), unwrap(end)
        if not all(isinstance(v, int) for v in (start, end)):
            raise TypeError(f"arange bounds must be compile-time integers, got {start!r} and {end!r}")
        if end <= start:
            raise ValueError(f"arange({start}, {end}): end must be greater than start")
        if not is_pow2(end - start):
            raise ValueError(f"arange({start}, {end}): its length {end - start} must be a power of 2")
        if not (-2**31 <= start and end <= 2**31):
            raise ValueError("arange bounds must fit in int32")
        return self.emit(OP.TILE_ARANGE, [], TileType(T.int32, (end - start,)), start=start, end=end)

    # -- shapes
    def splat(self, x: tensor, shape: tuple[int, ...]) -> tensor:
        return self.emit(OP.TILE_SPLAT, [x], TileType(x.dtype, tuple(shape)))

    def broadcast_to(self, x: tensor, shape: Sequence[int]) -> tensor:
        shape = tuple(int(unwrap(d)) for d in shape)
        if x.shape == shape:
            return x
        if not x.shape:
            return self.splat(x, shape)
        if len(shape) < x.type.rank:
            raise ValueError(f"cannot broadcast shape {list(x.shape)} to {list(shape)}")
        while x.type.rank < len(shape):
            x = self.expand_dims(x, 0)
        for s, d in zip(x.shape, shape):
            if s != d and s != 1:
                raise ValueError(f"cannot broadcast shape {list(x.shape)} to {list(shape)}")
        return self.emit(OP.TILE_BROADCAST, [x], TileType(x.dtype, shape))

    def broadcast_shapes(self, *shapes: tuple[int, ...]) -> tuple[int, ...]:
        rank = max(len(s) for s in shapes)
        result = []
        for i in range(rank):
            dims = {s[i - rank + len(s)] for s in shapes if i - rank + len(s) >= 0} - {1}
            if len(dims) > 1:
                raise ValueError("cannot broadcast shapes " + " and ".join(str(list(s)) for s in shapes)
                                 + f": dimension {i} differs ({' vs '.join(map(str, sorted(dims)))})")
            result.append(dims.pop() if dims else 1)
        return tuple(result)

    def broadcast(self, *values: tensor) -> list[tensor]:
        shape = self.broadcast_shapes(*(v.shape for v in values))
        return [self.broadcast_to(v, shape) for v in values]

    def expand_dims(self, x: tensor, axis) -> tensor:
        axes = [unwrap(a) for a in axis] if isinstance(unwrap(axis), (list, tuple)) else [unwrap(axis)]
        ndim = x.type.rank + len(axes)
        for a in axes:
            if not -ndim <= a < ndim:
                raise ValueError(f"invalid axis {a}. Expected {-ndim} <= axis < {ndim}")
        normalized = [a % ndim for a in axes]
        if len(set(normalized)) != len(normalized):
            raise ValueError(f"expand_dims received duplicate axes, normalized axes = {normalized}")
        for a in sorted(a if a >= 0 else a + ndim for a in axes):
            shape = x.shape[:a] + (1,) + x.shape[a:]
            x = self.emit(OP.TILE_EXPAND_DIMS, [x], TileType(x.dtype, shape), axis=a)
        return x

    def reshape(self, x: tensor, shape: Sequence[int]) -> tensor:
        shape = self.check_shape(shape) if shape else ()
        n = 1
        for d in shape:
            n *= d
        if n != x.numel:
            raise ValueError(f"cannot reshape {list(x.shape)} ({x.numel} elements) to {list(shape)}")
        if shape == x.shape:
            return x
        if not x.shape:
            return self.splat(x, shape)
        return self.emit(OP.TILE_RESHAPE, [x], TileType(x.dtype, shape))

    def permute(self, x: tensor, order: Sequence[int]) -> tensor:
        order = [int(unwrap(o)) for o in order]
        if sorted(order) != list(range(x.type.rank)):
            raise ValueError(f"permute: {order} is not a permutation of the {x.type.rank} dims of {list(x.shape)}")
        if order == sorted(order):
            return x
        shape = tuple(x.shape[i] for i in order)
        return self.emit(OP.TILE_PERMUTE, [x], TileType(x.dtype, shape), order=tuple(order))

    def subscript(self, x: tensor, index) -> tensor:
        items = index if isinstance(index, tuple) else (index,)
        result, axis = x, 0
        for item in items:
            item = unwrap(item)
            if item is None:
                result = self.expand_dims(result, axis)
                axis += 1
            elif isinstance(item, slice) and item == slice(None):
                axis += 1
            else:
                raise ValueError("unsupported tensor index: only None and ':' may index a tensor, "
                                 f"got {item!r}")
        return result

    # -- casts
    def cast(self, x, dtype: T.dtype, rounding: str | None = None, bitcast: bool = False) -> tensor:
        x = self.to_tensor(x)
        if isinstance(dtype, constexpr):
            dtype = dtype.value
        if not isinstance(dtype, T.dtype):
            raise TypeError(f"to(): expected a dtype, got {dtype!r}")
        if rounding not in (None, "rtne", "rtz"):
            raise ValueError(f"fp_downcast_rounding must be 'rtne' or 'rtz', got {rounding!r}")
        if bitcast:
            if x.dtype.primitive_bitwidth != dtype.primitive_bitwidth:
                raise ValueError(f"cannot bitcast {x.dtype} to {dtype}: widths differ")
            if x.dtype == dtype:
                return x
            return self.emit(OP.ARITH_BITCAST, [x], x.type.with_dtype(dtype))
        if x.dtype == dtype:
            return x
        if rounding is not None and not (x.dtype.is_floating() and dtype.is_floating()
                                         and dtype.primitive_bitwidth < x.dtype.primitive_bitwidth):
            raise ValueError("fp_downcast_rounding applies only to float-to-narrower-float casts")
        if (x.dtype.is_ptr() and not (dtype.is_ptr() or dtype in (T.int64, T.uint64))) or \
                (dtype.is_ptr() and not (x.dtype.is_ptr() or x.dtype in (T.int64, T.uint64))):
            raise TypeError(f"cannot cast {x.dtype} to {dtype}: pointers convert only to and from 64-bit integers")
        return self.emit(OP.ARITH_CAST, [x], x.type.with_dtype(dtype), rounding=rounding or "rtne")

    # -- promotion
    def computation_type(self, a: T.dtype, a_literal: bool, b: T.dtype, b_literal: bool,
                         div_or_mod: bool = False) -> T.dtype:
        """Triton's rules, in Triton's order: a Python literal of a lower or equal kind does not take part;
        fp64 > (div/mod: fp32) > fp32 > fp16 > bf16 (bf16 with another float: fp32) > fp8; integers
        follow C's usual conversions, and `/`, `//`, `%` refuse to mix signedness."""
        if a.is_ptr() and b.is_ptr() or (a_literal != b_literal and (a if a_literal else b).is_ptr()):
            raise TypeError(f"invalid operands of type {a!r} and {b!r}")
        if a_literal != b_literal:
            lit, ten = (a, b) if a_literal else (b, a)
            if _kind_rank(lit) <= _kind_rank(ten):
                a = b = ten
        if a.is_ptr() or b.is_ptr():
            raise TypeError(f"invalid operands of type {a!r} and {b!r}")
        if T.float64 in (a, b):
            return T.float64
        if div_or_mod and (a.is_floating() or b.is_floating()):
            return T.float32
        if T.float32 in (a, b):
            return T.float32
        if T.float16 in (a, b):
            return T.float16
        if a == b == T.bfloat16:
            return T.bfloat16
        if T.bfloat16 in (a, b):
            return T.float32
        if a.is_fp8() and b.is_fp8():
            return a if a == b else T.float16
        if not a.is_int() or not b.is_int():
            raise TypeError(f"unexpected type {a} and {b}")
        if div_or_mod and a.is_int_signed() != b.is_int_signed():
            raise TypeError(f"Cannot use /, #, or % with {a!r} and {b!r} because they have different signedness;"
                            "this is unlikely to result in a useful answer. Cast them to the same signedness.")
        return self.integer_promote(a, b)

    @staticmethod
    def integer_promote(a: T.dtype, b: T.dtype) -> T.dtype:
        if a.is_bool() and b.is_bool():
            return T.int1
        if a.kind == b.kind or a.is_bool() or b.is_bool():
            wider = a if a.primitive_bitwidth >= b.primitive_bitwidth else b
            if wider.is_bool():
                wider = b if a.is_bool() else a
            return wider
        signed, unsigned = (a, b) if a.is_int_signed() else (b, a)
        return unsigned if unsigned.primitive_bitwidth >= signed.primitive_bitwidth else signed

    def _binary_operands(self, a, b, div_or_mod: bool = False, allow_float: bool = True,
                         target: T.dtype | None = None) -> tuple[tensor, tensor, T.dtype]:
        a, b = unwrap(a), unwrap(b)
        a_lit, b_lit = not isinstance(a, tensor), not isinstance(b, tensor)
        literals = [v for v, lit in ((a, a_lit), (b, b_lit)) if lit]
        a, b = self.to_tensor(a), self.to_tensor(b)
        if not allow_float and (not a.dtype.is_int() or not b.dtype.is_int()):
            raise TypeError(f"invalid operands of type {a.dtype!r} and {b.dtype!r}")
        dtype = target or self.computation_type(a.dtype, a_lit, b.dtype, b_lit, div_or_mod)
        for value in literals:
            _check_literal_fits(value, dtype)
        a, b = self.cast(a, dtype), self.cast(b, dtype)
        a, b = self.broadcast(a, b)
        return a, b, dtype

    def binary(self, op: str, a, b) -> tensor:
        if isinstance(unwrap(a), tensor) and unwrap(a).dtype.is_ptr() and op in ("add", "sub"):
            return self.addptr(a, b if op == "add" else self.neg(self.to_tensor(b)))
        if op == "add" and isinstance(unwrap(b), tensor) and unwrap(b).dtype.is_ptr():
            return self.addptr(b, a)
        a, b, dtype = self._binary_operands(a, b)
        return self.emit(f"arith.{op}", [a, b], a.type)

    def addptr(self, ptr, offset) -> tensor:
        ptr, offset = self.to_tensor(ptr), self.to_tensor(offset)
        if not offset.dtype.is_int() or offset.dtype.is_bool():
            raise TypeError(f"pointer offsets must be integers, got {offset.dtype}")
        ptr, offset = self.broadcast(ptr, offset)
        return self.emit(OP.TILE_ADDPTR, [ptr, offset], ptr.type)

    def truediv(self, a, b) -> tensor:
        a_lit, b_lit = not isinstance(a, tensor), not isinstance(b, tensor)
        a, b = self.to_tensor(a), self.to_tensor(b)
        if a.dtype.is_int() and b.dtype.is_int():
            self.computation_type(a.dtype, a_lit, b.dtype, b_lit, div_or_mod=True)  # Triton's signedness check
            dtype = T.float32
        else:
            dtype = self.computation_type(a.dtype, a_lit, b.dtype, b_lit, div_or_mod=True)
        return self.binary("div", self.cast(a, dtype), self.cast(b, dtype))

    def floordiv(self, a, b) -> tensor:
        a, b, dtype = self._binary_operands(a, b, div_or_mod=True)
        if dtype.is_floating():
            raise TypeError("// on floating-point tensors is not supported; use tl.floor(a / b)")
        return self.emit(OP.ARITH_DIV, [a, b], a.type)

    def mod(self, a, b) -> tensor:
        a, b, _ = self._binary_operands(a, b, div_or_mod=True)
        return self.emit(OP.ARITH_REM, [a, b], a.type)

    def pow(self, a, b) -> tensor:
        a, b, dtype = self._binary_operands(a, b)
        if not dtype.is_floating():
            raise TypeError("** needs floating-point operands in a kernel")
        self.check_math_dtype("pow", a)
        return self.emit(OP.MATH_POW, [a, b], a.type)

    def bitwise(self, op: str, a, b) -> tensor:
        a, b, _ = self._binary_operands(a, b, allow_float=False)
        return self.emit(f"arith.{op}", [a, b], a.type)

    def shift(self, op: str, a, b) -> tensor:
        """`<<` and `>>`. As in Triton, `>>` is arithmetic when the tensor operand it is called on (the left
        one, or the right one under a Python-literal left operand) is signed, whatever the promoted type."""
        shifted = unwrap(a) if isinstance(unwrap(a), tensor) else unwrap(b)
        a, b, dtype = self._binary_operands(a, b, allow_float=False)
        if op == "shr" and shifted.dtype.is_int_signed() != dtype.is_int_signed() and not dtype.is_bool():
            kind = T.BY_NAME[("int" if shifted.dtype.is_int_signed() else "uint") + str(dtype.primitive_bitwidth)]
            a, b = self.cast(a, kind), self.cast(b, kind)  # same width: the bits are kept
            return self.cast(self.emit(OP.ARITH_SHR, [a, b], a.type), dtype)
        return self.emit(f"arith.{op}", [a, b], a.type)

    def logical(self, op: str, a, b) -> tensor:
        a, b = self.truthy(a), self.truthy(b)
        a, b = self.broadcast(a, b)
        return self.emit(f"arith.{op}", [a, b], a.type)

    def truthy(self, x) -> tensor:
        x = self.to_tensor(x)
        return x if x.dtype.is_bool() else self.compare("ne", x, 0)

    def logical_not(self, x) -> tensor:
        x = self.truthy(x)
        return self.emit(OP.ARITH_XOR, [x, self.full(x.shape, True, T.int1)], x.type)

    def neg(self, x) -> tensor:
        x = self.to_tensor(x)
        if x.dtype.is_ptr() or x.dtype.is_bool():
            raise TypeError(f"cannot negate {x.dtype}")
        return self.emit(OP.ARITH_NEG, [x], x.type)

    def invert(self, x) -> tensor:
        x = self.to_tensor(x)
        if not x.dtype.is_int():
            raise TypeError(f"~ needs an integer tensor, got {x.dtype}")
        return self.emit(OP.ARITH_NOT, [x], x.type)

    def compare(self, pred: str, a, b) -> tensor:
        a_t, b_t = self.to_tensor(a), self.to_tensor(b)
        if a_t.dtype.is_ptr() or b_t.dtype.is_ptr():
            if a_t.dtype.is_ptr() and b_t.dtype.is_ptr():
                a_t, b_t = self.cast(a_t, T.int64), self.cast(b_t, T.int64)
            a, b = a_t, b_t
        a, b, _ = self._binary_operands(a if not isinstance(a, tensor) or not a.dtype.is_ptr() else a_t,
                                        b if not isinstance(b, tensor) or not b.dtype.is_ptr() else b_t)
        return self.emit(OP.ARITH_CMP, [a, b], a.type.with_dtype(T.int1), predicate=pred)

    def where(self, cond, x, y) -> tensor:
        cond = self.truthy(cond)
        x_lit, y_lit = not isinstance(x, tensor), not isinstance(y, tensor)
        x, y = self.to_tensor(x), self.to_tensor(y)
        if x.dtype.is_ptr() or y.dtype.is_ptr():
            dtype = x.dtype if x.dtype.is_ptr() else y.dtype
        else:
            dtype = self.computation_type(x.dtype, x_lit, y.dtype, y_lit)
        x, y = self.cast(x, dtype), self.cast(y, dtype)
        cond, x, y = self.broadcast(cond, x, y)
        return self.emit(OP.ARITH_SELECT, [cond, x, y], x.type)

    def minmax(self, op: str, a, b, propagate_nan: bool = False) -> tensor:
        a, b, dtype = self._binary_operands(a, b)
        return self.emit(f"arith.{op}", [a, b], a.type, propagate_nan=bool(propagate_nan))

    # -- math
    def check_math_dtype(self, name: str, x: tensor) -> None:
        if x.dtype not in (T.float32, T.float64):
            raise ValueError(f"{name}: Expected dtype ['fp32', 'fp64'] but got {x.dtype}; "
                             "convert with .to(tl.float32) first")

    def unary_math(self, fn: str, x) -> tensor:
        x = self.to_tensor(x)
        if fn == "abs":
            if x.dtype.is_int_unsigned():
                return x
            return self.emit(OP.MATH_ABS, [x], x.type)
        if fn in ("floor", "ceil", "trunc", "rint") and x.dtype.is_int():
            return x
        if x.dtype.is_int():
            raise ValueError(f"{fn}: Expected dtype ['fp32', 'fp64'] but got {x.dtype}")
        self.check_math_dtype(fn, x)
        return self.emit(f"math.{fn}", [x], x.type)

    def fma(self, a, b, c) -> tensor:
        a, b, c = self.to_tensor(a), self.to_tensor(b), self.to_tensor(c)
        dtype = self.computation_type(self.computation_type(a.dtype, False, b.dtype, False), False, c.dtype, False)
        a, b, c = self.broadcast(self.cast(a, dtype), self.cast(b, dtype), self.cast(c, dtype))
        return self.emit(OP.ARITH_FMA, [a, b, c], a.type)

    def umulhi(self, a, b) -> tensor:
        """High half of the product of the operands' unsigned bit patterns (Triton's and CUDA's umulhi),
        whatever their signedness; the result keeps the operands' type."""
        a, b, dtype = self._binary_operands(a, b, allow_float=False)
        if dtype.is_int_signed():
            unsigned = T.BY_NAME[f"uint{dtype.primitive_bitwidth}"]
            a, b = self.cast(a, unsigned), self.cast(b, unsigned)  # same width: the bits are kept
            return self.cast(self.emit(OP.ARITH_UMULHI, [a, b], a.type), dtype)
        return self.emit(OP.ARITH_UMULHI, [a, b], a.type)

    # -- memory
    def load(self, ptr, mask=None, other=None, cache: str = "", eviction: str = "", volatile: bool = False) -> tensor:
        ptr = self.to_tensor(ptr)
        if not ptr.dtype.is_ptr():
            raise TypeError(f"tl.load expects a pointer, got {ptr.dtype}")
        elem = ptr.dtype.element_ty
        shape = ptr.shape
        if mask is not None:
            mask = self.truthy(mask)
            shape = self.broadcast_shapes(shape, mask.shape)
        if other is not None:
            if mask is None:
                raise ValueError("tl.load: `other` needs a `mask`")
            other = self.to_tensor(other)
            shape = self.broadcast_shapes(shape, other.shape)
        ptr = self.broadcast_to(ptr, shape)
        mask = self.broadcast_to(mask, shape) if mask is not None else self.full(shape, True, T.int1)
        if other is None:
            other = self.full(shape, 0, elem)
        else:
            other = self.broadcast_to(self.cast(other, elem), shape)
        return self.emit(OP.TILE_LOAD, [ptr, mask, other], TileType(elem, shape),
                         cache=str(cache or ""), eviction=str(eviction or ""), volatile=bool(volatile))

    def store(self, ptr, value, mask=None, cache: str = "", eviction: str = "") -> None:
        ptr = self.to_tensor(ptr)
        if not ptr.dtype.is_ptr():
            raise TypeError(f"tl.store expects a pointer, got {ptr.dtype}")
        if ptr.dtype.const:
            raise TypeError("Cannot store to a constant pointer")
        value = self.to_tensor(value)
        masks = [self.to_tensor(mask).shape] if mask is not None else []
        shape = self.broadcast_shapes(ptr.shape, value.shape, *masks)
        if shape != ptr.shape:
            ptr = self.broadcast_to(ptr, shape)
        value = self.broadcast_to(self.cast(value, ptr.dtype.element_ty), shape)
        mask = self.broadcast_to(self.truthy(mask), shape) if mask is not None else self.full(shape, True, T.int1)
        self.builder.create(OP.TILE_STORE, [ptr.handle, value.handle, mask.handle], [],
                            {"cache": str(cache or ""), "eviction": str(eviction or "")})

    def atomic(self, kind: str, ptr, val, mask=None, sem=None, scope=None) -> tensor:
        ptr = self.to_tensor(ptr)
        if not ptr.dtype.is_ptr():
            raise TypeError(f"atomic_{kind} expects a pointer, got {ptr.dtype}")
        elem = ptr.dtype.element_ty
        if kind in ("and", "or", "xor") and not elem.is_int():
            raise TypeError(f"atomic_{kind} needs an integer pointee, got {elem}")
        if elem in (T.float8e4nv, T.float8e5, T.int1, T.int8, T.uint8, T.int16, T.uint16) or \
                (kind != "add" and kind != "xchg" and elem in (T.float16, T.bfloat16)):
            raise TypeError(f"atomic_{kind} is not supported for {elem}")
        val = self.to_tensor(val)
        shape = self.broadcast_shapes(ptr.shape, val.shape, *([self.to_tensor(mask).shape] if mask is not None else []))
        ptr = self.broadcast_to(ptr, shape)
        val = self.broadcast_to(self.cast(val, elem), shape)
        mask = self.broadcast_to(self.truthy(mask), shape) if mask is not None else self.full(shape, True, T.int1)
        return self.emit(OP.TILE_ATOMIC, [ptr, val, mask], TileType(elem, shape), kind=kind,
                         sem=str(sem or "acq_rel"), scope=str(scope or "gpu"))

    def atomic_cas(self, ptr, cmp, val, sem=None, scope=None) -> tensor:
        ptr = self.to_tensor(ptr)
        elem = ptr.dtype.element_ty
        if elem.primitive_bitwidth not in (16, 32, 64):
            raise TypeError(f"atomic_cas is not supported for {elem}")
        cmp, val = self.to_tensor(cmp), self.to_tensor(val)
        shape = self.broadcast_shapes(ptr.shape, cmp.shape, val.shape)
        ptr = self.broadcast_to(ptr, shape)
        cmp = self.broadcast_to(self.cast(cmp, elem), shape)
        val = self.broadcast_to(self.cast(val, elem), shape)
        return self.emit(OP.TILE_ATOMIC_CAS, [ptr, cmp, val], TileType(elem, shape),
                         sem=str(sem or "acq_rel"), scope=str(scope or "gpu"))

    def atomic_load(self, ptr, mask=None, sem=None, scope=None) -> tensor:
        """Triton 3.9's tl.atomic_load: an acquire (or relaxed) load that is never merged, hoisted or fused."""
        ptr = self._atomic_pointer("atomic_load", ptr)
        sem, scope = _ordering("atomic_load", sem, ("acquire", "relaxed")), _scope("atomic_load", scope)
        shape = self.broadcast_shapes(ptr.shape, *([self.to_tensor(mask).shape] if mask is not None else []))
        ptr = self.broadcast_to(ptr, shape)
        mask = self.broadcast_to(self.truthy(mask), shape) if mask is not None else self.full(shape, True, T.int1)
        return self.emit(OP.TILE_ATOMIC_LOAD, [ptr, mask], TileType(ptr.dtype.element_ty, shape), sem=sem, scope=scope)

    def atomic_store(self, ptr, value, mask=None, sem=None, scope=None) -> None:
        """Triton 3.9's tl.atomic_store: a release (or relaxed) store of each active lane."""
        ptr = self._atomic_pointer("atomic_store", ptr)
        if ptr.dtype.const:
            raise TypeError("Cannot store to a constant pointer")
        sem, scope = _ordering("atomic_store", sem, ("release", "relaxed")), _scope("atomic_store", scope)
        value = self.to_tensor(value)
        masks = [self.to_tensor(mask).shape] if mask is not None else []
        shape = self.broadcast_shapes(ptr.shape, value.shape, *masks)
        ptr = self.broadcast_to(ptr, shape)
        value = self.broadcast_to(self.cast(value, ptr.dtype.element_ty), shape)
        mask = self.broadcast_to(self.truthy(mask), shape) if mask is not None else self.full(shape, True, T.int1)
        self.builder.create(OP.TILE_ATOMIC_STORE, [ptr.handle, value.handle, mask.handle], [],
                            {"sem": sem, "scope": scope})

    def atomic_poll(self, ptr, expected, sem=None, scope=None, timeout_ns=None) -> tensor:
        """Triton 3.9's tl.atomic_poll: spin until *ptr == expected (per element) or the shared timeout passes;
        True where the value was seen."""
        ptr = self._atomic_pointer("atomic_poll", ptr)
        elem = ptr.dtype.element_ty
        if not elem.is_int() or elem.is_bool() or elem.primitive_bitwidth not in (16, 32, 64):
            raise TypeError(f"atomic_poll needs a pointer to a 16-, 32- or 64-bit integer, got a pointer to {elem}")
        sem, scope = _ordering("atomic_poll", sem, ("acquire", "relaxed")), _scope("atomic_poll", scope)
        expected = self.to_tensor(expected)
        try:
            shape = self.broadcast_shapes(ptr.shape, expected.shape)
        except ValueError:
            shape = None
        if shape != ptr.shape:
            raise ValueError(f"atomic_poll: expected value of shape {list(expected.shape)} does not fit the pointer's "
                             f"shape {list(ptr.shape)}")
        expected = self.broadcast_to(self.cast(expected, elem), shape)
        timeout_ns = unwrap(timeout_ns)
        if timeout_ns is None:
            timeout = self.scalar_constant(-1, T.int64)
        elif isinstance(timeout_ns, int) and not isinstance(timeout_ns, bool):
            if not 0 <= timeout_ns < 2**63:
                raise ValueError(f"atomic_poll: timeout_ns must be in [0, 2**63), got {timeout_ns}")
            timeout = self.scalar_constant(timeout_ns, T.int64)
        else:
            timeout = self.to_tensor(timeout_ns)
            if timeout.shape or not timeout.dtype.is_int() or timeout.dtype.is_bool():
                raise TypeError(f"atomic_poll: timeout_ns must be an integer scalar, got {timeout.type}")
            timeout = self.cast(timeout, T.int64)
        return self.emit(OP.TILE_ATOMIC_POLL, [ptr, expected, timeout], TileType(T.int1, shape), sem=sem, scope=scope)

    def _atomic_pointer(self, what: str, ptr) -> tensor:
        ptr = self.to_tensor(ptr)
        if not ptr.dtype.is_ptr():
            raise TypeError(f"{what} expects a pointer, got {ptr.dtype}")
        return ptr

    # -- reductions and scans
    def reduce(self, inputs: Sequence[tensor], axis, combine: Callable, keep_dims: bool = False,
               op: str = OP.TILE_REDUCE, extra_attrs: dict | None = None) -> list[tensor]:
        """Reduce (or scan) along `axis`; `combine(lhs_tuple, rhs_tuple) -> tuple` emits the region body."""
        inputs = [self.to_tensor(x) for x in inputs]
        axis = unwrap(axis)
        if axis is None:
            inputs = [self.reshape(x, (x.numel,)) if x.type.rank != 1 else x for x in inputs]
            axis = 0
        if not inputs[0].shape:
            raise ValueError("cannot reduce a scalar")
        rank = inputs[0].type.rank
        if isinstance(axis, bool) or not isinstance(axis, int):
            raise TypeError(f"axis must be a compile-time integer, got {axis!r}")
        if not -rank <= axis < rank:
            raise ValueError(f"axis {axis} is out of range for shape {list(inputs[0].shape)}")
        axis %= rank
        shape = inputs[0].shape
        if any(x.shape != shape for x in inputs):
            raise ValueError("all inputs of a reduction must have the same shape")
        region = Block([TileType(x.dtype) for x in inputs] * 2)
        with self.builder.at(region):
            n = len(inputs)
            lhs = tuple(tensor(v) for v in region.args[:n])
            rhs = tuple(tensor(v) for v in region.args[n:])
            out = combine(lhs, rhs)
            out = out if isinstance(out, (tuple, list)) else (out,)
            out = [self.cast(self.to_tensor(o), x.dtype) for o, x in zip(out, inputs)]
            if len(out) != n or any(o.shape for o in out):
                raise ValueError("the combine function must return one scalar per input")
            self.builder.create(OP.SCF_YIELD, [o.handle for o in out], [])
        if op == OP.TILE_SCAN:
            result_types = [x.type for x in inputs]
            attrs = {"axis": axis, **(extra_attrs or {})}
        else:
            result_types = [TileType(x.dtype, shape[:axis] + shape[axis + 1:]) for x in inputs]
            attrs = {"axis": axis}
        res = self.builder.create(op, [x.handle for x in inputs], result_types, attrs, [region])
        outs = [tensor(r) for r in res.results]
        if keep_dims and op == OP.TILE_REDUCE:
            outs = [self.expand_dims(o, axis) for o in outs]
        return outs

    def map_elementwise(self, scalar_fn: Callable, args: Sequence, pack: int = 1) -> list[tensor]:
        """Triton's tl.map_elementwise: `scalar_fn(*scalars)` (a @jit function, inlined once into a region)
        runs per element of the broadcast arguments, `pack` consecutive row-major elements per call; with
        pack > 1 it takes each argument's `pack` elements in turn and returns each result's `pack` values."""
        if isinstance(pack, bool) or not isinstance(pack, int) or pack < 1:
            raise ValueError(f"map_elementwise: pack must be a positive integer, got {pack!r}")
        args = self.broadcast(*(self.to_tensor(a) for a in args)) if args else []
        if not args:
            raise ValueError("map_elementwise needs at least one tensor argument")
        shape = args[0].shape
        numel = args[0].numel
        if numel % pack:
            raise ValueError(f"map_elementwise: pack={pack} does not divide the {numel} elements of shape "
                             f"{list(shape)}")
        region = Block([TileType(a.dtype) for a in args for _ in range(pack)])
        with self.builder.at(region):
            out = scalar_fn([tensor(v) for v in region.args])
            out = list(out) if isinstance(out, (tuple, list)) else [out]
            out = [self.to_tensor(o) for o in out]
            if any(o.shape for o in out):
                raise ValueError("map_elementwise: the scalar function must return scalars")
            if not out or len(out) % pack:
                raise ValueError(f"map_elementwise: with pack={pack} the scalar function must return a multiple of "
                                 f"{pack} values ({pack} per result), got {len(out)}")
            dtypes = [o.dtype for o in out[::pack]]
            for j in range(1, pack):
                if [o.dtype for o in out[j::pack]] != dtypes:
                    raise ValueError("map_elementwise: the packed values of one result have different types")
            self.builder.create(OP.SCF_YIELD, [o.handle for o in out], [])
        res = self.builder.create(OP.TILE_MAP_ELEMENTWISE, [a.handle for a in args],
                                  [TileType(d, shape) for d in dtypes], {"pack": pack}, [region])
        return [tensor(r) for r in res.results]

    # -- linear algebra
    def dot(self, a, b, acc=None, input_precision=None, out_dtype=T.float32) -> tensor:
        a, b = self.to_tensor(a), self.to_tensor(b)
        if a.type.rank not in (2, 3) or a.type.rank != b.type.rank:
            raise ValueError(f"tl.dot needs two 2-D or two 3-D blocks, got {list(a.shape)} and {list(b.shape)}")
        if a.shape[-1] != b.shape[-2]:
            raise ValueError(f"tl.dot: inner dimensions differ: {list(a.shape)} @ {list(b.shape)}")
        if a.type.rank == 3 and a.shape[0] != b.shape[0]:
            raise ValueError(f"tl.dot: batch dimensions differ: {list(a.shape)} @ {list(b.shape)}")
        if a.dtype != b.dtype and not (a.dtype.is_fp8() and b.dtype.is_fp8()):
            raise TypeError(f"tl.dot: operands must have the same dtype, got {a.dtype} and {b.dtype}")
        allowed = (T.float32, T.float16, T.bfloat16, T.int8, T.uint8, T.float64)
        if a.dtype not in allowed and not a.dtype.is_fp8():
            raise TypeError(f"tl.dot does not support {a.dtype} operands")
        for d in (*a.shape, b.shape[-1]):
            if d < 1:
                raise ValueError("tl.dot: empty block")
        shape = a.shape[:-1] + b.shape[-1:]
        if acc is None:
            acc_dtype = T.int32 if a.dtype.is_int() else (T.float64 if a.dtype == T.float64 else unwrap(out_dtype))
            acc = self.full(shape, 0, acc_dtype)
        else:
            acc = self.to_tensor(acc)
            if acc.shape != shape:
                raise ValueError(f"tl.dot: acc has shape {list(acc.shape)}, the product has {list(shape)}")
        precision = unwrap(input_precision)
        if precision is None:
            precision = "tf32" if a.dtype == T.float32 else "ieee"
        if precision not in ("tf32", "tf32x3", "ieee", "bf16x3", "bf16x6"):
            raise ValueError(f"tl.dot: unknown input_precision {precision!r}")
        if acc.dtype in (T.float16, T.bfloat16):
            # A 16-bit accumulator sums in fp32 and is rounded once: tensor cores keep the partial sums of an
            # MMA wide, and Triton's interpreter does the same; rounding every k step loses Triton's accuracy.
            wide = self.emit(OP.TILE_DOT, [a, b, self.cast(acc, T.float32)], acc.type.with_dtype(T.float32),
                             input_precision=precision)
            return self.cast(wide, acc.dtype)
        return self.emit(OP.TILE_DOT, [a, b, acc], acc.type, input_precision=precision)


_SCOPES = ("gpu", "cta", "sys")


def _ordering(what: str, sem, allowed: tuple[str, ...]) -> str:
    """The memory order of an atomic load / store / poll; Triton accepts only these (the first is its default)."""
    sem = unwrap(sem)
    if sem is None:
        return allowed[0]
    if sem not in allowed:
        raise ValueError(f"{what}: sem must be " + " or ".join(f"'{a}'" for a in allowed) + f", got {sem!r}")
    return sem


def _scope(what: str, scope) -> str:
    scope = unwrap(scope)
    if scope is None:
        return "gpu"
    if scope not in _SCOPES:
        raise ValueError(f"{what}: scope must be 'gpu', 'cta' or 'sys', got {scope!r}")
    return scope

