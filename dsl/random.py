"""Philox 4x32 counter-based random numbers, the same streams as triton.language.random.

Written with language operations (unrolled at compile time), so a seed and offsets give the
bits Triton gives on a GPU.
"""

from __future__ import annotations

from dsl import dtypes as T
from dsl.core import tensor, unwrap
from dsl.semantic import current

PHILOX_KEY_A = 0x9E3779B9
PHILOX_KEY_B = 0xBB67AE85
PHILOX_ROUND_A = 0xD2511F53
PHILOX_ROUND_B = 0xCD9E8D57
N_ROUNDS_DEFAULT = 10


def _u32(x) -> tensor:
    s = current()
    x = s.to_tensor(x)
    if x.dtype == T.int32:
        return s.cast(x, T.uint32, bitcast=True)
    return s.cast(x, T.uint32)


def philox_impl(c0, c1, c2, c3, k0, k1, n_rounds=N_ROUNDS_DEFAULT):
    s = current()
    round_a = s.scalar_constant(PHILOX_ROUND_A, T.uint32)
    round_b = s.scalar_constant(PHILOX_ROUND_B, T.uint32)
    key_a = s.scalar_constant(PHILOX_KEY_A, T.uint32)
    key_b = s.scalar_constant(PHILOX_KEY_B, T.uint32)
    for _ in range(unwrap(n_rounds)):
        a0, a2 = c0, c2
        c0 = s.umulhi(round_b, a2) ^ c1 ^ k0
        c2 = s.umulhi(round_a, a0) ^ c3 ^ k1
        c1 = round_b * a2
        c3 = round_a * a0
        k0 = k0 + key_a
        k1 = k1 + key_b
    return c0, c1, c2, c3


def philox(seed, c0, c1, c2, c3, n_rounds=N_ROUNDS_DEFAULT):
    s = current()
    seed = s.to_tensor(seed)
    if not seed.dtype.is_int():
        raise TypeError(f"the seed must be an integer, got {seed.dtype}")
    seed = s.cast(seed, T.uint64)
    seed_hi = s.cast((seed >> 32) & 0xFFFFFFFF, T.uint32)
    seed_lo = s.cast(seed & 0xFFFFFFFF, T.uint32)
    c0, c1, c2, c3 = (_u32(c) for c in (c0, c1, c2, c3))
    c0, c1, c2, c3 = s.broadcast(c0, c1, c2, c3)
    return philox_impl(c0, c1, c2, c3, seed_lo, seed_hi, n_rounds)


def randint4x(seed, offset, n_rounds=N_ROUNDS_DEFAULT):
    offset = current().to_tensor(offset)
    zero = offset * 0
    return philox(seed, offset, zero, zero, zero, n_rounds)


def randint(seed, offset, n_rounds=N_ROUNDS_DEFAULT) -> tensor:
    return randint4x(seed, offset, n_rounds)[0]


def uint_to_uniform_float(x) -> tensor:
    """Map 32 random bits to [0, 1), as Triton does (via the int32 reinterpretation)."""
    s = current()
    x = s.cast(s.to_tensor(x), T.int32, bitcast=True)
    x = s.where(x < 0, -x - 1, x)
    return x * 4.6566127342e-10


def rand(seed, offset, n_rounds=N_ROUNDS_DEFAULT) -> tensor:
    return uint_to_uniform_float(randint(seed, offset, n_rounds))


def rand4x(seed, offsets, n_rounds=N_ROUNDS_DEFAULT):
    return tuple(uint_to_uniform_float(i) for i in randint4x(seed, offsets, n_rounds))


def pair_uniform_to_normal(u1, u2):
    """Box-Muller."""
    s = current()
    u1 = s.minmax("max", 1.0e-7, u1)
    th = 6.283185307179586 * u2
    r = s.unary_math("sqrt", -2.0 * s.unary_math("log", u1))
    return r * s.unary_math("cos", th), r * s.unary_math("sin", th)


def randn(seed, offset, n_rounds=N_ROUNDS_DEFAULT) -> tensor:
    i1, i2, _, _ = randint4x(seed, offset, n_rounds)
    return pair_uniform_to_normal(uint_to_uniform_float(i1), uint_to_uniform_float(i2))[0]


def randn4x(seed, offset, n_rounds=N_ROUNDS_DEFAULT):
    u1, u2, u3, u4 = rand4x(seed, offset, n_rounds)
    n1, n2 = pair_uniform_to_normal(u1, u2)
    n3, n4 = pair_uniform_to_normal(u3, u4)
    return n1, n2, n3, n4
