"""The L2 model: capacity, writes that allocate without a fetch, DRAM atoms, an exact match with a plain LRU."""

from collections import OrderedDict

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from simulator import L2Cache
from simulator.specs import get_spec

KIB = 1024


def sectors_of(nbytes, base=0, sector=32):
    return np.arange(base // sector, (base + nbytes) // sector, dtype=np.int64)


def test_re_read_hits_when_the_working_set_fits():
    cache = L2Cache("h200", l2_bytes=256 * KIB)
    stream = sectors_of(128 * KIB)
    first = cache.access(stream)
    assert first.hits == 0 and first.dram_read_bytes == 128 * KIB
    second = cache.access(stream)
    assert second.misses == 0 and second.dram_read_bytes == 0
    assert second.hit_rate == 1.0


def test_re_read_goes_to_dram_when_the_working_set_does_not_fit():
    cache = L2Cache("h200", l2_bytes=256 * KIB)
    stream = sectors_of(1024 * KIB)  # 4x the cache, streamed twice: LRU keeps nothing useful
    cache.access(stream)
    second = cache.access(stream)
    assert second.hits == 0
    assert second.dram_read_bytes == 1024 * KIB


def test_the_reuse_capacity_of_the_spec_is_used_by_default():
    cache = L2Cache("mtt-s4000")
    assert cache.size_bytes == get_spec("mtt-s4000").l2_reuse_bytes < get_spec("mtt-s4000").l2_bytes
    assert cache.sets * cache.ways * cache.line_bytes == cache.size_bytes


def test_dram_atoms_fetch_the_neighbour_sector_on_h200():
    h200 = L2Cache("h200")  # 64-B DRAM atoms
    miss = h200.access(np.array([0]))
    assert miss.dram_read_bytes == 64
    neighbour = h200.access(np.array([1]))
    assert neighbour.hits == 1 and neighbour.dram_read_bytes == 0
    s5000 = L2Cache("mtt-s5000")  # 32-B atoms
    assert s5000.access(np.array([0])).dram_read_bytes == 32
    assert s5000.access(np.array([1])).misses == 1


def test_strided_sectors_cost_whole_atoms():
    # one sector every 64 B on H200: every access fetches a 64-B atom, half of it unused
    stats = L2Cache("h200").access(np.arange(0, 2000, 2))
    assert stats.dram_read_bytes == 1000 * 64


def test_writes_allocate_without_a_fetch():
    cache = L2Cache("h200")
    out = sectors_of(4 * KIB)
    store = cache.access(out, is_write=True)
    assert store.dram_read_bytes == 0 and store.misses == out.size  # no fetch on write
    again = cache.access(out, is_write=True)
    assert again.hits == out.size
    read = cache.access(out)  # written sectors are valid: read back from the L2
    assert read.hits == out.size and read.dram_read_bytes == 0


def test_groups_split_the_counts():
    cache = L2Cache("h200")
    stream = np.concatenate([sectors_of(1 * KIB), sectors_of(1 * KIB)])
    groups = np.repeat([7, 9], stream.size // 2)
    stats = cache.access(stream, groups=groups)
    assert stats.by_group[7] == (0, 32, 1024)
    assert stats.by_group[9] == (32, 0, 0)
    assert stats.hits + stats.misses == stream.size


def test_detail_gives_each_lookup_in_stream_order():
    cache = L2Cache("h200")
    stream = np.concatenate([sectors_of(256), sectors_of(256, base=4096), sectors_of(256)])
    detail = cache.access(stream, detail=True).detail
    assert detail.first.tolist() == [0, 4, 8, 12, 16, 20]  # 4 sectors per 128-B line, one lookup each
    assert detail.hits.tolist() == [0, 0, 0, 0, 4, 4] and detail.misses.tolist() == [4, 4, 4, 4, 0, 0]
    assert detail.read_bytes.tolist() == [128, 128, 128, 128, 0, 0]
    assert detail.atoms.tolist() == [2] * 6  # 64-B atoms on the H200


def test_every_access_is_counted_even_when_repeated():
    stats = L2Cache("mtt-s5000").access(np.array([5, 5, 5, 6, 5]))
    assert (stats.misses, stats.hits) == (2, 3)


def test_contents_persist_across_batches_and_reset_clears_them():
    cache = L2Cache("h200")
    cache.access(sectors_of(8 * KIB))
    assert cache.access(sectors_of(8 * KIB)).hit_rate == 1.0
    cache.reset()
    assert cache.access(sectors_of(8 * KIB)).hit_rate == 0.0


def reference(cache, sectors, writes):
    """A plain per-set OrderedDict LRU with the documented policies, one merged lookup at a time."""
    spl, atom = cache.sectors_per_line, cache.atom_sectors
    sets = [OrderedDict() for _ in range(cache.sets)]
    hits = misses = read = 0
    i = 0
    while i < len(sectors):
        line, w, mask = sectors[i] // spl, writes[i], 0
        previous = -1
        while i < len(sectors) and sectors[i] // spl == line and writes[i] == w and sectors[i] > previous:
            mask |= 1 << int(sectors[i] % spl)
            previous = sectors[i]
            i += 1
        lru = sets[int(cache._set_of(np.array([line]))[0])]
        if line in lru:
            lru.move_to_end(line)
        else:
            if len(lru) == cache.ways:
                lru.popitem(last=False)
            lru[line] = [0]
        entry = lru[line]
        valid = entry[0]
        hits += bin(mask & valid).count("1")
        missing = mask & ~valid
        misses += bin(missing).count("1")
        if w:
            entry[0] |= mask
        else:
            for a in range(0, spl, atom):
                block = ((1 << atom) - 1) << a
                if missing & block:
                    read += atom * cache.sector_bytes
                    entry[0] |= block
    return hits, misses, read


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 2**32 - 1), st.sampled_from(["h200", "mtt-s5000"]), st.sampled_from([1, 2, 4]))
def test_matches_a_plain_lru(seed, machine, ways):
    rng = np.random.default_rng(seed)
    cache = L2Cache(machine, l2_bytes=4 * KIB * ways, ways=ways)  # 32 sets
    n = 3000
    sectors = rng.integers(0, 2048, n)
    sectors[rng.random(n) < 0.3] //= 8  # some hot spots
    writes = rng.random(n) < 0.3
    expected = reference(cache, sectors, writes)
    got = cache.access(sectors, writes)
    assert (got.hits, got.misses, got.dram_read_bytes) == expected


@pytest.mark.parametrize("n", [200_000])
def test_throughput_smoke(n):
    """Not a benchmark: a large stream runs through without per-access Python work."""
    stats = L2Cache("h200").access(np.random.default_rng(0).integers(0, 1 << 26, n))
    assert stats.hits + stats.misses == n
