"""kernels.ffn (fused SwiGLU gate/up + down projection) and kernels.gemm against float64 references."""

import numpy as np
import pytest

from kernels._common import BF16
from kernels.ffn import ffn_bound, swiglu, swiglu_bound, swiglu_ffn, swiglu_ffn_reference, swiglu_reference
from kernels.gemm import TOLERANCE, gemm
from kernels.registry import check


def rand(rng, shape, dtype, scale=1.0):
    return (rng.standard_normal(shape) * scale + 0.05).astype(dtype)


def test_swiglu_ffn_fp32_masked_tails_and_transposed_weights(rng):
    # 37 x 200 -> 72: tails in M, N and K for the default 16 x 64 x 64 tiles; [out, in] weights passed as .T views
    M, H, inter = 37, 200, 72
    x = rand(rng, (M, H), np.float32)
    wg, wu = rand(rng, (inter, H), np.float32, 0.1).T, rand(rng, (inter, H), np.float32, 0.1).T
    wd = rand(rng, (H, inter), np.float32, 0.1).T
    h = swiglu(x, wg, wu)
    assert np.all(np.abs(h - swiglu_reference(x, wg, wu)) <= swiglu_bound(x, wg, wu))
    y = swiglu_ffn(x, wg, wu, wd)
    assert y.dtype == np.float32 and y.shape == (M, H)
    assert np.all(np.abs(y - swiglu_ffn_reference(x, wg, wu, wd)) <= ffn_bound(x, wg, wu, wd))


def test_swiglu_epilogue_saturates_cleanly(rng):
    # large |gate| values: silu(g) -> 0 for g << 0 and -> g for g >> 0, no inf/nan from exp(-g)
    x = rand(rng, (37, 200), np.float32, 30.0)
    # same layout: no new compile
    wg, wu = rand(rng, (72, 200), np.float32, 1.0).T, rand(rng, (72, 200), np.float32, 0.1).T
    h = swiglu(x, wg, wu)
    assert np.all(np.isfinite(h))
    assert np.all(np.abs(h - swiglu_reference(x, wg, wu)) <= swiglu_bound(x, wg, wu))
    assert np.any(h > 1e3) and np.any((h < 0) & (h > -1e-6))  # both saturated regimes are exercised


@pytest.mark.parametrize("dtype", [np.float16, BF16])
def test_swiglu_ffn_qwen_hidden_half_precision(rng, dtype):
    # Qwen3.5 hidden size 2048, a reduced intermediate size, 13 tokens (a masked M tail)
    M, H, inter = 13, 2048, 384
    x = rand(rng, (M, H), dtype)
    wg, wu = rand(rng, (H, inter), dtype, 0.03), rand(rng, (H, inter), dtype, 0.03)
    wd = rand(rng, (inter, H), dtype, 0.05)
    rtol, atol = TOLERANCE[np.dtype(dtype)]
    h = swiglu(x, wg, wu)
    assert h.dtype == dtype
    err_h = np.abs(h.astype(np.float64) - swiglu_reference(x, wg, wu).astype(np.float64))
    assert np.all(err_h <= swiglu_bound(x, wg, wu))
    y = swiglu_ffn(x, wg, wu, wd)
    err = np.abs(y.astype(np.float64) - swiglu_ffn_reference(x, wg, wu, wd).astype(np.float64))
    assert y.dtype == dtype and np.all(err <= ffn_bound(x, wg, wu, wd))
    # the gemm half on its own: same kernel, checked against its documented bound
    d = gemm(h, wd)
    ref = h.astype(np.float64) @ wd.astype(np.float64)
    bound = rtol * (np.abs(h.astype(np.float64)) @ np.abs(wd.astype(np.float64))) + atol
    assert np.all(np.abs(d.astype(np.float64) - ref) <= bound)


def test_registered_ffn_cases_match():
    from kernels import ffn

    cases = list(ffn._cases())
    assert {c.dtype for c in cases} == {"fp16", "bf16"}
    for case in cases:
        assert check(case, case.run(), case.reference()), case.op


def test_ffn_rejects_bad_inputs(rng):
    x = rand(rng, (4, 32), np.float16)
    w = rand(rng, (32, 16), np.float16)
    with pytest.raises(ValueError, match="dtype"):
        swiglu(x, w.astype(np.float32), w)
    with pytest.raises(ValueError, match="w_gate and w_up"):
        swiglu(x, w, rand(rng, (32, 8), np.float16))
    with pytest.raises(ValueError, match="w_down"):
        swiglu_ffn(x, w, w, rand(rng, (8, 32), np.float16))
    with pytest.raises(ValueError, match="2-D"):
        swiglu(x[None], w, w)
    with pytest.raises(ValueError, match="float32, float16 or bfloat16"):
        swiglu(x.astype(np.int32), w, w)
    with pytest.raises(ValueError, match="inner dimensions"):
        gemm(x, w[:16])
