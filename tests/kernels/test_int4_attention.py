"""INT4 Q·Kᵀ attention: the quantiser against numpy (codes, scales, smoothing mean), the attention against a float64
reference that dequantises the same codes, causal and not, GQA, odd lengths; and its error against fp32 attention
stays bounded, with K smoothing paying off on channel outliers."""

import numpy as np
import pytest

from kernels import int4_attention as ia

T, S, H, HKV, D = 70, 90, 4, 2, 32


def test_quantiser_matches_numpy():
    rng = np.random.default_rng()
    q, k, _ = ia.make_inputs(rng, T, S, H, HKV, D, np.float16, outliers=True)
    codes, scales, mean = ia.quantize_int4_blocks(q, 64, pre_scale=0.3)
    ref_codes, ref_scales = ia.quantize_int4_blocks_reference(q, 64, pre_scale=0.3)
    assert not mean.any()
    assert np.array_equal(ia.unpack_codes(codes), ref_codes) and np.array_equal(scales, ref_scales)
    assert np.abs(ref_codes).max() == 7  # the block maximum maps to ±7
    codes, scales, mean = ia.quantize_int4_blocks(k, 64, smooth=True)
    np.testing.assert_allclose(mean, np.asarray(k, np.float64).mean(axis=0), rtol=1e-5, atol=1e-5)
    ref_codes, ref_scales = ia.quantize_int4_blocks_reference(k, 64, mean=mean)
    assert np.array_equal(ia.unpack_codes(codes), ref_codes) and np.array_equal(scales, ref_scales)


@pytest.mark.parametrize("causal", [True, False])
def test_attention_equals_dequantised_reference(causal):
    rng = np.random.default_rng()
    q, k, v = ia.make_inputs(rng, T, S, H, HKV, D, np.float16)
    out = ia.int4_attention(q, k, v, causal=causal)
    scale = D ** -0.5
    qc, qs, _ = ia.quantize_int4_blocks(q, 64, pre_scale=scale * 1.4426950408889634)
    kc, ks, _ = ia.quantize_int4_blocks(k, 64, smooth=True)
    ref = ia.int4_scores_attention_reference(qc, qs, kc, ks, v, causal=causal, block_m=64, block_n=64)
    np.testing.assert_allclose(out.astype(np.float64), ref, rtol=2e-3, atol=2e-3)  # P rounded to fp16 before P·V


def test_error_against_fp32_attention_and_smoothing():
    rng = np.random.default_rng()
    q, k, v = ia.make_inputs(rng, T, S, H, HKV, D, np.float16, outliers=True)
    exact = ia.attention_fp32_reference(q, k, v)
    out = ia.int4_attention(q, k, v)
    err = np.linalg.norm(out - exact) / np.linalg.norm(exact)
    # Without smoothing the K channel offsets take the whole INT4 range: same codes path, zero mean.
    kc, ks, _ = ia.quantize_int4_blocks(k, 64)
    qc, qs, _ = ia.quantize_int4_blocks(q, 64, pre_scale=D ** -0.5 * 1.4426950408889634)
    unsmoothed = ia.int4_scores_attention_reference(qc, qs, kc, ks, v, causal=True, block_m=64, block_n=64)
    err_unsmoothed = np.linalg.norm(unsmoothed - exact) / np.linalg.norm(exact)
    assert err < 0.8 and err < err_unsmoothed


def test_rejects_bad_inputs():
    rng = np.random.default_rng()
    q, k, v = ia.make_inputs(rng, 8, 8, 4, 2, 32, np.float16)
    with pytest.raises(ValueError, match="float16"):
        ia.int4_attention(q.astype(np.float32), k, v)
    with pytest.raises(ValueError, match="Hkv"):
        ia.int4_attention(q[:, :3], k, v)
    with pytest.raises(ValueError, match="more queries"):
        ia.int4_attention(q, k[:4], v[:4])
    with pytest.raises(ValueError, match="power of two"):
        ia.quantize_int4_blocks(q[..., :24], 64)
    with pytest.raises(ValueError, match="q_block"):
        ia.int4_attention(q, k, v, q_block=48)
