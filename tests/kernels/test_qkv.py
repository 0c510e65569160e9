"""kernels.qkv (the fused gated-attention prologue) against the composition of the float64 norm and RoPE
references, including the paged KV cache writes at slot_mapping (skipped slots, untouched slots).

Tests pin AUTOTUNE_CONFIGS entries (tuning would compile every config); together they cover every config.
"""

import numpy as np
import pytest

from kernels import qkv as qkv_module
from kernels._common import BF16, tolerance
from kernels.qkv import qkv_prologue, qkv_prologue_reference
from kernels.rope import rope_cos_sin_table

CONFIGS = qkv_module.AUTOTUNE_CONFIGS


def rand(rng, shape, dtype, scale=1.0, offset=0.1):
    return (rng.standard_normal(shape) * scale + offset).astype(dtype)


def assert_close(got, ref):
    assert got.dtype == ref.dtype and got.shape == ref.shape
    rtol, atol = tolerance(got.dtype)
    np.testing.assert_allclose(got.astype(np.float64), ref.astype(np.float64), rtol=rtol, atol=atol)


def make_problem(rng, tokens, n_q, n_kv, head_dim, dtype, num_blocks=4, block_size=16):
    qkv = rand(rng, (tokens, (2 * n_q + 2 * n_kv) * head_dim), dtype, scale=2.0)
    qw = rand(rng, (head_dim,), np.float32, scale=0.2, offset=0.0)
    kw = rand(rng, (head_dim,), np.float32, scale=0.2, offset=0.0)
    cache = rand(rng, (2, num_blocks, block_size, n_kv, head_dim), dtype)
    slots = rng.permutation(num_blocks * block_size)[:tokens].astype(np.int32)
    slots[1::4] = -1  # padding tokens: no cache write
    return qkv, qw, kw, cache, slots


def check(qkv, qw, kw, cache, slots, positions, **kw_args):
    """Run the kernel on a copy of the cache and compare q, gate and the whole cache with the reference."""
    got_cache = cache.copy()
    q, gate = qkv_prologue(qkv, qw, kw, positions, got_cache, slots, **kw_args)
    kw_args.pop("config", None)
    ref_q, ref_gate, ref_cache = qkv_prologue_reference(qkv, qw, kw, positions, cache, slots, **kw_args)
    assert_close(q, ref_q)
    np.testing.assert_array_equal(gate, ref_gate)
    written = np.zeros(cache.shape[1] * cache.shape[2], bool)
    written[slots[slots >= 0]] = True
    flat_got = got_cache.reshape(2, -1, *cache.shape[3:])
    flat_ref = ref_cache.reshape(2, -1, *cache.shape[3:])
    np.testing.assert_array_equal(flat_got[:, ~written], cache.reshape(flat_got.shape)[:, ~written])  # untouched
    np.testing.assert_array_equal(flat_got[1], flat_ref[1])  # v copied exactly
    assert_close(flat_got[0], flat_ref[0])
    return q, got_cache


def test_qwen35_shapes_bf16_in_kernel_rope(rng):
    qkv, qw, kw, cache, slots = make_problem(rng, 9, 16, 2, 256, BF16)
    positions = rng.integers(0, 262144, 9)
    check(qkv, qw, kw, cache, slots, positions, rotary_dim=64)


def test_qwen35_shapes_fp32_table_matches_unfused_ops(rng):
    from kernels import norm, rope

    qkv, qw, kw, cache, slots = make_problem(rng, 9, 16, 2, 256, np.float32)
    positions = rng.integers(0, 4096, 9)
    table = rope_cos_sin_table(4096, 64)
    # 4 heads per program: the last block holds the 2 KV heads and 2 masked rows
    q, _ = check(qkv, qw, kw, cache, slots, positions, rotary_dim=64, cos_sin_cache=table, config=CONFIGS[2])
    # the one-launch prologue equals the separate norm and RoPE kernels
    q_heads = qkv[:, : 2 * 16 * 256].reshape(9, 16, 2, 256)[:, :, 0]
    unfused = rope.rope(norm.rmsnorm(q_heads, qw, zero_centered=True), positions, 64, cos_sin_cache=table)
    np.testing.assert_allclose(q, unfused, rtol=1e-5, atol=1e-6)


def test_gptj_mrope_odd_shapes_fp16(rng):
    # D not a power of two, 6 query heads over 3 KV heads, mRoPE with (t, h, w) positions, one head per program
    qkv, qw, kw, cache, slots = make_problem(rng, 7, 6, 3, 80, np.float16, num_blocks=3, block_size=4)
    thw = np.stack([rng.integers(0, 9, 7), rng.integers(0, 30, 7), rng.integers(0, 30, 7)])
    check(qkv, qw, kw, cache, slots, thw, rotary_dim=32, neox=False, theta=1e4, mrope_section=(6, 5, 5),
          config=CONFIGS[1])


def test_rejects_bad_arguments(rng):
    qkv, qw, kw, cache, slots = make_problem(rng, 4, 4, 2, 64, np.float32)
    pos = np.arange(4)
    with pytest.raises(ValueError, match="kv_cache"):
        qkv_prologue(qkv, qw, kw, pos, cache.astype(np.float16), slots)
    with pytest.raises(ValueError, match="kv_cache"):
        qkv_prologue(qkv, qw, kw, pos, cache[0], slots)
    with pytest.raises(ValueError, match="kv_cache"):
        qkv_prologue(qkv, qw, kw, pos, cache[:, :, ::2], slots)
    with pytest.raises(ValueError, match="width"):
        qkv_prologue(qkv[:, :-64], qw, kw, pos, cache, slots)
    with pytest.raises(ValueError, match="k_norm_weight"):
        qkv_prologue(qkv, qw, kw[:32], pos, cache, slots)
    with pytest.raises(ValueError, match="slot_mapping"):
        qkv_prologue(qkv, qw, kw, pos, cache, slots + 1000)
    with pytest.raises(ValueError, match="slot_mapping"):
        qkv_prologue(qkv, qw, kw, pos, cache, slots[:3])
    with pytest.raises(ValueError, match="positions"):
        qkv_prologue(qkv, qw, kw, pos[:2], cache, slots)
    with pytest.raises(ValueError, match="multiple of KV heads"):
        qkv_prologue(qkv[:, : (2 * 3 + 2 * 2) * 64], qw, kw, pos, cache, slots)
