"""Counted loops in the shape LLVM's loop vectoriser likes: i64 induction from 0, constant trip counts.

Every tile loop in the generated code comes from here, so their form (bottom-tested, no guard when the
trip count is a known positive constant, `nuw nsw` increments) is decided in one place.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import llvmlite.ir as ir

from jit.codegen.llvm_types import I1, I32, I64

INTERLEAVE_MIN_TRIP = 64  # constant trip counts from which vector loops interleave two vectors

Body = Callable[[ir.Value, list[ir.Value]], "Sequence[ir.Value] | None"]


def counted_loop(b: ir.IRBuilder, count: int | ir.Value, body: Body, carried: Sequence[ir.Value] = (),
                 name: str = "loop", scalar: bool = False) -> list[ir.Value]:
    """for i in range(count): carried = body(i, carried). Returns the final carried values.

    `count` is an int (unrolled away when 0 or 1) or an i64 value (guarded against <= 0). `scalar`
    keeps LLVM from vectorising or unrolling the loop (cold paths: code size is compile time).
    """
    carried = list(carried)
    const = isinstance(count, int)
    if const and count <= 0:
        return carried
    if const and count == 1:
        out = body(ir.Constant(I64, 0), carried)
        return carried if out is None else list(out)
    n = ir.Constant(I64, count) if const else count
    pre = b.block
    header = b.append_basic_block(name)
    exit_block = b.append_basic_block(name + ".end")
    if const:
        b.branch(header)
    else:
        b.cbranch(b.icmp_signed(">", n, ir.Constant(I64, 0)), header, exit_block)
    b.position_at_end(header)
    iv = b.phi(I64, name="i")
    iv.add_incoming(ir.Constant(I64, 0), pre)
    phis = []
    for value in carried:
        phi = b.phi(value.type)
        phi.add_incoming(value, pre)
        phis.append(phi)
    out = body(iv, list(phis))
    new = list(phis) if out is None else list(out)
    nxt = b.add(iv, ir.Constant(I64, 1), flags=["nuw", "nsw"])
    latch = b.block
    iv.add_incoming(nxt, latch)
    for phi, value in zip(phis, new):
        phi.add_incoming(value, latch)
    branch = b.cbranch(b.icmp_signed("<", nxt, n), header, exit_block)
    branch.set_metadata("llvm.loop", _loop_id(b.module, scalar, count if const else 0))
    b.position_at_end(exit_block)
    if const:
        return new
    results = []
    for init, value in zip(carried, new):
        phi = b.phi(value.type)
        phi.add_incoming(init, pre)
        phi.add_incoming(value, latch)
        results.append(phi)
    return results


def loop_nest(b: ir.IRBuilder, counts: Sequence[int | ir.Value], body: Callable[[list[ir.Value]], None],
              scalar: bool = False) -> None:
    """Nested loops over `counts` (outermost first, innermost contiguous); body(idx) with i64 indices."""

    def level(d: int, idx: list[ir.Value]) -> None:
        if d == len(counts):
            body(idx)
            return
        counted_loop(b, counts[d], lambda i, _: level(d + 1, idx + [i]), scalar=scalar)

    level(0, [])


def _loop_id(module: ir.Module, scalar: bool, count: int) -> ir.Value:
    """A fresh loop ID (self-referential, as LLVM requires). No loop is unrolled: fully unrolled tile
    loops multiply code size, hence compile time, for little speed. That also stops the vectoriser from
    interleaving, so long loops ask for 2 interleaved vectors (latency-bound bodies like exp and
    reductions need the extra independent work). Scalar loops are not vectorised at all."""
    kind = "scalar" if scalar else "interleaved" if count >= INTERLEAVE_MIN_TRIP else "plain"
    hints = _hints(module)[kind]
    loop_id = module.add_metadata([ir.MetaDataString(module, f"wavetile.loop.{len(module.metadata)}"), *hints])
    loop_id.operands = (loop_id, *hints)
    return loop_id


def _hints(module: ir.Module) -> dict[str, list]:
    """The loop-hint metadata nodes, made once per module."""
    hints = getattr(module, "_wavetile_loop_hints", None)
    if hints is None:
        no_unroll = module.add_metadata([ir.MetaDataString(module, "llvm.loop.unroll.disable")])
        no_vectors = module.add_metadata([ir.MetaDataString(module, "llvm.loop.vectorize.enable"), ir.Constant(I1, 0)])
        two = module.add_metadata([ir.MetaDataString(module, "llvm.loop.interleave.count"), ir.Constant(I32, 2)])
        hints = {"plain": [no_unroll], "scalar": [no_unroll, no_vectors], "interleaved": [no_unroll, two]}
        module._wavetile_loop_hints = hints
    return hints


def linear_index(b: ir.IRBuilder, idx: Sequence[ir.Value], strides: Sequence[int], offset: int = 0) -> ir.Value:
    """offset + sum(idx[d] * strides[d]) as i64, folding constants in Python."""
    total: ir.Value | None = None
    const = offset
    for i, s in zip(idx, strides):
        if s == 0:
            continue
        if isinstance(i, ir.Constant):
            const += int(i.constant) * s
            continue
        term = i if s == 1 else b.mul(i, ir.Constant(I64, s), flags=["nsw"])
        total = term if total is None else b.add(total, term, flags=["nsw"])
    if total is None:
        return ir.Constant(I64, const)
    return b.add(total, ir.Constant(I64, const), flags=["nsw"]) if const else total


def row_major_strides(shape: Sequence[int]) -> tuple[int, ...]:
    strides, acc = [], 1
    for d in reversed(shape):
        strides.append(acc)
        acc *= d
    return tuple(reversed(strides))
