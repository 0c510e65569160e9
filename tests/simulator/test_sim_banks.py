"""Shared-memory bank conflicts: the classic transpose cases, wide accesses, 128-lane warps, brute force."""

from collections import defaultdict

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from simulator import bank_conflicts
from simulator.specs import get_spec

LANES = np.arange(32, dtype=np.int64)


def test_row_access_is_conflict_free():
    r = bank_conflicts(4 * LANES, access_bytes=4, spec="h200")
    assert (r.total_wavefronts, r.total_conflicts) == (1, 0)


def test_transpose_without_padding_is_a_warp_wide_conflict():
    tile = 32  # a [32, 32] fp32 tile stored row-major, read down a column
    r = bank_conflicts(4 * tile * LANES, access_bytes=4)
    assert r.total_wavefronts == 32
    assert r.total_conflicts == 31
    assert r.max_degree == 32


def test_transpose_with_one_word_of_padding_is_conflict_free():
    r = bank_conflicts(4 * 33 * LANES, access_bytes=4)
    assert (r.total_wavefronts, r.total_conflicts) == (1, 0)


def test_broadcast_does_not_conflict():
    assert bank_conflicts(np.zeros(32, np.int64)).total_conflicts == 0
    # two words in different banks, each read by 16 lanes: still one wavefront
    assert bank_conflicts(4 * (LANES % 2)).total_wavefronts == 1
    # same byte word read through different byte offsets is one word
    assert bank_conflicts(LANES % 4, access_bytes=1).total_wavefronts == 1


def test_two_words_in_one_bank_is_two_way():
    r = bank_conflicts(8 * LANES, access_bytes=4)  # stride 2 words: banks 0, 2, ..., 30 twice
    assert (r.total_wavefronts, r.total_conflicts) == (2, 1)


def test_wide_accesses_split_into_phases():
    r64 = bank_conflicts(8 * LANES, access_bytes=8)
    assert (r64.total_wavefronts, r64.total_conflicts) == (2, 0)
    r128 = bank_conflicts(16 * LANES, access_bytes=16)
    assert (r128.total_wavefronts, r128.total_conflicts) == (4, 0)
    # 64-bit accesses with a 2x stride conflict inside each half-warp phase
    r64s = bank_conflicts(16 * LANES, access_bytes=8)
    assert r64s.total_wavefronts == 4


def test_masked_lanes_do_not_count():
    mask = LANES == 0
    r = bank_conflicts(4 * 32 * LANES, mask)
    assert (r.total_wavefronts, r.total_conflicts) == (1, 0)
    assert bank_conflicts(4 * LANES, np.zeros(32, bool)).total_wavefronts == 0


def test_128_lane_warps_on_s4000():
    lanes = np.arange(128, dtype=np.int64)
    row = bank_conflicts(4 * lanes, access_bytes=4, spec="mtt-s4000")
    assert (row.total_wavefronts, row.total_conflicts) == (4, 0)  # 512 B at 128 B per wavefront
    column = bank_conflicts(4 * 128 * lanes, access_bytes=4, spec="mtt-s4000")
    assert column.total_wavefronts == 128  # warp-width-way
    padded = bank_conflicts(4 * 129 * lanes, access_bytes=4, spec="mtt-s4000")
    assert padded.total_conflicts == 0


def test_bank_geometry_comes_from_the_spec():
    spec = get_spec("h200").replace(name="h200-16-banks", shared_banks=16)
    # stride 16 words: all 32 lanes land in bank 0 of a 16-bank memory; phases hold 16 lanes each
    assert bank_conflicts(4 * 16 * LANES, spec=spec).total_wavefronts == 32
    assert bank_conflicts(4 * LANES, spec=spec).total_wavefronts == 2


def test_to_counters():
    c = bank_conflicts(4 * 32 * LANES).to_counters()
    assert (c.shared_requests, c.shared_wavefronts, c.shared_bank_conflicts, c.shared_bytes) == (1, 32, 31, 128)


def brute_force(addresses, mask, size, banks=32, word=4):
    """§3.2 literally: per phase of (banks * word) / size lanes, max distinct words in any bank."""
    phase = max(1, min(len(addresses[0]), banks * word // size))
    wavefronts = ideal = 0
    for row, active in zip(addresses, mask):
        for p in range(0, len(row), phase):
            words = defaultdict(set)
            for a, m in zip(row[p:p + phase], active[p:p + phase]):
                if m:
                    for w in range(a // word, (a + size - 1) // word + 1):
                        words[w % banks].add(w)
            if words:
                wavefronts += max(len(s) for s in words.values())
                ideal += 1
    return wavefronts, wavefronts - ideal


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 4), st.sampled_from([1, 2, 4, 8, 16]), st.integers(0, 2**32 - 1))
def test_matches_brute_force(rows, size, seed):
    rng = np.random.default_rng(seed)
    addresses = rng.integers(0, 512, size=(rows, 32)) * rng.choice([1, size])
    mask = rng.random((rows, 32)) < 0.85
    r = bank_conflicts(addresses, mask, access_bytes=size, spec="h200")
    assert (r.total_wavefronts, r.total_conflicts) == brute_force(addresses, mask, size)
