"""Gated DeltaNet gates: g = -exp(A_log) * softplus(a + dt_bias), beta = sigmoid(b), in fp32."""

import numpy as np
import pytest

from kernels import deltanet_ref as ref
from kernels.deltanet_gates import gdn_gates


def test_gates_match_reference_including_extremes(rng):
    T, HV = 37, 6  # T * HV not a multiple of the block
    a = (rng.standard_normal((T, HV)) * 3).astype(np.float32)
    b = (rng.standard_normal((T, HV)) * 3).astype(np.float32)
    a[0], b[0] = 90.0, 90.0  # softplus and sigmoid far out: no overflow
    a[1], b[1] = -90.0, -90.0
    A_log = rng.uniform(-4, 3, HV).astype(np.float32)
    dt_bias = rng.standard_normal(HV).astype(np.float32)
    g, beta = gdn_gates(a, b, A_log, dt_bias)
    g_ref, beta_ref = ref.gates_ref(a, b, A_log, dt_bias)
    assert g.dtype == beta.dtype == np.float32 and g.shape == (T, HV)
    assert np.all(np.isfinite(g)) and np.all(g <= 0) and np.all((beta >= 0) & (beta <= 1))
    np.testing.assert_allclose(g, g_ref, rtol=2e-6, atol=1e-7)
    np.testing.assert_allclose(beta, beta_ref, rtol=2e-6, atol=1e-7)


def test_rejects_bad_arguments():
    a = np.zeros((4, 3), np.float32)
    with pytest.raises(ValueError, match="A_log"):
        gdn_gates(a, a, np.zeros(3, np.float64), np.zeros(3, np.float32))
    with pytest.raises(ValueError, match="dt_bias"):
        gdn_gates(a, a, np.zeros(3, np.float32), np.zeros(4, np.float32))
    with pytest.raises(ValueError, match="b must be"):
        gdn_gates(a, a[:2], np.zeros(3, np.float32), np.zeros(3, np.float32))
    with pytest.raises(ValueError, match="2-D"):
        gdn_gates(a[0], a[0], np.zeros(3, np.float32), np.zeros(3, np.float32))
