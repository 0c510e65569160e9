"""Row ops: gather, bias add, argmax (first index on ties), temperature softmax; sizes not multiples of the block."""

import numpy as np
import pytest

from kernels._common import BF16
from kernels.registry import check
from kernels.rows import _cases, add_bias, argmax_rows, gather_rows, softmax_rows, softmax_rows_reference


def test_registered_cases():
    for case in list(_cases()):
        assert check(case, case.run(), case.reference()), case.op


@pytest.mark.parametrize("dtype", [np.float32, BF16])
def test_gather_rows_copies_exactly(dtype):
    rng = np.random.default_rng(1)
    table = rng.standard_normal((77, 1500)).astype(dtype)
    idx = rng.integers(0, 77, 13)
    np.testing.assert_array_equal(gather_rows(table, idx), table[idx])
    with pytest.raises(ValueError, match="indices must lie"):
        gather_rows(table, [77])


def test_argmax_takes_the_first_maximum_across_blocks():
    rng = np.random.default_rng(2)
    x = rng.standard_normal((4, 3000)).astype(np.float32)
    x[1, [5, 2500]] = 9.0  # a tie across column blocks
    x[2, [1100, 1030]] = 9.0  # a tie inside one block, the later lane first in memory order of lanes
    x[3, -1] = 50.0
    np.testing.assert_array_equal(argmax_rows(x), np.argmax(x, axis=1))


def test_softmax_and_bias():
    rng = np.random.default_rng(3)
    x = (5 * rng.standard_normal((3, 2049))).astype(np.float32)
    for t in (0.3, 1.0, 2.5):
        np.testing.assert_allclose(softmax_rows(x, t), softmax_rows_reference(x, t), rtol=1e-5, atol=1e-7)
    with pytest.raises(ValueError, match="temperature"):
        softmax_rows(x, 0.0)
    b = rng.standard_normal(2049).astype(np.float32)
    np.testing.assert_array_equal(add_bias(x, b), x + b)
