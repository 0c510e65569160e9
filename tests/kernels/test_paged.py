"""Paged KV cache writes and split-KV decode: against numpy, against prefill, and across split counts."""

import numpy as np
import pytest

import simulator
from jit import cdiv
from jit import launch as jit_launch
from kernels import paged
from kernels.attention import attention, default_config
from kernels.paged import (
    decode_blocks_visited,
    paged_decode,
    paged_decode_reference,
    random_paged_cache,
    reshape_and_cache,
    reshape_and_cache_reference,
)

# Profiled launches count every program when asked (the launcher's "sample" model option).
EXACT = {"sample": False} if "sample" in getattr(jit_launch, "MODEL_OPTIONS", ()) else {}


def randn(rng, *shape, dtype=np.float32):
    return (rng.standard_normal(shape) + 0.1).astype(dtype)


@pytest.mark.parametrize("page_size", [16, 48])
def test_reshape_and_cache_scatters_rows_and_skips_pad_slots(rng, page_size):
    tokens, kv_heads, dim = 37, 2, 64
    key, value = randn(rng, tokens, kv_heads, dim), randn(rng, tokens, kv_heads, dim)
    key_cache, value_cache = randn(rng, cdiv(tokens, page_size) + 3, page_size, kv_heads, dim), randn(rng,
        cdiv(tokens, page_size) + 3, page_size, kv_heads, dim)
    slots = rng.permutation(key_cache.shape[0] * page_size)[:tokens].astype(np.int64)
    slots[rng.choice(tokens, 5, replace=False)] = -1
    ref_k, ref_v = reshape_and_cache_reference(key, value, key_cache, value_cache, slots)
    reshape_and_cache(key, value, key_cache, value_cache, slots)
    np.testing.assert_array_equal(key_cache, ref_k)
    np.testing.assert_array_equal(value_cache, ref_v)


def test_reshape_and_cache_from_fused_projection_views_fp16(rng):
    """Qwen3.5 shapes: k and v are strided views of one [T, (2 Hkv) D] projection, written into the two halves
    of vLLM's [2, num_blocks, page, Hkv, D] cache."""
    tokens, kv_heads, dim, page = 45, 2, 256, 16
    kv = randn(rng, tokens, 2 * kv_heads * dim, dtype=np.float16)
    key = kv[:, :kv_heads * dim].reshape(tokens, kv_heads, dim)
    value = kv[:, kv_heads * dim:].reshape(tokens, kv_heads, dim)
    cache = randn(rng, 2, 5, page, kv_heads, dim, dtype=np.float16)
    slots = rng.permutation(5 * page)[:tokens].astype(np.int32)
    ref_k, ref_v = reshape_and_cache_reference(key, value, cache[0], cache[1], slots)
    reshape_and_cache(key, value, cache[0], cache[1], slots)
    np.testing.assert_array_equal(cache[0], ref_k)
    np.testing.assert_array_equal(cache[1], ref_v)


DECODE_MASKS = [dict(), dict(window=100, n_sink=4), dict(prefix=40, window=7)]


@pytest.mark.parametrize("mask", DECODE_MASKS, ids=["causal", "window+sinks", "prefix+window"])
@pytest.mark.parametrize("page_size", [16, 48, 1024])
def test_decode_mixed_lengths_matches_reference(rng, page_size, mask):
    seq_lens = np.array([1, 37, 300, 0, 129, 1000], dtype=np.int32)
    key_cache, value_cache, table = random_paged_cache(rng, seq_lens, page_size, 2, 64, np.float32)
    q, g = randn(rng, len(seq_lens), 8, 64), randn(rng, len(seq_lens), 8, 64)
    out, lse = paged_decode(q, key_cache, value_cache, table, seq_lens, g, return_lse=True, **mask)
    ref, ref_lse = paged_decode_reference(q, key_cache, value_cache, table, seq_lens, g, return_lse=True, **mask)
    np.testing.assert_allclose(out, ref, rtol=1e-4, atol=2e-5)
    np.testing.assert_allclose(lse, ref_lse, rtol=1e-5, atol=1e-5)
    assert (out[3] == 0).all() and np.isneginf(lse[3]).all()


@pytest.mark.parametrize("mask", DECODE_MASKS[:2], ids=["causal", "window+sinks"])
def test_split_count_does_not_change_the_result(rng, mask):
    seq_lens = np.array([700, 3, 257], dtype=np.int32)
    key_cache, value_cache, table = random_paged_cache(rng, seq_lens, 32, 2, 64, np.float32)
    q, g = randn(rng, 3, 8, 64), randn(rng, 3, 8, 64)
    results = [paged_decode(q, key_cache, value_cache, table, seq_lens, g, num_splits=s, return_lse=True, **mask)
               for s in (1, 2, 3, 7, 16, None)]
    for out, lse in results[1:]:
        np.testing.assert_allclose(out, results[0][0], rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(lse, results[0][1], rtol=1e-6, atol=1e-6)
    ref = paged_decode_reference(q, key_cache, value_cache, table, seq_lens, g, **mask)
    np.testing.assert_allclose(results[0][0], ref, rtol=1e-4, atol=2e-5)


def test_decode_work_scales_with_the_window(rng):
    """A window of W keys costs about W per sequence, whatever its length: the split kernel's counted dot FLOPs
    (simulator, exact) equal its loop-bound model, which covers the visible keys plus block rounding."""
    seq_lens = np.array([3000, 40, 1500], dtype=np.int32)
    key_cache, value_cache, table = random_paged_cache(rng, seq_lens, 64, 2, 64, np.float32)
    q, g = randn(rng, 3, 8, 64), randn(rng, 3, 8, 64)
    mask = dict(window=128, n_sink=4)
    block_n = paged.default_config(64).kwargs["BLOCK_N"]
    visited = decode_blocks_visited(seq_lens, block_n, **mask)
    visible = [min(n, 132) for n in seq_lens]
    assert all(v <= b * block_n <= v + 2 * block_n for v, b in zip(visible, visited))
    with simulator.profile() as prof:
        out = paged_decode(q, key_cache, value_cache, table, seq_lens, g, num_splits=4, launch=EXACT, **mask)
    if prof.launches:  # split kernel, then merge: per KV head (2), 2 dots of BLOCK_G (16) x BLOCK_N x D per block
        split = prof.launches[0]
        assert not split.sampled
        assert sum(split.counters["tensor_flops"].values()) == 2 * 4 * 16 * block_n * 64 * int(visited.sum())
    np.testing.assert_allclose(out, paged_decode_reference(q, key_cache, value_cache, table, seq_lens, g, **mask),
                               rtol=1e-4, atol=2e-5)


@pytest.mark.parametrize("mask", DECODE_MASKS, ids=["causal", "window+sinks", "prefix+window"])
def test_decode_equals_prefill_last_row(rng, mask):
    """Prefill each sequence, write its K/V through reshape_and_cache into shuffled pages, decode its last
    query from the cache: same output and LSE as the prefill's last row."""
    lengths, heads, kv_heads, dim, page = [1, 50, 203], 8, 2, 64, 16
    seq_lens = np.array(lengths, dtype=np.int32)
    key_cache, value_cache, table = random_paged_cache(rng, seq_lens, page, kv_heads, dim, np.float32)
    q_last, g_last, want, want_lse = [], [], [], []
    for b, length in enumerate(lengths):
        q, g = randn(rng, 1, length, heads, dim), randn(rng, 1, length, heads, dim)
        k, v = randn(rng, 1, length, kv_heads, dim), randn(rng, 1, length, kv_heads, dim)
        visited = np.zeros(heads * cdiv(length, default_config(dim).kwargs["BLOCK_M"]), np.int32)
        out, lse = attention(q, k, v, g, return_lse=True, visited=visited, **mask)
        pos = np.arange(length)
        slots = (table[b, pos // page] * page + pos % page).astype(np.int32)
        reshape_and_cache(k[0], v[0], key_cache, value_cache, slots)
        q_last.append(q[0, -1]), g_last.append(g[0, -1]), want.append(out[0, -1]), want_lse.append(lse[0, :, -1])
    out, lse = paged_decode(np.stack(q_last), key_cache, value_cache, table, seq_lens, np.stack(g_last),
                            return_lse=True, num_splits=3, **mask)
    np.testing.assert_allclose(out, np.stack(want), rtol=1e-5, atol=2e-6)
    np.testing.assert_allclose(lse, np.stack(want_lse), rtol=1e-6, atol=2e-6)


def test_qwen_fp16_decode_equals_prefill_last_row(rng):
    """Qwen3.5 shapes (16/2 heads, D=256, fp16, window + sinks + gate): the two paths agree to fp16 rounding."""
    length, page = 77, 32
    seq_lens = np.array([length], dtype=np.int32)
    key_cache, value_cache, table = random_paged_cache(rng, seq_lens, page, 2, 256, np.float16)
    q, g = randn(rng, 1, length, 16, 256, dtype=np.float16), randn(rng, 1, length, 16, 256, dtype=np.float16)
    k, v = randn(rng, 1, length, 2, 256, dtype=np.float16), randn(rng, 1, length, 2, 256, dtype=np.float16)
    mask = dict(window=40, n_sink=4)
    want, want_lse = attention(q, k, v, g, return_lse=True, **mask)
    pos = np.arange(length)
    reshape_and_cache(k[0], v[0], key_cache, value_cache, (table[0, pos // page] * page + pos % page).astype(np.int32))
    out, lse = paged_decode(q[:, -1], key_cache, value_cache, table, seq_lens, g[:, -1], return_lse=True, **mask)
    np.testing.assert_allclose(out.astype(np.float32), want[:, -1].astype(np.float32), rtol=5e-3, atol=2e-3)
    np.testing.assert_allclose(lse, want_lse[:, :, -1], rtol=1e-5, atol=1e-5)


def test_qwen_decode_fp16_head_dim_256(rng):
    seq_lens = np.array([5, 600, 1000], dtype=np.int32)
    key_cache, value_cache, table = random_paged_cache(rng, seq_lens, 64, 2, 256, np.float16)
    q, g = randn(rng, 3, 16, 256, dtype=np.float16), randn(rng, 3, 16, 256, dtype=np.float16)
    out, lse = paged_decode(q, key_cache, value_cache, table, seq_lens, g, window=512, n_sink=4, return_lse=True)
    assert out.dtype == np.float16
    ref, ref_lse = paged_decode_reference(q, key_cache, value_cache, table, seq_lens, g, window=512, n_sink=4,
                                          return_lse=True)
    np.testing.assert_allclose(out.astype(np.float64), ref, rtol=1e-2, atol=3e-3)
    np.testing.assert_allclose(lse, ref_lse, rtol=1e-4, atol=1e-4)


def test_autotuned_entry_points(rng, monkeypatch):
    """config="auto" goes through jit.autotune (pinned to the default configs: a real sweep is too slow here)."""
    for tuner, config in ((paged.paged_decode_split_tuned, paged.default_config(64)),
                          (paged.reshape_and_cache_tuned, paged.CACHE_AUTOTUNE_CONFIGS[0])):
        monkeypatch.setattr(tuner, "configs", [config])
        monkeypatch.setattr(tuner, "cache", {})
    seq_lens = np.array([90, 17], dtype=np.int32)
    key_cache, value_cache, table = random_paged_cache(rng, seq_lens, 16, 2, 64, np.float32)
    key, value = randn(rng, 7, 2, 64), randn(rng, 7, 2, 64)
    slots = rng.permutation(key_cache.shape[0] * 16)[:7].astype(np.int32)
    ref_k, ref_v = reshape_and_cache_reference(key, value, key_cache, value_cache, slots)
    reshape_and_cache(key, value, key_cache, value_cache, slots, config="auto")
    np.testing.assert_array_equal(key_cache, ref_k)
    np.testing.assert_array_equal(value_cache, ref_v)
    q, g = randn(rng, 2, 8, 64), randn(rng, 2, 8, 64)
    out = paged_decode(q, key_cache, value_cache, table, seq_lens, g, config="auto")
    ref = paged_decode_reference(q, key_cache, value_cache, table, seq_lens, g)
    np.testing.assert_allclose(out, ref, rtol=1e-4, atol=2e-5)


def test_rejects_bad_inputs(rng):
    seq_lens = np.array([20, 5], dtype=np.int32)
    kc, vc, table = random_paged_cache(rng, seq_lens, 16, 2, 64, np.float32)
    q = randn(rng, 2, 8, 64)
    with pytest.raises(ValueError, match="block_table"):
        paged_decode(q, kc, vc, table.astype(np.int64), seq_lens)
    with pytest.raises(ValueError, match="seq_lens"):
        paged_decode(q, kc, vc, table, np.array([20, 500], np.int32))
    with pytest.raises(ValueError, match="cache dtype"):
        paged_decode(q.astype(np.float16), kc, vc, table, seq_lens)
    with pytest.raises(ValueError, match="does not fit"):
        paged_decode(randn(rng, 2, 7, 64), kc, vc, table, seq_lens)
    with pytest.raises(ValueError, match="num_splits"):
        paged_decode(q, kc, vc, table, seq_lens, num_splits=-1)
    with pytest.raises(ValueError, match="config"):
        paged_decode(q, kc, vc, table, seq_lens, config={"BLOCK_N": 64})
    with pytest.raises(ValueError, match="C-contiguous"):
        paged_decode(q, kc[:, ::2], vc[:, ::2], table, seq_lens)
    with pytest.raises(ValueError, match="slot_mapping"):
        reshape_and_cache(randn(rng, 3, 2, 64), randn(rng, 3, 2, 64), kc, vc, np.array([0, 1, 10_000], np.int32))
    with pytest.raises(ValueError, match="slot_mapping"):
        reshape_and_cache(randn(rng, 3, 2, 64), randn(rng, 3, 2, 64), kc, vc, np.array([0, 1], np.int32))
    with pytest.raises(ValueError, match="cache rows"):
        reshape_and_cache(randn(rng, 3, 4, 64), randn(rng, 3, 4, 64), kc, vc, np.array([0, 1, 2], np.int32))
    with pytest.raises(ValueError, match="dtype"):
        reshape_and_cache(randn(rng, 3, 2, 64, dtype=np.float16), randn(rng, 3, 2, 64, dtype=np.float16), kc, vc,
                          np.array([0, 1, 2], np.int32))
