"""Every per-op table of the LLVM lowering covers exactly the op-table rows it should."""

from __future__ import annotations

from dsl.ir.ops import OP, OPS, Trait, with_trait
from jit import mathlib
from jit.codegen import elements, fusion, ops_elementwise
from jit.codegen import mathlib as llvm_mathlib
from jit.codegen.lower import EMITTERS

ELEMENTWISE = {name for name, info in OPS.items() if info.elementwise}
NOT_TERMINATORS = {name for name, info in OPS.items() if not info.terminator}


def test_every_op_but_terminators_has_an_emitter():
    assert set(EMITTERS) == NOT_TERMINATORS


def test_elementwise_emitters_are_the_elementwise_rows():
    assert set(ops_elementwise.ELEMENTWISE) == ELEMENTWISE


def test_index_maps_and_views_are_the_reindexing_rows():
    assert set(elements._INDEX_MAPS) == with_trait(Trait.REINDEX)
    assert set(elements._VIEWS) == with_trait(Trait.REINDEX)
    assert set(elements._REMAPS) == fusion.REMAPS | {OP.TILE_LOAD}


def test_every_math_algorithm_has_an_llvm_emitter():
    assert set(llvm_mathlib.UNARY) == set(mathlib.UNARY)
