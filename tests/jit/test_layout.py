"""The warp mapping: Triton's default blocked layout, with the warp width as a parameter."""

import numpy as np
import pytest

from jit.layout import default_layout, owners, warp_rows


@pytest.mark.parametrize("shape, warps, lanes, expect_lanes, expect_warps", [
    ((1024,), 4, 32, (32,), (4,)),
    ((32, 32), 4, 32, (1, 32), (4, 1)),
    ((16, 8), 4, 32, (4, 8), (4, 1)),
    ((64, 64), 8, 32, (1, 32), (4, 2)),
    ((32, 32), 4, 128, (4, 32), (4, 1)),
])
def test_default_layout_follows_tritons_rule(shape, warps, lanes, expect_lanes, expect_warps):
    layout = default_layout(shape, warps, lanes)
    assert layout.lanes == expect_lanes and layout.warps == expect_warps
    assert layout.warp_size == lanes and layout.num_warps == warps


@pytest.mark.parametrize("shape, vector", [((1024,), 1), ((1024,), 4), ((16, 64), 4), ((8, 4, 32), 2), ((33,), 1)])
@pytest.mark.parametrize("warp_size", [32, 128])
def test_every_element_has_exactly_one_owner(shape, vector, warp_size):
    layout = default_layout(shape, 4, warp_size, vector)
    rows = warp_rows(layout)
    assert rows.element.shape[1] == warp_size
    owned = np.concatenate([rows.element[~rows.replica] + v for v in range(rows.vector)])
    assert np.array_equal(np.sort(owned), np.arange(int(np.prod(shape))))
    warp, lane, reg = owners(layout)
    assert (warp >= 0).all() and (lane < warp_size).all() and (reg >= 0).all()


def test_small_tile_is_replicated_and_lanes_are_contiguous():
    rows = warp_rows(default_layout((64,), 4, 32))
    assert rows.replica.sum() == 4 * 32 - 64  # warps 2 and 3 hold copies
    assert np.array_equal(rows.element[0], np.arange(32))  # lane i of warp 0 holds element i
    vec = warp_rows(default_layout((1024,), 4, 32, 4))
    assert np.array_equal(vec.element[0], 4 * np.arange(32)) and vec.element.shape == (8, 32)


def test_bad_arguments_are_rejected():
    with pytest.raises(ValueError):
        default_layout((32,), 0, 32)


def test_rows_split_into_narrower_instructions_cover_the_same_elements_lane_by_lane():
    rows = warp_rows(default_layout((8, 64), 2, 32, 4))
    narrow = rows.split(1)
    assert narrow.element.shape[0] == 4 * rows.element.shape[0] and narrow.vector == 1
    wide = np.sort((rows.element[:, None, :] + np.arange(4)[None, :, None]).ravel())
    np.testing.assert_array_equal(np.sort(narrow.element.ravel()), wide)
    # one lane's run goes out one element per instruction, its instructions back to back
    np.testing.assert_array_equal(narrow.element[:4, 0], rows.element[0, 0] + np.arange(4))
    assert rows.split(4) is rows
