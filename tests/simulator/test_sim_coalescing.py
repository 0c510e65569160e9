"""Global-memory coalescing: hand-computed request and sector counts, and a brute-force cross-check."""

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from simulator import coalesce
from simulator.specs import get_spec

LANES = np.arange(32, dtype=np.int64)
BASE = 1 << 20  # allocations are at least 256-B aligned


def test_coalesced_fp32_warp_load_is_one_request_four_sectors():
    r = coalesce(BASE + 4 * LANES, access_bytes=4, spec="h200")
    assert (r.total_requests, r.total_sectors, r.total_lines) == (1, 4, 1)
    assert r.bytes_requested == r.bytes_moved == 128
    assert r.efficiency == 1.0


def test_stride_two_moves_eight_sectors():
    r = coalesce(BASE + 8 * LANES, access_bytes=4)
    assert r.total_sectors == 8
    assert r.efficiency == 0.5


def test_column_read_of_row_major_tile_is_one_sector_per_lane():
    row_stride = 64 * 4  # a [32, 64] fp32 tile read down one column
    r = coalesce(BASE + row_stride * LANES + 12, access_bytes=4)
    assert r.total_requests == 1
    assert r.total_sectors == 32
    assert r.total_lines == 32
    assert r.efficiency == 128 / 1024


def test_unaligned_contiguous_touches_five_sectors():
    r = coalesce(BASE + 4 + 4 * LANES, access_bytes=4)
    assert r.total_sectors == 5


def test_sixteen_byte_vector_loads_use_every_byte():
    r = coalesce(BASE + 16 * LANES, access_bytes=16)
    assert r.total_sectors == 16
    assert r.efficiency == 1.0


def test_broadcast_is_one_sector():
    r = coalesce(np.full(32, BASE + 64), access_bytes=4)
    assert r.total_sectors == 1 and r.bytes_requested == 128


def test_masked_lanes_touch_nothing():
    mask = LANES < 16
    r = coalesce(BASE + 4 * LANES, mask, access_bytes=4)
    assert r.total_sectors == 2
    assert r.total_masked_lanes == 16
    assert r.bytes_requested == 64
    none = coalesce(BASE + 4 * LANES, np.zeros(32, bool))
    assert (none.total_requests, none.total_sectors) == (0, 0)


def test_an_access_straddling_sectors_counts_both():
    r = coalesce(np.array([BASE + 30]), access_bytes=4)
    assert r.total_sectors == 2


def test_128_lane_warps_split_into_32_lane_transactions_on_s4000():
    lanes = np.arange(128, dtype=np.int64)
    r = coalesce(BASE + 4 * lanes, access_bytes=4, spec="mtt-s4000")
    assert r.total_requests == 4
    assert r.total_sectors == 16
    half = coalesce(BASE + 4 * lanes, lanes < 64, access_bytes=4, spec="mtt-s4000")
    assert half.total_requests == 2 and half.total_masked_lanes == 64


def test_per_instruction_arrays_and_sector_stream():
    rows = np.stack([BASE + 4 * LANES, BASE + 8 * LANES, BASE + 256 * LANES])
    r = coalesce(rows, access_bytes=4, keep_sectors=True)
    assert r.sectors.tolist() == [4, 8, 32]
    assert r.requests.tolist() == [1, 1, 1]
    assert r.sector_ids.size == 44
    assert r.sector_ids[:4].tolist() == [BASE // 32 + i for i in range(4)]


def test_to_counters():
    c = coalesce(BASE + 8 * LANES, access_bytes=4).to_counters("store")
    assert (c.store_requests, c.store_sectors, c.store_bytes_requested, c.store_bytes_moved) == (1, 8, 128, 256)
    assert c.load_requests == 0


def test_custom_sector_size_from_the_spec():
    spec = get_spec("h200").replace(name="h200-64b-sectors", sector_bytes=64)
    assert coalesce(BASE + 4 * LANES, spec=spec).total_sectors == 2


def brute_force(addresses, mask, size, sector=32, line=128, group=32):
    sectors = lines = requests = 0
    for row, active in zip(addresses, mask):
        for g in range(0, len(row), group):
            touched = {s for a, m in zip(row[g:g + group], active[g:g + group]) if m
                       for s in range(a // sector, (a + size - 1) // sector + 1)}
            sectors += len(touched)
            lines += len({s * sector // line for s in touched})
            requests += bool(active[g:g + group].any())
    return requests, sectors, lines


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 4), st.sampled_from([1, 2, 4, 8, 16]), st.sampled_from([32, 128]),
       st.integers(0, 2**32 - 1))
def test_matches_brute_force(rows, size, width, seed):
    rng = np.random.default_rng(seed)
    addresses = rng.integers(0, 2048, size=(rows, width)) * rng.choice([1, size])
    mask = rng.random((rows, width)) < 0.8
    spec = "h200" if width == 32 else "mtt-s4000"
    r = coalesce(addresses, mask, access_bytes=size, spec=spec)
    assert (r.total_requests, r.total_sectors, r.total_lines) == brute_force(addresses, mask, size)


def test_stores_count_the_sectors_they_write_only_in_part():
    def partial(addresses, size, mask=None):
        return int(coalesce(addresses, mask, access_bytes=size, spec="h200", count_partial=True).partial_sectors.sum())

    assert partial(BASE + 2 * LANES, 2) == 0  # a bf16 row: four whole sectors
    assert partial(BASE + 4 * LANES, 2) == 4  # every other bf16 (an interleaved rotary's half): each sector half
    assert partial(BASE + 60_000 * LANES, 8) == 32  # 8 bytes of each of 32 rows (a narrow column slice)
    assert partial(BASE + 16 * LANES + 8, 16) == 2  # misaligned 16-byte vectors: the first and last sector
    tail = np.arange(32) < 20
    assert partial(BASE + 4 * LANES, 4, tail) == 1  # 80 bytes: two whole sectors and half of the third
    assert partial(np.full(32, BASE), 4) == 1  # every lane the same 4 bytes: written once
    assert coalesce(BASE + 4 * LANES, access_bytes=2).partial_sectors is None  # asked for only on stores
    # one execution's instructions merge: a thread's four scalar stores of an unaligned 16-byte run fill sectors
    scalar = BASE + 4 + 16 * LANES[None, :] + 4 * np.arange(4)[:, None]
    assert partial(scalar, 4) == 3 * 16 + 17  # alone, each instruction writes part of every sector it touches
    assert int(coalesce(scalar, access_bytes=4, spec="h200", count_partial=True, partial_rows=4)
               .partial_sectors.sum()) == 2  # the ends of the 512-byte run


def test_a_run_split_over_instructions_counts_the_pieces_each_writes():
    """Four scalar fp32 stores of a lane's 16-byte run (lanes 16 bytes apart): merged they write 16 whole sectors,
    one by one each writes 8 bytes of all 16, so 64 pieces reach the L2 where the hardware does not merge them."""
    scalar = BASE + 16 * LANES[None, :] + 4 * np.arange(4)[:, None]
    r = coalesce(scalar, access_bytes=4, spec="h200", count_partial=True, partial_rows=4, count_split=True)
    assert int(r.partial_sectors.sum()) == 0 and int(r.split_sectors.sum()) == 4 * 16
    tail = np.broadcast_to(LANES < 20, scalar.shape)  # 20 lanes: 10 sectors, 40 pieces
    r = coalesce(scalar, tail, access_bytes=4, spec="h200", count_partial=True, partial_rows=4, count_split=True)
    assert int(r.split_sectors.sum()) == 4 * 10 and int(r.partial_sectors.sum()) == 0
    assert coalesce(scalar, access_bytes=4, spec="h200", count_partial=True, partial_rows=4).split_sectors is None
    assert int(coalesce(BASE + 4 * LANES, access_bytes=4, spec="h200", count_partial=True,
                        count_split=True).to_counters("store").store_split_sectors) == 0  # one instruction a run


def partial_brute_force(addresses, mask, size, group=32, sector=32):
    found = 0
    for row, active in zip(addresses, mask):
        for g in range(0, len(row), group):
            written: dict[int, set] = {}
            for a, m in zip(row[g:g + group], active[g:g + group]):
                for byte in range(a, a + size) if m else ():
                    written.setdefault(byte // sector, set()).add(byte)
            found += sum(len(b) < sector for b in written.values())
    return found


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 4), st.sampled_from([1, 2, 4, 8, 16]), st.sampled_from([32, 128]),
       st.integers(0, 2**32 - 1))
def test_partial_sectors_match_brute_force(rows, size, width, seed):
    rng = np.random.default_rng(seed)
    if rng.random() < 0.5:  # scattered lanes
        addresses = rng.integers(0, 2048, size=(rows, width)) * rng.choice([1, size])
    else:  # runs in lane order (the common store) from any offset
        addresses = rng.integers(0, 2048, size=(rows, 1)) + size * np.arange(width)
    mask = rng.random((rows, width)) < rng.choice([0.8, 1.0])
    spec = "h200" if width == 32 else "mtt-s4000"
    r = coalesce(addresses, mask, access_bytes=size, spec=spec, count_partial=True)
    assert int(r.partial_sectors.sum()) == partial_brute_force(addresses, mask, size, group=width)
    merged = coalesce(addresses, mask, access_bytes=size, spec=spec, count_partial=True, partial_rows=rows)
    assert int(merged.partial_sectors.sum()) == partial_brute_force(addresses.reshape(1, -1), mask.reshape(1, -1),
                                                                    size, group=rows * width)
