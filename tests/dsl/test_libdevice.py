"""`tl.extra.libdevice` has every unary math op of the op table under its name, and nothing it lacks."""

from __future__ import annotations

import pytest

from dsl import libdevice
from dsl.ir.ops import UNARY_MATH


@pytest.mark.parametrize("name", UNARY_MATH)
def test_every_unary_math_op_is_a_libdevice_function(name):
    fn = getattr(libdevice, name)
    assert callable(fn) and fn.__name__ == name
    assert getattr(libdevice, name) is fn


def test_a_function_the_table_lacks_is_an_attribute_error():
    with pytest.raises(AttributeError, match="no attribute 'acoshf'"):
        libdevice.acoshf  # noqa: B018
