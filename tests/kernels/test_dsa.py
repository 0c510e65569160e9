"""DSA: indexer scores, device top-k (order, ties, prefix, k = 2048), and sparse attention equal to dense attention
restricted to the selected indices, for token and 64-token-block selection, prefill and decode.

Shapes are small and shared between tests so that each kernel specialisation compiles once per session.
"""

import numpy as np
import pytest

from kernels import dsa

T, S, H, HKV, D, HI, DI = 70, 83, 4, 2, 32, 8, 32  # 70 queries at the end of 83 keys: tails in every block
PREFIX, K = 5, 16


@pytest.fixture(scope="module")
def prefill(module_rng):
    a = dsa.make_inputs(module_rng, T, S, H, HKV, D, HI, DI, np.float32)
    a["out"], a["idx"] = dsa.dsa_prefill(a["q"], a["k"], a["v"], a["q_index"], a["weights"], a["k_index"], K,
                                         prefix_len=PREFIX)
    return a


def test_indexer_matches_reference(prefill):
    a = prefill
    got = dsa.lightning_indexer(a["q_index"], a["weights"], a["k_index"], prefix_len=PREFIX)
    ref = dsa.lightning_indexer_reference(a["q_index"], a["weights"], a["k_index"], prefix_len=PREFIX)
    assert np.array_equal(np.isneginf(got), np.isneginf(ref))  # causal mask + bidirectional prefix
    finite = np.isfinite(ref)
    np.testing.assert_allclose(got[finite], ref[finite], rtol=1e-5, atol=1e-5)


def test_topk_order_prefix_and_counts(prefill):
    a = prefill
    scores = dsa.lightning_indexer(a["q_index"], a["weights"], a["k_index"], prefix_len=PREFIX)
    idx, counts = dsa.dsa_topk(scores, K, prefix_len=PREFIX)
    assert np.array_equal(idx, dsa.dsa_topk_reference(scores, K, prefix_len=PREFIX))
    positions = np.arange(S - T, S)
    assert np.array_equal(counts, np.minimum(np.maximum(positions + 1, PREFIX), K))
    assert (idx[:, :PREFIX] == np.arange(PREFIX)).all()  # the multimodal prefix is always selected, first
    assert np.array_equal(a["idx"], idx)  # dsa_prefill selected the same tokens on the device


def test_topk_ties_go_to_the_lower_index(rng):
    scores = rng.integers(0, 4, (5, 40)).astype(np.float32)  # many exact ties
    scores[:, 30:] = -np.inf
    idx, counts = dsa.dsa_topk(scores, K)  # rows at positions 35..39, only the first 30 columns finite
    assert np.array_equal(idx, dsa.dsa_topk_reference(scores, K))
    for row, sel in zip(scores, idx):
        order = sorted(range(30), key=lambda s: (-row[s], s))[:K]
        assert list(sel) == order
    assert (counts == K).all()


def test_topk_2048_over_long_rows(rng):
    scores = rng.standard_normal((3, 3001)).astype(np.float32)
    idx, counts = dsa.dsa_topk(scores, 2048)
    ref = dsa.dsa_topk_reference(scores, 2048)
    assert np.array_equal(idx, ref) and (counts == 2048).all()


def test_prefill_equals_dense_attention_on_selected(prefill):
    a = prefill
    ref = dsa.sparse_attention_reference(a["q"], a["k"], a["v"], a["idx"], prefix_len=PREFIX)
    np.testing.assert_allclose(a["out"], ref, rtol=1e-5, atol=1e-5)


def test_block_selection_prefill(rng):
    a = dsa.make_inputs(rng, T, 150, H, HKV, D, HI, DI, np.float32)
    scores = dsa.lightning_indexer(a["q_index"], a["weights"], a["k_index"], prefix_len=PREFIX, block_size=64)
    ref_scores = dsa.lightning_indexer_reference(a["q_index"], a["weights"], a["k_index"], prefix_len=PREFIX,
                                                 block_size=64)
    np.testing.assert_allclose(scores, ref_scores, rtol=1e-5, atol=1e-5)
    out, idx = dsa.dsa_prefill(a["q"], a["k"], a["v"], a["q_index"], a["weights"], a["k_index"], 2,
                               prefix_len=PREFIX, block_size=64)
    assert np.array_equal(idx, dsa.dsa_topk_reference(scores, 2, prefix_len=PREFIX, block_size=64, seq_len=150))
    assert (idx[:, 0] == 0).all()  # the block holding the prefix
    ref = dsa.sparse_attention_reference(a["q"], a["k"], a["v"], idx, block_size=64, prefix_len=PREFIX)
    np.testing.assert_allclose(out, ref, rtol=1e-5, atol=1e-5)


def test_decode_mixed_lengths_equals_dense_on_selected(rng):
    lens = np.array([83, 1, 40, 17], np.int32)
    a = dsa.make_inputs(rng, None, S, H, HKV, D, HI, DI, np.float32, batch=lens.size)
    out, idx = dsa.dsa_decode(a["q"], a["k"], a["v"], lens, a["q_index"], a["weights"], a["k_index"], K,
                              prefix_len=PREFIX)
    for b, n in enumerate(lens):
        scores = dsa.lightning_indexer_reference(a["q_index"][b:b + 1], a["weights"][b:b + 1], a["k_index"][b, :n],
                                                 prefix_len=PREFIX)
        ref_idx = dsa.dsa_topk_reference(scores.astype(np.float32), K, prefix_len=PREFIX)[0]
        # fp32 vs float64 scores may swap near-equal neighbours: compare the selected sets' scores instead
        got, want = idx[b][idx[b] >= 0], ref_idx[ref_idx >= 0]
        assert got.size == want.size == min(n, K)
        np.testing.assert_allclose(np.sort(scores[0][got]), np.sort(scores[0][want]), rtol=1e-5)
    ref = dsa.dsa_decode_reference(a["q"], a["k"], a["v"], lens, idx, prefix_len=PREFIX)
    np.testing.assert_allclose(out, ref, rtol=1e-5, atol=1e-5)


def test_decode_is_prefill_last_row(prefill):
    a = prefill
    out, idx = dsa.dsa_decode(a["q"][-1:], a["k"][None], a["v"][None], np.array([S], np.int32),
                              a["q_index"][-1:], a["weights"][-1:], a["k_index"][None], K, prefix_len=PREFIX)
    assert set(idx[0]) == set(a["idx"][-1])
    np.testing.assert_allclose(out[0], a["out"][-1], rtol=1e-5, atol=1e-6)


def test_rejects_bad_inputs(prefill):
    a = prefill
    with pytest.raises(ValueError, match="topk"):
        dsa.dsa_prefill(a["q"], a["k"], a["v"], a["q_index"], a["weights"], a["k_index"], 4096)
    with pytest.raises(ValueError, match="prefix"):
        dsa.dsa_topk(np.zeros((2, 8), np.float32), 2, prefix_len=3)
    with pytest.raises(ValueError, match="weights"):
        dsa.lightning_indexer(a["q_index"], a["weights"].astype(np.float16), a["k_index"])
    with pytest.raises(ValueError, match="block_size"):
        dsa.lightning_indexer(a["q_index"], a["weights"], a["k_index"], block_size=32)
    with pytest.raises(ValueError, match="indices"):
        dsa.sparse_attention(a["q"], a["k"], a["v"], a["idx"].astype(np.int64))
    with pytest.raises(ValueError, match="dtype"):
        dsa.sparse_attention(a["q"], a["k"].astype(np.float16), a["v"], a["idx"])
