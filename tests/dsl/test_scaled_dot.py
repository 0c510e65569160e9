"""tl.dot_scaled against a numpy reference written from the OCP MX definitions."""

import ml_dtypes
import numpy as np
import pytest

import dsl as tl
from jit import jit

E2M1 = np.array([0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0], np.float32)


def e2m1_values(packed: np.ndarray, axis: int) -> np.ndarray:
    codes = np.stack([packed & 0xF, packed >> 4], axis=axis + 1 if axis >= 0 else packed.ndim + axis + 1)
    shape = list(packed.shape)
    shape[axis] *= 2
    codes = codes.reshape(shape)
    return np.where(codes & 8, -1.0, 1.0).astype(np.float32) * E2M1[codes & 7]


def scale_factors(scale: np.ndarray, k: int) -> np.ndarray:
    return np.repeat(np.exp2(scale.astype(np.float64) - 127).astype(np.float32), k // scale.shape[-1], axis=-1)


def make_kernel():
    @jit
    def kernel(a_ptr, a_scale_ptr, b_ptr, b_scale_ptr, out_ptr, M: tl.constexpr, N: tl.constexpr, K: tl.constexpr,
               A_FMT: tl.constexpr, B_FMT: tl.constexpr):
        PA: tl.constexpr = 2 if A_FMT == "e2m1" else 1
        PB: tl.constexpr = 2 if B_FMT == "e2m1" else 1
        m, n = tl.arange(0, M), tl.arange(0, N)
        ka, kb, g = tl.arange(0, K // PA), tl.arange(0, K // PB), tl.arange(0, K // 32)
        a = tl.load(a_ptr + m[:, None] * (K // PA) + ka[None, :])
        b = tl.load(b_ptr + kb[:, None] * N + n[None, :])
        sa = tl.load(a_scale_ptr + m[:, None] * (K // 32) + g[None, :])
        sb = tl.load(b_scale_ptr + n[:, None] * (K // 32) + g[None, :])
        c = tl.dot_scaled(a, sa, A_FMT, b, sb, B_FMT)
        tl.store(out_ptr + m[:, None] * N + n[None, :], c)

    return kernel


KERNEL = make_kernel()


def operand(fmt: str, shape, rng) -> tuple[np.ndarray, np.ndarray]:
    """(storage, fp32 values) of a random operand in `fmt`."""
    if fmt == "e2m1":
        packed = rng.integers(0, 256, shape, dtype=np.uint8)
        return packed, None
    kind = {"e4m3": ml_dtypes.float8_e4m3fn, "e5m2": ml_dtypes.float8_e5m2}[fmt]
    values = rng.standard_normal(shape).astype(kind)
    return values.view(np.uint8), values.astype(np.float32)


@pytest.mark.parametrize("a_fmt, b_fmt", [("e2m1", "e2m1"), ("e4m3", "e2m1"), ("e5m2", "e4m3"), ("e2m1", "e5m2")])
def test_dot_scaled_matches_the_mx_definition(a_fmt, b_fmt):
    rng = np.random.default_rng(len(a_fmt + b_fmt))
    M, N, K = 16, 32, 64
    a, a_vals = operand(a_fmt, (M, K // 2) if a_fmt == "e2m1" else (M, K), rng)
    b, b_vals = operand(b_fmt, (K // 2, N) if b_fmt == "e2m1" else (K, N), rng)
    a_vals = e2m1_values(a, -1) if a_vals is None else a_vals
    b_vals = e2m1_values(b, 0) if b_vals is None else b_vals
    sa = rng.integers(120, 134, (M, K // 32), dtype=np.uint8)
    sb = rng.integers(120, 134, (N, K // 32), dtype=np.uint8)
    expected = (a_vals * scale_factors(sa, K)).astype(np.float64) @ (b_vals * scale_factors(sb, K).T)
    out = np.zeros((M, N), np.float32)
    KERNEL[(1,)](a, sa, b, sb, out, M, N, K, A_FMT=a_fmt, B_FMT=b_fmt)
    np.testing.assert_allclose(out, expected, rtol=1e-5, atol=1e-5 * np.abs(expected).max())


def test_dot_scaled_rejects_unknown_formats():
    rng = np.random.default_rng(1)
    a = rng.integers(0, 256, (16, 32), dtype=np.uint8)
    b = rng.integers(0, 256, (32, 32), dtype=np.uint8)
    s = np.full((16, 2), 127, np.uint8)
    with pytest.raises(tl.CompilationError, match="NYI: lhs_format e3m4"):
        KERNEL[(1,)](a, s, b, np.full((32, 2), 127, np.uint8), np.zeros((16, 32), np.float32), 16, 32, 64,
                     A_FMT="e3m4", B_FMT="e2m1")
