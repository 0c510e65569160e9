"""Differential testing: random well-typed kernels, compiled vs interpreted, agree bit for bit,
math functions included. The soak is
scripts/soak_differential.py; this is its bounded CI slice."""

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from jit.fuzz.differential import check, ulp_distance
from jit.fuzz.kernels import Chooser, RandomChooser, generate


class _Drawn(Chooser):
    """Choices drawn from hypothesis, so a failing kernel shrinks to a small one."""

    def __init__(self, data):
        self.data = data

    def int(self, lo: int, hi: int) -> int:
        return self.data.draw(st.integers(lo, hi))


@settings(max_examples=8, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True)
@given(st.data(), st.integers(0, 2**31 - 1))
def test_random_kernels_agree(data, seed):
    kernel = generate(_Drawn(data), seed=seed)
    mismatch = check(kernel, seed)
    assert mismatch is None, f"{mismatch}\n{kernel.source}"


def test_generator_covers_the_op_classes():
    """Over a few hundred generated kernels every step kind and several dtypes appear (generation is cheap)."""
    text = "\n".join(generate(RandomChooser(s), seed=s).source for s in range(300))
    for needle in ("tl.dot(", "tl.where(", "tl.cumsum(", "tl.sum(", "if pid % 2", "for j in range(", "<<", "//",
                   "tl.maximum(", "bfloat16", "int8", "uint32", "tl.exp"):
        assert needle in text, needle


def test_ulp_distance_counts_steps_across_zero_and_ignores_nan_payloads():
    a = np.array([1.0, -0.0, np.nan, 2.0], np.float32)
    b = np.array([np.nextafter(np.float32(1), np.float32(2)), 0.0, -np.nan, 3.0], np.float32)
    assert ulp_distance(a, b).tolist()[:3] == [1, 0, 0]
    assert ulp_distance(a, b)[3] > 1000
