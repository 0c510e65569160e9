"""jit.mathlib has an algorithm for exactly the unary math rows that are not one IEEE operation
(the op table's "special" class): the LLVM lowering, the interpreter and eager mode all take them from it."""

from __future__ import annotations

from dsl.ir.ops import OPS, UNARY_MATH
from jit import mathlib


def test_algorithms_are_the_special_unary_math_rows():
    special = {name for name in UNARY_MATH if OPS[f"math.{name}"].cls == "special"}
    assert set(mathlib.UNARY) == special
