"""Rotary position embedding (research/qwen35.md §1.8, §2): NeoX (rotate-half) and GPT-J (interleaved) pairing,
partial rotary (only the first `rotary_dim` of each head rotate), arbitrary integer positions, and Qwen3.5's
interleaved mRoPE (sections [11, 11, 10] over (t, h, w) positions; identical to plain RoPE when t = h = w).

cos/sin come from one of two sources:
* a table `cos_sin_cache[max_pos, rotary_dim] = cat(cos, sin)` in vLLM's layout, row = position
  (`rope_cos_sin_table`, or `RopeTableCache`, which keeps the tables of recent sequence lengths in an LRU);
* generated in the kernel from `theta` and the position: inv_freq and the angle are formed in fp64 and reduced
  modulo 2*pi before an fp32 cos/sin, so the angle error stays ~1e-7 rad at any position up to 2^31 (an fp32
  angle, as HF computes it, is off by up to position * 2^-24 rad: 0.016 rad at position 262144).

Frequencies: inv_freq[i] = theta^(-2i / rotary_dim), i < rotary_dim / 2. Pairs: NeoX (i, i + rotary_dim/2), GPT-J
(2i, 2i + 1); y_a = x_a cos - x_b sin, y_b = x_b cos + x_a sin. The rotation is done in fp32 and rounded once.

Error bound against `rope_reference` (float64, same inputs): |got - ref| <= rtol*|ref| + atol with fp32 (1e-5, 1e-6),
fp16 (1e-3, 1e-3), bf16 (8e-3, 8e-3), for either source of cos/sin (table values are rounded to fp32, ~6e-8).
"""

from __future__ import annotations

from collections import OrderedDict

import numpy as np

import dsl as tl
from jit import autotune, cdiv, jit, next_power_of_2
from kernels._common import dtype_name, float_array, int_array, launch, random_array, tolerance
from kernels.registry import Case, register
from kernels.tuning import as_configs

QWEN35_MROPE_SECTION = (11, 11, 10)

# Heads per program and warps. `rope` uses the first unless given `config`; `tune=True` lets `jit.autotune` choose
# per head shape (modeled time; ties go to the first).
AUTOTUNE_CONFIGS = [
    {"BLOCK_H": 4, "num_warps": 4},
    {"BLOCK_H": 1, "num_warps": 2},
    {"BLOCK_H": 8, "num_warps": 8},
    {"BLOCK_H": 16, "num_warps": 8},
]


@jit
def rope_coefficients(pos_ptr, table_ptr, t, n_tokens, theta, d,
                      ROT: tl.constexpr, NEOX: tl.constexpr, FROM_TABLE: tl.constexpr,
                      MROPE: tl.constexpr, S1: tl.constexpr, S2: tl.constexpr, BLOCK_R: tl.constexpr):
    """For the rotary dims `d` (BLOCK_R lanes) of token `t`: (partner dim, cos, signed sin) with
    y[d] = x[d]*cos + x[partner]*sin. Lanes at or past ROT get partner = d, cos = 1, sin = 0."""
    HALF: tl.constexpr = ROT // 2
    rot = d < ROT
    if NEOX:
        first = d < HALF
        freq = tl.where(first, d, d - HALF)
        partner = tl.where(first, d + HALF, d - HALF)
        sign = tl.where(first, -1.0, 1.0)
    else:
        freq = d // 2
        partner = d ^ 1
        sign = tl.where((d % 2) == 0, -1.0, 1.0)
    freq = tl.where(rot, freq, 0)
    partner = tl.where(rot, partner, d)
    if MROPE:
        # Interleaved mRoPE: frequency i takes the h position when i % 3 == 1 and i < 3*S1, the w position when
        # i % 3 == 2 and i < 3*S2, the t position otherwise; positions are [3, n_tokens] (t, h, w).
        axis = tl.where(((freq % 3) == 1) & (freq < 3 * S1), 1, tl.where(((freq % 3) == 2) & (freq < 3 * S2), 2, 0))
        pos = tl.load(pos_ptr + axis * n_tokens + t)
    else:
        pos = tl.load(pos_ptr + t) + tl.zeros((BLOCK_R,), tl.int32)
    if FROM_TABLE:
        row = table_ptr + pos.to(tl.int64) * ROT
        cos = tl.load(row + freq, mask=rot, other=1.0).to(tl.float32)
        sin = tl.load(row + HALF + freq, mask=rot, other=0.0).to(tl.float32)
    else:
        two_pi = tl.full((BLOCK_R,), 6.283185307179586, tl.float64)
        # -2 / ROT as a literal would be an fp32 constant (Triton's rule for Python floats), 1e-8 off: 5e-4 rad
        # at position 5e4. -2.0 and the integer ROT are exact, so divide in fp64.
        inv_freq = tl.exp2(freq.to(tl.float64) * -2.0 / ROT * tl.log2(theta.to(tl.float64)))
        angle = pos.to(tl.float64) * inv_freq
        angle = (angle - two_pi * tl.floor(angle / two_pi)).to(tl.float32)
        cos = tl.where(rot, tl.cos(angle), 1.0)
        sin = tl.where(rot, tl.sin(angle), 0.0)
    return partner, cos, sin * sign


@jit
def _rope_kernel(x_ptr, out_ptr, pos_ptr, table_ptr, n_tokens, n_heads, theta,
                 HEAD_DIM: tl.constexpr, ROT: tl.constexpr, NEOX: tl.constexpr, FROM_TABLE: tl.constexpr,
                 MROPE: tl.constexpr, S1: tl.constexpr, S2: tl.constexpr, COPY_REST: tl.constexpr,
                 BLOCK_H: tl.constexpr, BLOCK_R: tl.constexpr, BLOCK_D: tl.constexpr):
    # One program: one token, BLOCK_H heads. cos/sin are formed over the rotary dims only (BLOCK_R lanes); the
    # other dims are copied (COPY_REST) or, in place, left alone.
    t = tl.program_id(0)
    heads = tl.program_id(1) * BLOCK_H + tl.arange(0, BLOCK_H)
    r = tl.arange(0, BLOCK_R)
    partner, cos, sin = rope_coefficients(pos_ptr, table_ptr, t, n_tokens, theta, r, ROT, NEOX, FROM_TABLE,
                                          MROPE, S1, S2, BLOCK_R)
    row = (t * n_heads + heads)[:, None].to(tl.int64) * HEAD_DIM
    hmask = (heads < n_heads)[:, None]
    mask = hmask & (r < ROT)[None, :]
    x = tl.load(x_ptr + row + r[None, :], mask=mask, other=0.0).to(tl.float32)
    xp = tl.load(x_ptr + row + partner[None, :], mask=mask, other=0.0).to(tl.float32)
    tl.store(out_ptr + row + r[None, :], (x * cos[None, :] + xp * sin[None, :]).to(out_ptr.dtype.element_ty),
             mask=mask)
    if COPY_REST:
        d = tl.arange(0, BLOCK_D)
        rest = hmask & ((d >= ROT) & (d < HEAD_DIM))[None, :]
        tl.store(out_ptr + row + d[None, :], tl.load(x_ptr + row + d[None, :], mask=rest), mask=rest)


# out_ptr is restored after the trial launches: in place it is x, which each trial would rotate again.
rope_kernel_tuned = autotune(configs=as_configs(AUTOTUNE_CONFIGS),
                             key=["n_heads", "HEAD_DIM", "ROT", "FROM_TABLE", "COPY_REST"],
                             restore_value=["out_ptr"])(_rope_kernel)


# --------------------------------------------------------------------------------------------------------------
# cos/sin tables


def rope_inv_freq(rotary_dim: int, theta: float) -> np.ndarray:
    """float64 inv_freq[i] = theta^(-2i / rotary_dim), i < rotary_dim / 2."""
    return float(theta) ** (-np.arange(0, rotary_dim, 2, dtype=np.float64) / rotary_dim)


def rope_cos_sin_table(n_positions: int, rotary_dim: int, theta: float = 1e7, start: int = 0) -> np.ndarray:
    """[n_positions, rotary_dim] fp32 table `cat(cos, sin)` for positions start .. start + n_positions - 1 (vLLM
    layout). Angles are formed in float64, so entries are the correctly rounded fp32 of the exact cos/sin."""
    angle = np.arange(start, start + n_positions, dtype=np.float64)[:, None] * rope_inv_freq(rotary_dim, theta)
    return np.concatenate([np.cos(angle), np.sin(angle)], axis=1).astype(np.float32)


class RopeTableCache:
    """Host-side cos/sin tables for the most recent sequence lengths, in an LRU of `capacity` entries (default 8).

    A long-context model then keeps tables as long as the sequences it is serving, not one of
    max_position_embeddings rows. Lengths are rounded up to a multiple of `granularity`, so decoding a growing
    sequence reuses one table for many steps; a request for n rows is served by any cached table with >= n rows.
    """

    def __init__(self, rotary_dim: int, theta: float = 1e7, capacity: int = 8, granularity: int = 64):
        if rotary_dim <= 0 or rotary_dim % 2:
            raise ValueError(f"rotary_dim must be a positive even number, got {rotary_dim}")
        if capacity < 1 or granularity < 1:
            raise ValueError("capacity and granularity must be >= 1")
        self.rotary_dim, self.theta, self.capacity, self.granularity = rotary_dim, float(theta), capacity, granularity
        self._tables: OrderedDict[int, np.ndarray] = OrderedDict()
        self.hits = 0
        self.misses = 0

    @property
    def lengths(self) -> list[int]:
        """Row counts of the cached tables, least recently used first."""
        return list(self._tables)

    def table(self, seq_len: int) -> np.ndarray:
        """A read-only [>= seq_len, rotary_dim] fp32 table covering positions 0 .. seq_len - 1."""
        if seq_len < 1:
            raise ValueError(f"seq_len must be >= 1, got {seq_len}")
        for rows in self._tables:
            if rows >= seq_len:
                self._tables.move_to_end(rows)
                self.hits += 1
                return self._tables[rows]
        self.misses += 1
        rows = cdiv(seq_len, self.granularity) * self.granularity
        table = rope_cos_sin_table(rows, self.rotary_dim, self.theta)
        table.flags.writeable = False
        self._tables[rows] = table
        while len(self._tables) > self.capacity:
            self._tables.popitem(last=False)
        return table


# --------------------------------------------------------------------------------------------------------------
# host function


def _rope_params(head_dim: int, rotary_dim: int | None, positions, n_tokens: int, cos_sin_cache,
                 mrope_section, theta: float) -> tuple[int, np.ndarray, np.ndarray | None, int, int]:
    """Shared validation of the RoPE arguments (also used by the fused QKV prologue)."""
    if cos_sin_cache is None and not (theta > 0 and float(np.float32(theta)) == float(theta)):
        # the kernel receives theta as an fp32 scalar; a rounded theta would shift every angle by ~pos * 6e-8
        raise ValueError(f"theta must be positive and exactly representable in float32, got {theta!r}")
    rot = head_dim if rotary_dim is None else int(rotary_dim)
    if rot <= 0 or rot % 2 or rot > head_dim:
        raise ValueError(f"rotary_dim must be even and in 2..head_dim={head_dim}, got {rot}")
    s1 = s2 = 0
    if mrope_section is not None:
        if len(mrope_section) != 3 or sum(mrope_section) != rot // 2 or min(mrope_section) < 0:
            raise ValueError(f"mrope_section must be 3 sections summing to rotary_dim/2={rot // 2}, "
                             f"got {mrope_section}")
        s1, s2 = int(mrope_section[1]), int(mrope_section[2])
        pos = int_array(positions, "positions", (3, n_tokens))
    else:
        pos = int_array(positions, "positions", (n_tokens,))
    table = None
    if cos_sin_cache is not None:
        table = float_array(cos_sin_cache, "cos_sin_cache", ndim=2)
        if table.dtype != np.float32 or table.shape[1] != rot:
            raise ValueError(f"cos_sin_cache must be float32 [max_pos, {rot}], got {table.dtype} {table.shape}")
        if pos.size and (pos.min() < 0 or pos.max() >= table.shape[0]):
            raise ValueError(f"positions must lie in [0, {table.shape[0]}) to index cos_sin_cache")
    return rot, pos, table, s1, s2


def rope(x: np.ndarray, positions: np.ndarray, rotary_dim: int | None = None, *, theta: float = 1e7,
         neox: bool = True, cos_sin_cache: np.ndarray | None = None, mrope_section=None,
         inplace: bool = False, config: dict | None = None, tune: bool = False) -> np.ndarray:
    """Apply RoPE to `x` [T, H, D] (fp32/fp16/bf16) at integer `positions` [T] ([3, T] = (t, h, w) with
    `mrope_section`, e.g. (11, 11, 10)); the first `rotary_dim` (default D) dims of each head rotate.

    cos/sin come from `cos_sin_cache` [max_pos, rotary_dim] fp32 (vLLM layout) when given, else are generated in
    the kernel from `theta` (which must be exact in fp32, as integer thetas below 2^24 are; else ValueError).
    NeoX (rotate-half) pairing when `neox`, GPT-J (interleaved) otherwise. Returns a new array, or `x` rotated in
    place (only its rotary dims are touched) when `inplace`. `config`: one of AUTOTUNE_CONFIGS (default: config_table);
    `tune=True` lets the autotuner choose. Bound: fp32 1e-5 relative (+1e-6), fp16 1e-3, bf16 8e-3 vs `rope_reference`.
    """
    if inplace and (not isinstance(x, np.ndarray) or not x.flags.c_contiguous):
        raise ValueError("inplace RoPE needs a C-contiguous numpy array")
    x = float_array(x, "x", ndim=3)
    n_tokens, n_heads, head_dim = x.shape
    rot, pos, table, s1, s2 = _rope_params(head_dim, rotary_dim, positions, n_tokens, cos_sin_cache,
                                           mrope_section, theta)
    out = x if inplace else np.empty_like(x)
    if x.size == 0:
        return out
    grid = lambda cfg: (n_tokens, cdiv(n_heads, cfg["BLOCK_H"]))
    launch(_rope_kernel, rope_kernel_tuned, AUTOTUNE_CONFIGS, grid,
           (x, out, pos, pos if table is None else table, n_tokens, n_heads, float(theta)), config, tune,
           HEAD_DIM=head_dim, ROT=rot, NEOX=bool(neox), FROM_TABLE=table is not None,
           MROPE=mrope_section is not None, S1=s1, S2=s2, COPY_REST=not inplace and rot < head_dim,
           BLOCK_R=next_power_of_2(rot), BLOCK_D=next_power_of_2(head_dim))
    return out


# --------------------------------------------------------------------------------------------------------------
# numpy reference


def rope_angles_reference(positions, rotary_dim: int, theta: float = 1e7, mrope_section=None) -> np.ndarray:
    """float64 angles [T, rotary_dim / 2]; with `mrope_section` positions are [3, T] and frequency i takes its
    position from t, h or w as Qwen3.5's interleaved mRoPE does (HF `apply_interleaved_mrope`)."""
    inv_freq = rope_inv_freq(rotary_dim, theta)
    positions = np.asarray(positions, dtype=np.float64)
    if mrope_section is None:
        return positions[:, None] * inv_freq
    per_axis = positions[:, :, None] * inv_freq  # [3, T, half]
    angle = per_axis[0].copy()
    for axis in (1, 2):
        idx = slice(axis, 3 * mrope_section[axis], 3)
        angle[:, idx] = per_axis[axis][:, idx]
    return angle


def rope_reference(x, positions, rotary_dim=None, *, theta=1e7, neox=True, cos_sin_cache=None,
                   mrope_section=None) -> np.ndarray:
    """float64 RoPE with the same arguments as `rope`, rounded to x's dtype."""
    rot = x.shape[-1] if rotary_dim is None else rotary_dim
    half = rot // 2
    if cos_sin_cache is None:
        angle = rope_angles_reference(positions, rot, theta, mrope_section)
        cos, sin = np.cos(angle), np.sin(angle)
    else:
        table = cos_sin_cache.astype(np.float64)
        if mrope_section is None:
            rows = table[np.asarray(positions)]
        else:  # per frequency, the row of the axis that frequency follows
            axis = np.zeros(half, dtype=np.int64)
            f = np.arange(half)
            axis[(f % 3 == 1) & (f < 3 * mrope_section[1])] = 1
            axis[(f % 3 == 2) & (f < 3 * mrope_section[2])] = 2
            pos = np.asarray(positions)[axis]  # [half, T]
            rows = np.concatenate([table[pos.T, f], table[pos.T, half + f]], axis=1)
        cos, sin = rows[:, :half], rows[:, half:]
    cos, sin = cos[:, None, :], sin[:, None, :]
    y = x.astype(np.float64)
    xr = y[..., :rot]
    if neox:
        a, b = xr[..., :half], xr[..., half:]
        rotated = np.concatenate([a * cos - b * sin, b * cos + a * sin], axis=-1)
    else:
        a, b = xr[..., 0::2], xr[..., 1::2]
        rotated = np.stack([a * cos - b * sin, b * cos + a * sin], axis=-1).reshape(xr.shape)
    y[..., :rot] = rotated
    return y.astype(x.dtype)


# --------------------------------------------------------------------------------------------------------------
# cases for `python -m kernels.check` and the benchmark


@register
def _cases():
    from kernels._common import BF16

    rng = np.random.default_rng(1)
    tokens, heads, head_dim, rot = 64, 16, 256, 64
    positions = rng.integers(0, 262144, tokens)
    table = rope_cos_sin_table(262144 // 64, rot)
    table_pos = positions % table.shape[0]
    for dtype in (np.float32, BF16):
        x = random_array(rng, (tokens, heads, head_dim), dtype)
        nbytes = 2 * x.nbytes
        yield Case("rope.neox_theta", f"T={tokens} H={heads} D={head_dim} rot={rot}", dtype_name(dtype),
                   lambda x=x: rope(x, positions, rot), lambda x=x: rope_reference(x, positions, rot),
                   *tolerance(dtype), nbytes)
    x = random_array(rng, (tokens, heads, head_dim), np.float32)
    yield Case("rope.neox_table", f"T={tokens} H={heads} D={head_dim} rot={rot}", "fp32",
               lambda: rope(x, table_pos, rot, cos_sin_cache=table),
               lambda: rope_reference(x, table_pos, rot, cos_sin_cache=table), *tolerance(np.float32), 2 * x.nbytes)
    xg = random_array(rng, (tokens, 8, 64), np.float16)
    yield Case("rope.gptj_theta", f"T={tokens} H=8 D=64 rot=64", "fp16",
               lambda: rope(xg, positions, neox=False, theta=1e4),
               lambda: rope_reference(xg, positions, neox=False, theta=1e4), *tolerance(np.float16), 2 * xg.nbytes)
    mpos = rng.integers(0, 4096, (3, tokens))
    yield Case("rope.mrope", f"T={tokens} H={heads} D={head_dim} rot={rot} [11,11,10]", "fp32",
               lambda: rope(x, mpos, rot, mrope_section=QWEN35_MROPE_SECTION),
               lambda: rope_reference(x, mpos, rot, mrope_section=QWEN35_MROPE_SECTION),
               *tolerance(np.float32), 2 * x.nbytes)
