"""The profiler counts every op by the instruction class of its op-table row: each class is one the
simulator knows (simulator.INSTRUCTION_CLASSES) or one the profiler counts through its own fields."""

from __future__ import annotations

import pytest

from dsl import dtypes as T
from dsl.ir.ops import OPS
from jit import profiler
from simulator.counters import INSTRUCTION_CLASSES


def test_every_row_has_a_known_instruction_class():
    known = set(INSTRUCTION_CLASSES) | profiler.OWN_FIELD_CLASSES
    for name, info in OPS.items():
        assert info.cls in known, f"{name}: class {info.cls!r}"
    assert not set(INSTRUCTION_CLASSES) & profiler.OWN_FIELD_CLASSES


@pytest.mark.parametrize("name", sorted(OPS))
def test_counted_class_is_a_simulator_class(name):
    for dtype in (T.float32, T.int32):
        assert profiler._class(OPS[name].cls, dtype) in INSTRUCTION_CLASSES


def test_float_arithmetic_on_integers_counts_as_integer():
    assert profiler._class(OPS["arith.mul"].cls, T.int32) == "integer_multiply"
    assert profiler._class(OPS["arith.add"].cls, T.int32) == "integer"
    assert profiler._class(OPS["arith.mul"].cls, T.float32) == "fp_mul"
    assert profiler._class(OPS["arith.fma"].cls, T.float16) == "fp_fma"
