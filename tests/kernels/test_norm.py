"""kernels.norm against its float64 references on fresh random inputs (masked tails, Qwen3.5 widths, all dtypes).

Each test pins one AUTOTUNE_CONFIGS entry (tuning would compile every config); together they cover every config.
"""

import numpy as np
import pytest

from kernels import norm
from kernels._common import BF16, tolerance
from kernels.norm import (
    gated_rmsnorm,
    gated_rmsnorm_reference,
    layernorm,
    layernorm_reference,
    rmsnorm,
    rmsnorm_reference,
)


def rand(rng, shape, dtype, scale=1.0, offset=0.1):
    return (rng.standard_normal(shape) * scale + offset).astype(dtype)


def assert_close(got, ref, atol_factor=1.0):
    assert got.dtype == ref.dtype and got.shape == ref.shape
    rtol, atol = tolerance(got.dtype)
    np.testing.assert_allclose(got.astype(np.float64), ref.astype(np.float64), rtol=rtol, atol=atol * atol_factor)


@pytest.mark.parametrize("shape, dtype, zero_centered, config", [
    ((3, 5, 100), np.float32, False, 1),  # 100 columns: a masked tail in a 128-wide tile
    ((11, 300), np.float16, True, 2),
])
def test_rmsnorm(rng, shape, dtype, zero_centered, config):
    x = rand(rng, shape, dtype, scale=3.0)
    w = rand(rng, shape[-1:], np.float32, scale=0.2, offset=0.0 if zero_centered else 1.0)
    got = rmsnorm(x, w, zero_centered=zero_centered, config=norm.AUTOTUNE_CONFIGS[config])
    assert_close(got, rmsnorm_reference(x, w, zero_centered=zero_centered))


@pytest.mark.parametrize("dtype, config", [(np.float32, 3), (BF16, 0)])
def test_rmsnorm_fused_residual_qwen_hidden(rng, dtype, config):
    cfg = norm.AUTOTUNE_CONFIGS[config]
    x, r = rand(rng, (7, 2048), dtype), rand(rng, (7, 2048), dtype, scale=4.0)
    w = rand(rng, (2048,), dtype, scale=0.1, offset=0.0)  # zero-centred weight stored in the activation dtype
    out, new_residual = rmsnorm(x, w, residual=r, zero_centered=True, config=cfg)
    ref_out, ref_residual = rmsnorm_reference(x, w, residual=r, zero_centered=True)
    np.testing.assert_array_equal(new_residual, ref_residual)  # one rounding of the fp32 sum: bit-exact
    assert_close(out, ref_out)
    # the normed output is the norm of the new residual, not of x
    assert_close(rmsnorm(new_residual, w, zero_centered=True, config=cfg), out)


def test_zero_centred_equals_plain_with_one_plus_w(rng):
    x, w = rand(rng, (6, 100), np.float32), rand(rng, (100,), np.float32, scale=0.3)
    cfg = norm.AUTOTUNE_CONFIGS[1]
    np.testing.assert_allclose(rmsnorm(x, w, zero_centered=True, config=cfg), rmsnorm(x, 1.0 + w, config=cfg),
                               rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("shape, dtype, config", [((5, 32, 128), np.float32, 1), ((37, 100), BF16, 3)])
def test_gated_rmsnorm(rng, shape, dtype, config):
    x = rand(rng, shape, dtype, scale=2.0)
    z = rand(rng, shape, dtype, scale=4.0)
    z.flat[::17] = -100.0  # silu far into the negative side must give 0, not nan
    w = rand(rng, shape[-1:], np.float32, scale=0.1, offset=1.0)
    got = gated_rmsnorm(x, z, w, config=norm.GATED_AUTOTUNE_CONFIGS[config])
    assert np.isfinite(got.astype(np.float32)).all()
    assert_close(got, gated_rmsnorm_reference(x, z, w))


def test_gated_rmsnorm_default_config_deltanet_head(rng):
    # the call the Gated DeltaNet layer makes: [T, HV, dv] with the plain signature
    x, z = rand(rng, (3, 4, 128), BF16), rand(rng, (3, 4, 128), BF16)
    w = rand(rng, (128,), BF16, scale=0.1, offset=1.0)
    assert_close(gated_rmsnorm(x, z, w), gated_rmsnorm_reference(x, z, w))


@pytest.mark.parametrize("shape, dtype, bias, config", [((9, 1152), np.float32, True, 1),
                                                         ((4, 3, 77), np.float16, False, 2)])
def test_layernorm(rng, shape, dtype, bias, config):
    x = rand(rng, shape, dtype, scale=2.0, offset=20.0)  # a large mean: the two-pass variance must not cancel
    w = rand(rng, shape[-1:], np.float32)
    b = rand(rng, shape[-1:], np.float32) if bias else None
    x64 = x.astype(np.float64)
    factor = 1.0 + np.max(np.abs(x64.mean(-1)) / x64.std(-1))  # the documented growth of the absolute term
    got = layernorm(x, w, b, config=norm.LAYERNORM_AUTOTUNE_CONFIGS[config])
    assert_close(got, layernorm_reference(x, w, b), atol_factor=factor)


def test_rejects_bad_arguments(rng):
    x, w = rand(rng, (4, 64), np.float32), rand(rng, (64,), np.float32)
    with pytest.raises(ValueError, match="weight"):
        rmsnorm(x, w[:63])
    with pytest.raises(ValueError, match="float32, float16 or bfloat16"):
        rmsnorm(x.astype(np.float64), w)
    with pytest.raises(ValueError, match="residual"):
        rmsnorm(x, w, residual=x.astype(np.float16))
    with pytest.raises(ValueError, match="z"):
        gated_rmsnorm(x, x[:, :32], w)
    with pytest.raises(ValueError, match="numpy array"):
        layernorm([[1.0]], w)
    with pytest.raises(ValueError, match="bias"):
        layernorm(x, w, w[:10])
    with pytest.raises(ValueError, match="normalised dimension"):
        rmsnorm(np.ones((2, 0), np.float32), np.ones(0, np.float32))
