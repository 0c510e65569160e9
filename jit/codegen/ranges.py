"""Bounds of integer tiles read off how they were built, instead of a pass over their lanes.

`pid * BLOCK + tl.arange(0, BLOCK)` lies in [pid * BLOCK, pid * BLOCK + BLOCK - 1], and `offs < n` is on in
every lane when pid * BLOCK + BLOCK - 1 < n. A vector add's bounds check and its every-lane-on test need only
these few scalar instructions; a pass over 4096 lanes for each costs as much as the load itself.

Intervals are i64 IR values for signed integer tiles of up to 32 bits, built from arange, splat, uniform
constants, add, sub, mul and lane re-indexing. Each comes with an i1 that is false when some step could have
wrapped in the tile's own width; then the bounds are meaningless and callers fall back to a pass.
"""

from __future__ import annotations

from dataclasses import dataclass

import llvmlite.ir as ir

from dsl.ir.core import Value
from dsl.ir.ops import OP, Trait, with_trait
from jit.codegen.llvm_types import I1, I64, intrinsic

# ops whose lanes are a re-arrangement (or repetition) of their operand's lanes
SAME_VALUES = with_trait(Trait.SAME_VALUES)


@dataclass(frozen=True)
class Interval:
    lo: ir.Value  # i64
    hi: ir.Value  # i64
    valid: ir.Value  # i1: no step wrapped, so lo <= every lane <= hi


def interval(lw, value: Value) -> Interval | None:
    """Bounds of every lane of `value`, or None when its construction is not one this module follows."""
    dt = value.type.dtype
    if not dt.is_int_signed() or dt.primitive_bitwidth > 32:
        return None
    key = (lw.block_key, "interval", value)
    if key not in lw.cache:
        lw.cache[key] = _build(lw, value)
    return lw.cache[key]


def _build(lw, value: Value) -> Interval | None:
    b = lw.b
    if value.type.is_scalar and value in lw.scalars:
        x = b.sext(lw.scalars[value], I64) if lw.scalars[value].type.width < 64 else lw.scalars[value]
        return Interval(x, x, ir.Constant(I1, 1))
    op = value.op
    if op is None:
        return None
    if op.name == OP.TILE_ARANGE:
        return Interval(ir.Constant(I64, op.attrs["start"]), ir.Constant(I64, op.attrs["end"] - 1), ir.Constant(I1, 1))
    if op.name == OP.ARITH_CONSTANT and isinstance(op.attrs["value"], int):
        c = ir.Constant(I64, op.attrs["value"])
        return Interval(c, c, ir.Constant(I1, 1))
    if op.name in SAME_VALUES:
        return interval(lw, op.operands[0])
    if op.name not in (OP.ARITH_ADD, OP.ARITH_SUB, OP.ARITH_MUL):
        return None
    x, y = (interval(lw, v) for v in op.operands)
    if x is None or y is None:
        return None
    if op.name == OP.ARITH_ADD:
        lo, hi = b.add(x.lo, y.lo), b.add(x.hi, y.hi)
    elif op.name == OP.ARITH_SUB:
        lo, hi = b.sub(x.lo, y.hi), b.sub(x.hi, y.lo)
    else:  # the extremes of a product of two intervals are among the products of their ends
        smin = intrinsic(lw.module, "llvm.smin", I64, [I64, I64])
        smax = intrinsic(lw.module, "llvm.smax", I64, [I64, I64])
        ends = [b.mul(p, q) for p in (x.lo, x.hi) for q in (y.lo, y.hi)]
        lo, hi = ends[0], ends[0]
        for e in ends[1:]:
            lo, hi = b.call(smin, [lo, e]), b.call(smax, [hi, e])
    bits = value.type.dtype.primitive_bitwidth
    fits = b.and_(b.icmp_signed(">=", lo, ir.Constant(I64, -(1 << (bits - 1)))),
                  b.icmp_signed("<", hi, ir.Constant(I64, 1 << (bits - 1))))
    return Interval(lo, hi, b.and_(b.and_(x.valid, y.valid), fits))


def provably_all_on(lw, mask: Value) -> ir.Value | None:
    """i1 that is true only when every lane of the boolean tile is on (false means: not known), or None when
    the mask is not built from comparisons of such intervals, splats and ands."""
    b = lw.b
    if mask.type.is_scalar and mask in lw.scalars:
        return lw.scalars[mask]
    op = mask.op
    if op is None:
        return None
    if op.name == OP.ARITH_CONSTANT and isinstance(op.attrs["value"], (bool, int)):
        return ir.Constant(I1, int(bool(op.attrs["value"])))
    if op.name in SAME_VALUES:
        return provably_all_on(lw, op.operands[0])
    if op.name == OP.ARITH_AND:
        x, y = (provably_all_on(lw, v) for v in op.operands)
        return None if x is None or y is None else b.and_(x, y)
    if op.name != OP.ARITH_CMP or op.attrs["predicate"] not in ("lt", "le", "gt", "ge"):
        return None
    x, y = (interval(lw, v) for v in op.operands)
    if x is None or y is None:
        return None
    holds = {"lt": lambda: b.icmp_signed("<", x.hi, y.lo), "le": lambda: b.icmp_signed("<=", x.hi, y.lo),
             "gt": lambda: b.icmp_signed(">", x.lo, y.hi), "ge": lambda: b.icmp_signed(">=", x.lo, y.hi)}
    return b.and_(b.and_(x.valid, y.valid), holds[op.attrs["predicate"]]())
