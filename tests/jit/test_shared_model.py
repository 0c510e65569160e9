"""The shared-memory accesses a GPU lowering makes, checked by what they must cover."""

import math

import numpy as np
import pytest

from jit.layout import default_layout, reduction_split
from jit.shared_model import reduction_exchange


@pytest.mark.parametrize("shape, axis, num_warps, vector, itemsizes", [
    ((16, 128), 0, 8, 8, (4,)),
    ((16, 64), 0, 2, 4, (4,)),
    ((4, 256), 1, 8, 4, (4,)),
    ((2048,), 0, 4, 4, (4,)),
    ((8, 4, 32), 1, 4, 2, (4,)),
    ((64, 32), 0, 16, 1, (4, 4)),  # an argmax: value and index, one scratch each
    ((32, 8), 0, 4, 1, (2,)),  # fewer elements than threads: lanes and warps hold replicas
])
def test_each_partial_is_stored_once_and_read_back_by_every_thread_that_holds_its_result(
        shape, axis, num_warps, vector, itemsizes):
    writes, reads, scratch, lanes, warps = reduction_exchange(shape, axis, itemsizes, num_warps, 32, vector)
    outputs = math.prod(shape) // shape[axis]
    layout = default_layout(shape, num_warps, 32, max(1, min(vector, math.prod(shape) // (num_warps * 32))))
    assert (lanes, warps) == reduction_split(layout, axis)[1:]
    assert warps > 1 and scratch == warps * outputs * sum(itemsizes)
    per_operand = len(writes) // len(itemsizes)
    for k, itemsize in enumerate(itemsizes):
        partials, *fold = writes[k * per_operand:(k + 1) * per_operand]
        addresses, active, size = partials
        assert size == itemsize
        stored = addresses[active] // itemsize
        # every (warp along the axis, result) word exactly once
        assert np.array_equal(np.sort(stored), np.arange(warps * outputs))
        # the fold's stores leave one combined value per result, at word W x result
        folded = np.concatenate([a[m] for a, m, _ in fold]) // itemsize
        assert set(folded.tolist()) >= set((warps * np.arange(outputs)).tolist())
        back, mask, _ = reads[k * per_operand]
        assert mask is None and set((back // itemsize).ravel().tolist()) == set((warps * np.arange(outputs)).tolist())


def test_no_exchange_when_the_axis_lies_within_one_warp():
    writes, reads, scratch, lanes, warps = reduction_exchange((4, 256), 1, (4,), 1, 32, 4)
    assert (writes, reads, scratch, warps) == ([], [], 0, 1) and lanes == 32
