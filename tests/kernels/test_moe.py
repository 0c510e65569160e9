"""MoE dispatch: router (k = 2, 8, 10, ties, shared gate), moe_align invariants with per-expert segments compared as
sets, the weight-aware scatter, and the whole block against a per-token loop over its experts in numpy."""

import numpy as np
import pytest

from kernels import moe

M, HIDDEN, E, INTER, SHARED = 37, 96, 12, 40, 24  # 37 tokens: partial blocks everywhere


@pytest.mark.parametrize("k", [2, 8, 10])
def test_router_topk_renormalised_and_shared_gate(rng, k):
    a = moe.make_moe_inputs(rng, M, HIDDEN, E, INTER, SHARED, np.float16)
    w, ids, gate = moe.moe_router(a["x"], a["w_router"], k, a["w_shared_gate"])
    rw, rids, rgate = moe.moe_router_reference(a["x"], a["w_router"], k, a["w_shared_gate"])
    assert np.array_equal(ids, rids)  # descending order, the same experts
    np.testing.assert_allclose(w, rw, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(w.sum(axis=1), 1.0, rtol=1e-5)
    np.testing.assert_allclose(gate, rgate, rtol=1e-5, atol=1e-6)


def test_router_ties_go_to_the_lower_expert(rng):
    a = moe.make_moe_inputs(rng, M, HIDDEN, E, INTER, SHARED, np.float16)
    wr = a["w_router"].copy()
    wr[7] = wr[2]  # experts 2 and 7, and 4 and 9, always tie exactly
    wr[9] = wr[4]
    _, ids, _ = moe.moe_router(a["x"], wr, 10, None)
    _, rids, _ = moe.moe_router_reference(a["x"], wr, 10)
    assert np.array_equal(ids, rids)
    for row in ids:
        pos = {e: i for i, e in enumerate(row)}
        for low, high in ((2, 7), (4, 9)):  # the higher id is taken only after (or with) the lower one
            assert high not in pos or pos.get(low, 99) < pos[high]


def test_align_segments_as_sets_and_scatter(rng):
    k, bm = 8, 16
    ids = np.stack([rng.permutation(E)[:k] for _ in range(M)]).astype(np.int32)
    ids[:5] = np.arange(k)  # a crowded expert set too
    weights = rng.random(ids.shape).astype(np.float32)
    x = rng.standard_normal((M, HIDDEN)).astype(np.float16)
    plan = moe.moe_align(ids, weights, x, E, bm)
    numel = ids.size
    assert np.array_equal(moe.segments(plan["sorted_ids"], plan["offsets"], numel),
                          moe.moe_align_reference(ids, E, bm))
    counts = np.bincount(ids.ravel(), minlength=E)
    padded = -(-counts // bm) * bm
    assert np.array_equal(plan["offsets"], np.concatenate([[0], np.cumsum(padded)]))
    assert plan["total"][0] == padded.sum()
    blocks = plan["total"][0] // bm
    assert np.array_equal(plan["expert_ids"][:blocks], np.repeat(np.arange(E), padded // bm))
    assert (plan["expert_ids"][blocks:] == -1).all() and (plan["sorted_ids"][plan["total"][0]:] == numel).all()
    real = plan["sorted_ids"] < numel
    rows = plan["sorted_ids"][real]
    assert np.array_equal(plan["x_perm"][real], x[rows // k])  # activations in expert order
    assert np.array_equal(plan["sorted_weights"][real], weights.ravel()[rows])  # with their routing weights
    assert np.array_equal(plan["positions"].ravel()[rows], np.nonzero(real)[0])  # the unpermute map


@pytest.mark.parametrize("shared", [True, False])
def test_moe_equals_per_token_loop(rng, shared):
    """fp16 here; the bf16 block runs in `python -m kernels.check` (one more set of compiles than this file affords)."""
    a = moe.make_moe_inputs(rng, M, HIDDEN, E, INTER, SHARED, np.float16)
    extra = {n: a[n] for n in ("shared_w1", "shared_w2", "w_shared_gate")} if shared else {}
    out = moe.moe_forward(a["x"], a["w_router"], a["w1"], a["w2"], 10, **extra)
    assert out.dtype == np.float16 and out.shape == (M, HIDDEN)
    w, ids, gate = moe.moe_router(a["x"], a["w_router"], 10, a["w_shared_gate"] if shared else None)
    ref = moe.moe_reference(a["x"], a["w1"], a["w2"], w, ids, shared_w1=a["shared_w1"] if shared else None,
                            shared_w2=a["shared_w2"], shared_gate=gate)
    # fp32 accumulation; one fp16 rounding of the SwiGLU intermediate (mirrored in the reference) and of the output
    np.testing.assert_allclose(out.astype(np.float64), ref, rtol=2e-3, atol=2e-3)


def test_rejects_bad_inputs(rng):
    a = moe.make_moe_inputs(rng, 4, 32, 4, 16, 16, np.float16)
    with pytest.raises(ValueError, match="top-k"):
        moe.moe_router(a["x"], a["w_router"], 0)
    with pytest.raises(ValueError, match="w_router"):
        moe.moe_router(a["x"], a["w_router"].astype(np.float32), 2)
    with pytest.raises(ValueError, match="w1"):
        moe.moe_forward(a["x"], a["w_router"], a["w1"][:, :, :16], a["w2"], 2)
    with pytest.raises(ValueError, match="shared"):
        moe.moe_forward(a["x"], a["w_router"], a["w1"], a["w2"], 2, shared_w1=a["shared_w1"])
    with pytest.raises(ValueError, match="expert_ids"):
        moe.moe_grouped_swiglu(np.zeros((32, 32), np.float16), a["w1"], np.zeros(32, np.int32),
                               np.zeros(3, np.int32), 8)
    with pytest.raises(ValueError, match="positions"):
        moe.moe_combine(np.zeros((8, 32), np.float32), np.full((4, 2), 8, np.int32), None, np.float16)
    with pytest.raises(ValueError, match="expert ids"):
        moe.moe_align(np.full((4, 2), 9, np.int32), np.ones((4, 2), np.float32), a["x"], 4, 16)


@pytest.mark.parametrize("k", [3, 5, 16])
def test_router_takes_any_top_k_up_to_its_slots(k):
    rng = np.random.default_rng(k)
    x = rng.standard_normal((9, 64)).astype(np.float32)
    w = rng.standard_normal((16, 64)).astype(np.float32)
    weights, ids, _ = moe.moe_router(x, w, k)
    ref_w, ref_ids, _ = moe.moe_router_reference(x, w, k)
    np.testing.assert_array_equal(ids, ref_ids)
    np.testing.assert_allclose(weights, ref_w, rtol=1e-5, atol=1e-6)
    with pytest.raises(ValueError, match="top-k"):
        moe.moe_router(x, w, 17)
