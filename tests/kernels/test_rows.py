"""Row ops: gather, bias add, argmax (first index on ties), temperature softmax, top-p draw (against a sort-based
reference); sizes not multiples of the block."""

import numpy as np
import pytest

from kernels._common import BF16
from kernels.registry import check
from kernels.rows import (
    _cases,
    add_bias,
    argmax_rows,
    gather_rows,
    softmax_rows,
    softmax_rows_reference,
    top_p_sample,
    top_p_sample_reference,
)


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


@pytest.mark.parametrize("vocab", [37, 3001, 100_003, 248_320])
@pytest.mark.parametrize("top_p", [0.1, 0.5, 0.9, 1.0])
def test_top_p_matches_reference(vocab, top_p):
    rng = np.random.default_rng(vocab * 10 + int(top_p * 10))
    logits = (rng.standard_normal((4, vocab)) * 4).astype(np.float32)
    logits[1, rng.integers(vocab)] = 60.0  # one token dominates the row
    probs = softmax_rows(logits)
    u = rng.random(4)
    got = top_p_sample(probs, top_p, u)
    assert np.array_equal(got, top_p_sample_reference(probs, top_p, u))
    assert got[1] == np.argmax(probs[1])


def test_top_p_small_nucleus_keeps_the_most_likely():
    probs = np.array([[0.1, 0.6, 0.3]], np.float32)
    assert top_p_sample(probs, 0.01, np.array([0.99]))[0] == 1
    assert top_p_sample(probs, 0.7, np.array([0.99]))[0] == 2  # nucleus {1, 2}: 0.6 + 0.3 reaches 0.7


@pytest.mark.parametrize("kwargs, message", [
    (dict(top_p=0.0), "top_p"), (dict(top_p=1.5), "top_p"), (dict(u=np.zeros(3)), "u has"),
    (dict(u=np.array([1.0, 0.5])), "u must"),
])
def test_top_p_bad_input(kwargs, message):
    args = dict(probs=np.full((2, 5), 0.2, np.float32), top_p=0.5, u=np.array([0.1, 0.2]))
    args.update(kwargs)
    with pytest.raises(ValueError, match=message):
        top_p_sample(**args)
