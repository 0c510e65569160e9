"""Atomics: same-address multiplicity per instruction and across the launch."""

import numpy as np

from simulator import atomic_contention

LANES = np.arange(32, dtype=np.int64)


def test_distinct_addresses_do_not_serialise():
    r = atomic_contention(4 * LANES)
    assert r.serialized.tolist() == [0] and r.multiplicity.tolist() == [1]


def test_one_address_serialises_the_whole_warp():
    r = atomic_contention(np.zeros(32, np.int64))
    assert r.serialized.tolist() == [31] and r.multiplicity.tolist() == [32]


def test_histogram_like_pattern_and_masks():
    rows = np.stack([4 * (LANES % 4), 4 * LANES])
    mask = np.ones((2, 32), bool)
    mask[1, 16:] = False
    r = atomic_contention(rows, mask)
    assert r.ops.tolist() == [32, 16]
    assert r.serialized.tolist() == [28, 0]
    assert r.multiplicity.tolist() == [8, 1]
    # address 0 is hit 8 times in row 0 and once in row 1
    assert r.launch_multiplicity == 9
    c = r.to_counters()
    assert (c.atomic_requests, c.atomic_ops, c.atomic_serialized, c.atomic_max_multiplicity) == (2, 48, 28, 9)


def test_fully_masked_instruction_is_not_a_request():
    r = atomic_contention(4 * LANES, np.zeros(32, bool))
    assert r.requests.tolist() == [0] and r.launch_multiplicity == 0


def test_vector_lanes_update_each_of_their_elements():
    # 16 lanes adding 4 fp32 each; lanes 0-7 and 8-15 start at the same 8 addresses
    r = atomic_contention(16 * (LANES[:16] % 8), elements=4)
    assert r.ops.tolist() == [64] and r.serialized.tolist() == [32] and r.multiplicity.tolist() == [2]
