"""The interpreter's handler tables cover exactly the op-table rows (terminators end a block instead)."""

from __future__ import annotations

from dsl.ir.ops import OPS
from jit.interp import elementwise, machine


def test_every_op_but_terminators_has_a_handler():
    assert set(machine.HANDLERS) == {name for name, info in OPS.items() if not info.terminator}


def test_elementwise_handlers_are_the_elementwise_rows():
    assert set(elementwise.ELEMENTWISE) == {name for name, info in OPS.items() if info.elementwise}
