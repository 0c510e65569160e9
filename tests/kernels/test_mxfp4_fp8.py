"""kernels.mxfp4_fp8: MXFP4 -> FP8 workspace conversion, per-row FP8 activations, the grouped FP8 GEMM."""

import numpy as np
import pytest

from kernels._common import BF16
from kernels.mxfp4_fp8 import (
    MXFP4Experts,
    moe_gemm_bound,
    mxfp4_moe_gemm,
    mxfp4_moe_gemm_reference,
    mxfp4_to_fp8_reference,
    quantize_rows_fp8,
)
from kernels.quant import quantize_fp8, quantize_mxfp4
from kernels.registry import check

E, N, K = 6, 40, 96  # N = 40: a masked tail in 16-row conversion tiles and 64-column GEMM tiles


def make_experts(rng, capacity=3, spread=8):
    w = rng.standard_normal((E, N, K)).astype(np.float32) * np.exp2(rng.integers(-spread, 1, size=(E, N, K // 32, 1))
                                                                    ).repeat(32, -1).reshape(E, N, K)
    return MXFP4Experts.from_float(w, capacity=capacity), w


def test_conversion_is_bitwise_the_reference_and_lossless(rng):
    experts, _ = make_experts(rng)
    slots = experts.load([4, 1])
    assert slots.tolist() == [0, 1]
    for e, s in zip([4, 1], slots, strict=True):
        q, scale = mxfp4_to_fp8_reference(experts.blocks[e], experts.scales[e])
        assert np.array_equal(experts.workspace[s].view(np.uint8), q.view(np.uint8))
        assert np.array_equal(experts.workspace_scale[s], scale)
        # block exponents within 14 binades of the row max: fp8 * row scale is the MXFP4 value exactly
        assert np.array_equal(experts.workspace[s].astype(np.float32) * scale[:, None], experts.dequantize(e))


def test_conversion_rounds_blocks_far_below_the_row_max(rng):
    blocks, scales = quantize_mxfp4(rng.standard_normal((1, N, K)).astype(np.float32))
    scales[0, :, 1] = scales[0, :, 0] - 16  # 16 binades down: E4M3 subnormals, some codes round
    scales[0, :, 2] = 3  # ~2^-124: everything flushes to (signed) zero
    experts = MXFP4Experts(blocks, scales, capacity=1)
    experts.load([0])
    q, scale = mxfp4_to_fp8_reference(blocks[0], scales[0])
    assert np.array_equal(experts.workspace[0].view(np.uint8), q.view(np.uint8))
    exact = experts.dequantize(0)
    got = experts.workspace[0].astype(np.float32) * scale[:, None]
    assert np.array_equal(got[:, :32], exact[:, :32]) and not np.array_equal(got[:, 32:64], exact[:, 32:64])
    assert np.all(got[:, 64:] == 0)


def test_workspace_reuse_and_lru_eviction(rng):
    experts, _ = make_experts(rng, capacity=3)
    experts.load([0, 1, 2])
    assert experts.conversions == 3
    assert experts.load([2, 0]).tolist() == [2, 0] and experts.conversions == 3  # resident: no conversion
    slots = experts.load([5, 0])  # expert 1 is the least recently used: its slot is reused
    assert slots.tolist() == [1, 0] and experts.conversions == 4
    q, _ = mxfp4_to_fp8_reference(experts.blocks[5], experts.scales[5])
    assert np.array_equal(experts.workspace[1].view(np.uint8), q.view(np.uint8))
    with pytest.raises(ValueError, match="capacity"):
        experts.load([0, 1, 2, 3])
    with pytest.raises(ValueError, match="expert ids"):
        experts.load([E])
    report = experts.memory_report()
    assert report["fp8_all_bytes"] == E * N * (K + 4)
    assert report["saved_bytes"] == report["fp8_all_bytes"] - report["mxfp4_bytes"] - report["workspace_bytes"]


def test_quantize_rows_fp8_matches_numpy(rng):
    x = (rng.standard_normal((9, 1300)) * np.exp2(rng.integers(-6, 6, size=(9, 1)))).astype(BF16)  # > one block
    x[3] = 0
    q, s = quantize_rows_fp8(x)
    q_ref, s_ref = quantize_fp8(x, "e4m3", axis=-1)
    assert np.array_equal(s, s_ref[:, 0]) and s[3] == 1.0
    assert np.array_equal(q.view(np.uint8), q_ref.view(np.uint8))


def test_grouped_fp8_gemm_matches_reference(rng):
    experts, w = make_experts(rng, capacity=4)
    T = 37
    x = rng.standard_normal((T, K)).astype(BF16)
    ids, offs = np.array([3, 0, 5, 2]), np.array([1, 18, 18, 35, 36])  # an empty group, rows 0 and 36 unrouted
    y = mxfp4_moe_gemm(x, experts, ids, offs, np.float32)
    ref = mxfp4_moe_gemm_reference(x, experts, ids, offs, np.float32)
    assert np.all(np.abs(y - ref) <= moe_gemm_bound(x, experts, ids, offs, np.float32))
    assert np.all(y[0] == 0) and np.all(y[36] == 0)
    # the fp8 path stays close to the float product of the MXFP4 weights
    exact = x[1:18].astype(np.float64) @ experts.dequantize(3).astype(np.float64).T
    assert np.abs(y[1:18] - exact).max() <= 0.1 * np.abs(exact).max()
    # more distinct experts than workspace slots: run in chunks, same result
    small = MXFP4Experts(experts.blocks, experts.scales, capacity=2)
    assert np.array_equal(mxfp4_moe_gemm(x, small, ids, offs, np.float32), y) and small.conversions == 4
    y16 = mxfp4_moe_gemm(x, experts, ids, offs)
    assert y16.dtype == BF16
    assert np.all(np.abs(y16.astype(np.float64) - ref) <= moe_gemm_bound(x, experts, ids, offs, BF16))


def test_registered_moe_case_and_memory_saving():
    from kernels import mxfp4_fp8

    (case,) = mxfp4_fp8._cases()
    assert check(case, case.run(), case.reference())
    assert case.notes["saved_fraction"] > 0.35  # 64 experts, 4 workspace slots: ~0.41 below all-FP8


def test_moe_gemm_rejects_bad_inputs(rng):
    experts, _ = make_experts(rng)
    x = rng.standard_normal((4, K)).astype(np.float16)
    with pytest.raises(ValueError, match="offsets"):
        mxfp4_moe_gemm(x, experts, np.array([0]), np.array([0, 5]))
    with pytest.raises(ValueError, match="offsets"):
        mxfp4_moe_gemm(x, experts, np.array([0, 1]), np.array([0, 3]))
    with pytest.raises(ValueError, match="K="):
        mxfp4_moe_gemm(x[:, :64], experts, np.array([0]), np.array([0, 4]))
    with pytest.raises(ValueError, match="MXFP4Experts"):
        mxfp4_moe_gemm(x, experts.blocks, np.array([0]), np.array([0, 4]))
    with pytest.raises(ValueError, match="blocks"):
        MXFP4Experts(experts.blocks[..., :8], experts.scales)
    with pytest.raises(ValueError, match="scales"):
        MXFP4Experts(experts.blocks, experts.scales.astype(np.int32))
