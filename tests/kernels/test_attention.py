"""Hybrid attention prefill against a dense masked float64 reference, and its block skipping.

Compile budget: one fp32 D=64 specialisation (gate, LSE and block counter on) carries the mask
combinations and the FLOP-scaling test; one fp16 D=256 and one bf16 D=128 cover Qwen3.5 shapes.
"""

import numpy as np
import pytest
from ml_dtypes import bfloat16

import simulator
from jit import cdiv
from jit import launch as jit_launch
from kernels.attention import (
    attention,
    attention_fwd_tuned,
    attention_mask,
    attention_reference,
    default_config,
    kv_blocks_visited,
)


def randn(rng, *shape, dtype=np.float32):
    return (rng.standard_normal(shape) + 0.1).astype(dtype)


def run_counted(q, k, v, g, launch=None, **mask):
    """Attention with the per-program visited-block counter; returns (out, lse, visited[B, H, q-blocks])."""
    batch, seq_q, heads, dim = q.shape
    cfg = default_config(dim).kwargs
    visited = np.full(batch * heads * cdiv(seq_q, cfg["BLOCK_M"]), -1, dtype=np.int32)
    out, lse = attention(q, k, v, g, return_lse=True, visited=visited, launch=launch, **mask)
    return out, lse, visited.reshape(batch, heads, -1)


def blocks_with_visible_keys(seq_q, seq_k, block_m, block_n, **mask):
    """Per query block, how many key blocks hold at least one visible (query, key) pair of the dense mask."""
    m = attention_mask(seq_q, seq_k, **mask)
    counts = []
    for i in range(0, seq_q, block_m):
        rows = m[i:i + block_m].any(axis=0)
        counts.append(sum(rows[j:j + block_n].any() for j in range(0, seq_k, block_n)))
    return np.array(counts)


MASKS = [
    dict(),
    dict(window=16),
    dict(window=1),
    dict(window=13, n_sink=4),
    dict(prefix=20),
    dict(prefix=70, window=9, n_sink=3),
    dict(causal=False, window=24),
    dict(causal=False),
]


@pytest.mark.parametrize("mask", MASKS, ids=lambda m: ",".join(f"{k}={v}" for k, v in m.items()) or "causal")
@pytest.mark.parametrize("seq_q,seq_k", [(77, 77), (150, 150), (45, 131)])
def test_masks_match_dense_reference(rng, mask, seq_q, seq_k):
    q, g = randn(rng, 2, seq_q, 4, 64), randn(rng, 2, seq_q, 4, 64)
    k, v = randn(rng, 2, seq_k, 2, 64), randn(rng, 2, seq_k, 2, 64)
    out, lse, visited = run_counted(q, k, v, g, **mask)
    ref, ref_lse = attention_reference(q, k, v, g, return_lse=True, **mask)
    np.testing.assert_allclose(out, ref, rtol=1e-4, atol=2e-5)
    np.testing.assert_allclose(lse, ref_lse, rtol=1e-5, atol=1e-5)
    # Skipping is exact: a program computes precisely the key blocks holding a visible pair.
    cfg = default_config(64).kwargs
    expected = blocks_with_visible_keys(seq_q, seq_k, cfg["BLOCK_M"], cfg["BLOCK_N"], **mask)
    assert (visited == expected[None, None, :]).all()
    np.testing.assert_array_equal(kv_blocks_visited(seq_q, seq_k, cfg["BLOCK_M"], cfg["BLOCK_N"], **mask), expected)


def test_qwen_interleaved_gate_views_and_scale(rng):
    """Qwen3.5 projects q|gate interleaved per head; both halves go in as strided views, no copies."""
    qg = randn(rng, 1, 90, 4, 128)
    q, g = qg[..., :64], qg[..., 64:]
    k, v = randn(rng, 1, 90, 2, 64), randn(rng, 1, 90, 2, 64)
    out, lse, _ = run_counted(q, k, v, g, window=30, n_sink=2, scale=0.3)
    ref, ref_lse = attention_reference(q, k, v, g, return_lse=True, window=30, n_sink=2, scale=0.3)
    np.testing.assert_allclose(out, ref, rtol=1e-4, atol=2e-5)
    np.testing.assert_allclose(lse, ref_lse, rtol=1e-5, atol=1e-5)


def dot_flops_of(prof) -> int | None:
    """tl.dot FLOPs of the last launch as the simulator counted them (None when launches are not recorded)."""
    if not getattr(prof, "launches", None):
        return None
    assert not prof.launches[-1].sampled
    return int(sum(prof.launches[-1].counters.get("tensor_flops", {}).values()))


# Profiled launches count every program when asked (the launcher's "sample" model option).
EXACT = {"sample": False} if "sample" in getattr(jit_launch, "MODEL_OPTIONS", ()) else {}


def test_window_work_scales_with_visible_area(rng):
    seq, window, dim = 2048, 64, 64
    cfg = default_config(dim).kwargs
    q, g, k, v = (randn(rng, 1, seq, 1, dim) for _ in range(4))
    with simulator.profile() as prof:
        out, _, visited = run_counted(q, k, v, g, launch=EXACT, window=window)
    block_area = cfg["BLOCK_M"] * cfg["BLOCK_N"]
    computed = int(visited.sum()) * block_area  # (query, key) pairs whose scores the kernel computed
    assert seq * window <= computed <= seq * (window + cfg["BLOCK_M"] + cfg["BLOCK_N"])
    assert computed < 0.25 * seq * seq / 2
    flops = dot_flops_of(prof)
    if flops is not None:  # two dots per visited block, BLOCK_M x BLOCK_N x D each
        assert flops == 4 * computed * dim
    # Without the window the same loop bounds cover the causal triangle, about S^2 / 2 (the bounds model is
    # checked against the kernel's counter in test_masks_match_dense_reference).
    causal = int(kv_blocks_visited(seq, seq, cfg["BLOCK_M"], cfg["BLOCK_N"]).sum()) * block_area
    assert seq * seq / 2 <= causal <= seq * (seq / 2 + cfg["BLOCK_N"])
    # Spot-check the windowed result on the last 100 rows (the dense reference of 2048^2 is slow).
    ref = attention_reference(q[:, -100:], k, v, g[:, -100:], window=window)
    np.testing.assert_allclose(out[:, -100:], ref, rtol=1e-4, atol=2e-5)


def test_qwen_shape_fp16_head_dim_256(rng):
    """16 query / 2 KV heads, D=256, fp16 in and out, window + sinks + gate; odd token count."""
    q, g = randn(rng, 1, 100, 16, 256, dtype=np.float16), randn(rng, 1, 100, 16, 256, dtype=np.float16)
    k, v = randn(rng, 1, 100, 2, 256, dtype=np.float16), randn(rng, 1, 100, 2, 256, dtype=np.float16)
    out, lse = attention(q, k, v, g, window=40, n_sink=4, return_lse=True)
    assert out.dtype == np.float16 and lse.dtype == np.float32
    ref, ref_lse = attention_reference(q, k, v, g, window=40, n_sink=4, return_lse=True)
    np.testing.assert_allclose(out.astype(np.float64), ref, rtol=1e-2, atol=4e-3)
    np.testing.assert_allclose(lse, ref_lse, rtol=1e-4, atol=1e-4)


def test_bf16_head_dim_128_unbatched_no_gate(rng):
    q = randn(rng, 67, 4, 128).astype(bfloat16)
    k, v = randn(rng, 67, 1, 128).astype(bfloat16), randn(rng, 67, 1, 128).astype(bfloat16)
    out = attention(q, k, v, prefix=25)
    assert out.shape == (67, 4, 128) and out.dtype == bfloat16
    ref = attention_reference(q, k, v, prefix=25)
    np.testing.assert_allclose(out.astype(np.float64), ref, rtol=2e-2, atol=1.5e-2)


def test_autotuned_entry_point(rng, monkeypatch):
    """config="auto" launches through jit.autotune (pinned to the default config here: a real sweep compiles
    every config, too slow for a unit test)."""
    monkeypatch.setattr(attention_fwd_tuned, "configs", [default_config(64)])
    monkeypatch.setattr(attention_fwd_tuned, "cache", {})
    q, g, k, v = randn(rng, 1, 70, 4, 64), randn(rng, 1, 70, 4, 64), randn(rng, 1, 70, 2, 64), randn(rng, 1, 70, 2, 64)
    out = attention(q, k, v, g, window=20, config="auto")
    np.testing.assert_allclose(out, attention_reference(q, k, v, g, window=20), rtol=1e-4, atol=2e-5)
    assert attention_fwd_tuned.best_config == default_config(64)


def test_rejects_bad_inputs(rng):
    q, k = randn(rng, 1, 8, 4, 64), randn(rng, 1, 8, 2, 64)
    with pytest.raises(ValueError, match="dtype"):
        attention(q, k.astype(np.float16), k.astype(np.float16))
    with pytest.raises(ValueError, match="multiple of KV heads"):
        attention(q, randn(rng, 1, 8, 3, 64), randn(rng, 1, 8, 3, 64))
    with pytest.raises(ValueError, match="more queries"):
        attention(randn(rng, 1, 9, 4, 64), k, k)
    with pytest.raises(ValueError, match="window"):
        attention(q, k, k, window=0)
    with pytest.raises(ValueError, match="n_sink"):
        attention(q, k, k, prefix=-1)
    with pytest.raises(ValueError, match="contiguous"):
        attention(randn(rng, 1, 8, 4, 128)[..., ::2], k, k)
    with pytest.raises(ValueError, match="gate shape"):
        attention(q, k, k, randn(rng, 1, 8, 4, 32))
    with pytest.raises(ValueError, match="dtype"):
        attention(q.astype(np.int32), k.astype(np.int32), k.astype(np.int32))
    with pytest.raises(ValueError, match="4-D"):
        attention(randn(rng, 8, 64), k, k)
    with pytest.raises(ValueError, match="visited"):
        attention(q, k, k, visited=np.zeros(3, np.int64))
    with pytest.raises(ValueError, match="visited"):
        attention(q, k, k, visited=np.zeros(4, np.int32), config="auto")
    with pytest.raises(ValueError, match="config"):
        attention(q, k, k, config={"BLOCK_M": 64})


def test_out_writes_into_rows_of_a_packed_batch():
    rng = np.random.default_rng(4)
    q = rng.standard_normal((1, 10, 4, 32)).astype(np.float32)
    k = rng.standard_normal((1, 10, 2, 32)).astype(np.float32)
    v = rng.standard_normal((1, 10, 2, 32)).astype(np.float32)
    packed = np.full((25, 4, 32), 7.0, np.float32)
    got = attention(q, k, v, out=packed[None, 5:15])
    assert got.base is not None and np.shares_memory(got, packed)
    np.testing.assert_array_equal(packed[5:15], attention(q, k, v)[0])
    assert (packed[:5] == 7).all() and (packed[15:] == 7).all()
    with pytest.raises(ValueError, match="out must be"):
        attention(q, k, v, out=packed[None, :9])
