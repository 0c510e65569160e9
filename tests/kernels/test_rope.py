"""kernels.rope against its float64 reference: both pairings, partial rotary, table and in-kernel cos/sin,
interleaved mRoPE (and its reduction to plain RoPE for text), in-place use, tuning, the LRU table cache.

Tests pin AUTOTUNE_CONFIGS entries (tuning would compile every config); together they cover every config.
"""

import numpy as np
import pytest

from kernels import rope as rope_module
from kernels._common import BF16, tolerance
from kernels.rope import (
    QWEN35_MROPE_SECTION,
    RopeTableCache,
    rope,
    rope_cos_sin_table,
    rope_reference,
)

CONFIGS = rope_module.AUTOTUNE_CONFIGS


def rand(rng, shape, dtype):
    return (rng.standard_normal(shape) + 0.1).astype(dtype)


def assert_close(got, ref):
    assert got.dtype == ref.dtype and got.shape == ref.shape
    rtol, atol = tolerance(got.dtype)
    np.testing.assert_allclose(got.astype(np.float64), ref.astype(np.float64), rtol=rtol, atol=atol)


def test_in_kernel_cos_sin_at_long_context_positions(rng):
    # Qwen3.5 head: D 256, 64 rotary dims, theta 1e7; positions across the whole 262144 context and beyond
    x = rand(rng, (6, 16, 256), np.float32)
    positions = np.array([0, 1, 4097, 131071, 262143, 2**30 + 12345])
    got = rope(x, positions, 64)
    assert_close(got, rope_reference(x, positions, 64))
    np.testing.assert_array_equal(got[:, :, 64:], x[:, :, 64:])  # pass-through dims are copied exactly
    np.testing.assert_array_equal(got[0], x[0])  # position 0 is the identity


def test_rotary_dims_whose_frequency_step_is_not_a_power_of_two(rng):
    # 2 / 48 is not exact in fp32: formed as an fp32 constant it shifted angles by ~5e-4 rad at position 5e4
    x = rand(rng, (4, 2, 80), np.float32)
    positions = np.array([43516, 48114, 49550, 262143])
    for neox in (True, False):
        assert_close(rope(x, positions, 48, neox=neox, theta=1e4), rope_reference(x, positions, 48, neox=neox,
                                                                                    theta=1e4))


@pytest.mark.parametrize("dtype, neox, head_dim, rot, heads, config", [
    (np.float16, False, 80, 48, 3, 1),  # GPT-J pairing, D not a power of two
    (BF16, True, 64, 64, 5, 2),  # full rotary, heads not a multiple of BLOCK_H
])
def test_styles_dtypes_and_masked_tails(rng, dtype, neox, head_dim, rot, heads, config):
    x = rand(rng, (7, heads, head_dim), dtype)
    positions = rng.integers(0, 50000, 7)
    got = rope(x, positions, rot, neox=neox, theta=1e4, config=CONFIGS[config])
    assert_close(got, rope_reference(x, positions, rot, neox=neox, theta=1e4))


def test_table_matches_in_kernel_generation_and_reference(rng):
    x = rand(rng, (5, 16, 256), np.float32)
    cache = RopeTableCache(64)
    positions = rng.integers(0, 3000, 5)
    table = cache.table(int(positions.max()) + 1)
    got = rope(x, positions, 64, cos_sin_cache=table)
    assert_close(got, rope_reference(x, positions, 64, cos_sin_cache=table))
    assert_close(got, rope_reference(x, positions, 64))  # the table holds correctly rounded cos/sin
    assert_close(got, rope(x, positions, 64))


def test_inplace_touches_only_rotary_dims(rng):
    x = rand(rng, (5, 16, 256), np.float32)
    positions = rng.integers(0, 1000, 5)
    table = rope_cos_sin_table(1000, 64)
    expected = rope_reference(x, positions, 64, cos_sin_cache=table)
    y = x.copy()
    assert rope(y, positions, 64, cos_sin_cache=table, inplace=True, config=CONFIGS[3]) is y
    assert_close(y, expected)
    np.testing.assert_array_equal(y[:, :, 64:], x[:, :, 64:])


def test_mrope_reduces_to_plain_rope_for_text(rng):
    x = rand(rng, (6, 16, 256), np.float32)
    positions = rng.integers(0, 200000, 6)
    text = np.stack([positions] * 3)
    plain = rope(x, positions, 64)
    np.testing.assert_array_equal(rope(x, text, 64, mrope_section=QWEN35_MROPE_SECTION), plain)


def test_mrope_vision_positions(rng):
    x = rand(rng, (6, 16, 256), np.float32)
    thw = np.stack([rng.integers(0, 5, 6), rng.integers(0, 40, 6), rng.integers(0, 40, 6)])
    got = rope(x, thw, 64, mrope_section=QWEN35_MROPE_SECTION)
    assert_close(got, rope_reference(x, thw, 64, mrope_section=QWEN35_MROPE_SECTION))
    # the sections matter: t-only positions give a different result
    assert not np.allclose(got, rope(x, thw[0], 64))


def test_tuned_inplace_rotates_once(rng, monkeypatch):
    # the autotuner launches every config; in place, x must be restored between trials so it is rotated once
    tuned = rope_module.rope_kernel_tuned
    monkeypatch.setattr(tuned, "configs", tuned.configs[:2])
    monkeypatch.setattr(tuned, "cache", {})
    monkeypatch.setenv("WAVETILE_AUTOTUNE_CACHE", "0")
    x = rand(rng, (3, 2, 16), np.float32)
    positions = rng.integers(0, 100, 3)
    y = x.copy()
    rope(y, positions, 8, inplace=True, tune=True)
    assert_close(y, rope_reference(x, positions, 8))
    assert len(tuned.records) == 2 and all(r.ok for r in tuned.records)


def test_tuned_wrappers_search_the_declared_configs():
    from kernels import norm, qkv

    for tuned, configs in ((rope_module.rope_kernel_tuned, rope_module.AUTOTUNE_CONFIGS),
                           (qkv.qkv_prologue_kernel_tuned, qkv.AUTOTUNE_CONFIGS),
                           (norm.rmsnorm_kernel_tuned, norm.AUTOTUNE_CONFIGS),
                           (norm.gated_rmsnorm_kernel_tuned, norm.GATED_AUTOTUNE_CONFIGS),
                           (norm.layernorm_kernel_tuned, norm.LAYERNORM_AUTOTUNE_CONFIGS)):
        assert [{**c.kwargs, "num_warps": c.num_warps} for c in tuned.configs] == configs


def test_table_cos_sin_values():
    table = rope_cos_sin_table(300, 64, theta=1e7, start=262000)
    i = np.arange(32)
    angle = np.arange(262000, 262300)[:, None] * 1e7 ** (-2.0 * i / 64)
    np.testing.assert_allclose(table[:, :32], np.cos(angle), rtol=0, atol=1e-7)
    np.testing.assert_allclose(table[:, 32:], np.sin(angle), rtol=0, atol=1e-7)


def test_table_cache_lru():
    cache = RopeTableCache(64, capacity=2, granularity=16)
    a = cache.table(10)
    assert a.shape == (16, 64) and not a.flags.writeable
    assert cache.table(16) is a and cache.table(3) is a  # served by the cached 16-row table
    b = cache.table(40)  # 48 rows
    assert b.shape == (48, 64) and cache.lengths == [16, 48]
    assert cache.table(12) is a and cache.lengths == [48, 16]  # a is most recent again
    cache.table(100)  # evicts the least recently used (48 rows)
    assert cache.lengths == [16, 112] and (cache.hits, cache.misses) == (3, 3)
    assert cache.table(20).shape == (112, 64)  # longer table serves a shorter request
    np.testing.assert_array_equal(cache.table(1), rope_cos_sin_table(16, 64))
    assert len(RopeTableCache(64).lengths) == 0 and RopeTableCache(64).capacity == 8


def test_rejects_bad_arguments(rng):
    x = rand(rng, (4, 2, 64), np.float32)
    pos = np.arange(4)
    with pytest.raises(ValueError, match="rotary_dim"):
        rope(x, pos, 63)
    with pytest.raises(ValueError, match="positions"):
        rope(x, pos[:3], 64)
    with pytest.raises(ValueError, match="positions"):
        rope(x, pos.astype(np.float32), 64)
    with pytest.raises(ValueError, match="3 dimensions"):
        rope(x[0], pos, 64)
    with pytest.raises(ValueError, match="mrope_section"):
        rope(x, np.stack([pos] * 3), 64, mrope_section=(11, 11, 11))
    with pytest.raises(ValueError, match="positions"):
        rope(x, pos, 64, mrope_section=(11, 11, 10))
    with pytest.raises(ValueError, match="cos_sin_cache"):
        rope(x, pos, 64, cos_sin_cache=rope_cos_sin_table(3, 64))  # position 3 is past the table
    with pytest.raises(ValueError, match="cos_sin_cache"):
        rope(x, pos, 64, cos_sin_cache=rope_cos_sin_table(8, 32))
    with pytest.raises(ValueError, match="theta"):
        rope(x, pos, 64, theta=1e7 + 0.3)
    with pytest.raises(ValueError, match="config or tune"):
        rope(x, pos, 64, config=CONFIGS[0], tune=True)
    with pytest.raises(ValueError, match="inplace"):
        rope(x[:, :, ::2], pos, 32, inplace=True)
    with pytest.raises(ValueError, match="capacity"):
        RopeTableCache(64, capacity=0)
