"""The gated-attention prologue of Qwen3.5 in one launch (research/qwen35.md §1.4, §2, §7).

From the fused projection output `qkv` [T, H*2D + 2*Hkv*D] = [q_h0 | g_h0 | q_h1 | g_h1 | ... | k (Hkv*D) | v (Hkv*D)]:
  1. split each query head's 2D columns into query (first D) and gate (second D);
  2. zero-centred RMSNorm `x * rsqrt(mean(x^2) + eps) * (1 + w)` over D on every q head (q_norm) and k head (k_norm);
  3. partial RoPE (first `rotary_dim` dims, NeoX or GPT-J, table or in-kernel cos/sin, optional mRoPE) on q and k;
  4. write k and v into the paged KV cache `[2, num_blocks, block_size, Hkv, D]` (vLLM flash layout, K then V) at
     `slot_mapping[t]` (= block * block_size + offset; -1 skips the token).
The grid is (tokens, blocks of BLOCK_H heads over the H query heads followed by the Hkv KV heads); every row of a
program is normalised and rotated, then stored as q (+ gate copy) or into the cache (+ v copy) by its kind.
Math in fp32, one rounding to the input dtype.

Error bound against `qkv_prologue_reference` (float64, same inputs): |got - ref| <= rtol*|ref| + atol with fp32
(1e-5, 1e-6), fp16 (1e-3, 1e-3), bf16 (8e-3, 8e-3); the gate and v are copied bit-exactly.
"""

from __future__ import annotations

import numpy as np

import dsl as tl
from jit import cdiv, jit, next_power_of_2
from kernels._common import dtype_name, float_array, int_array, launch, random_array, tolerance
from kernels.norm import rmsnorm_reference
from kernels.registry import Case, register
from kernels.rope import _rope_params, rope_coefficients, rope_cos_sin_table, rope_reference
from kernels.tuning import tuned

# Heads per program and warps. `qkv_prologue` uses the first unless given `config`; `tune=True` lets
# `jit.autotune` choose per head shape (modeled time; ties go to the first). The trial launches all write the same
# cache entries, so the in-place cache needs no restoring.
AUTOTUNE_CONFIGS = [
    {"BLOCK_H": 2, "num_warps": 4},
    {"BLOCK_H": 1, "num_warps": 4},
    {"BLOCK_H": 4, "num_warps": 8},
]


@jit
def _qkv_prologue_kernel(qkv_ptr, q_norm_ptr, k_norm_ptr, q_out_ptr, gate_out_ptr, cache_ptr, slot_ptr,
                         pos_ptr, table_ptr, n_tokens, n_q_heads, n_kv_heads, kv_plane, n_slots, eps, theta,
                         HEAD_DIM: tl.constexpr, ROT: tl.constexpr, NEOX: tl.constexpr, FROM_TABLE: tl.constexpr,
                         MROPE: tl.constexpr, S1: tl.constexpr, S2: tl.constexpr,
                         BLOCK_H: tl.constexpr, BLOCK_R: tl.constexpr, BLOCK_D: tl.constexpr):
    # Heads 0 .. H-1 are query heads, H .. H+Hkv-1 KV heads; one code path serves both (rows are masked per kind),
    # which keeps the kernel half the size of a branch per kind.
    t = tl.program_id(0)
    heads = tl.program_id(1) * BLOCK_H + tl.arange(0, BLOCK_H)
    kv_head = heads - n_q_heads
    is_q = heads < n_q_heads
    is_k = (kv_head >= 0) & (kv_head < n_kv_heads)
    d = tl.arange(0, BLOCK_D)
    dmask = (d < HEAD_DIM)[None, :]
    r = tl.arange(0, BLOCK_R)
    rmask = (r < ROT)[None, :]
    partner, cos, sin = rope_coefficients(pos_ptr, table_ptr, t, n_tokens, theta, r, ROT, NEOX, FROM_TABLE,
                                          MROPE, S1, S2, BLOCK_R)
    row = qkv_ptr + t.to(tl.int64) * ((2 * n_q_heads + 2 * n_kv_heads) * HEAD_DIM)
    # query head h starts at column 2hD (its gate follows it), KV head j at 2HD + jD
    base = row + (tl.where(is_q, 2 * heads, 2 * n_q_heads + kv_head) * HEAD_DIM)[:, None]
    hmask = (is_q | is_k)[:, None]
    # zero-centred RMSNorm over the whole head, with the weight (1 + w) of each row's kind
    x = tl.load(base + d[None, :], mask=hmask & dmask, other=0.0).to(tl.float32)
    inv_rms = tl.rsqrt(tl.sum(x * x, axis=1) / HEAD_DIM + eps)[:, None]
    q_w = tl.load(q_norm_ptr + d, mask=d < HEAD_DIM, other=0.0).to(tl.float32)
    k_w = tl.load(k_norm_ptr + d, mask=d < HEAD_DIM, other=0.0).to(tl.float32)
    y = x * (tl.where(is_q[:, None], q_w[None, :], k_w[None, :]) + 1.0) * inv_rms
    # RoPE of the normed rotary dims: x and its partner re-read (cache hits) at the rotary lanes only
    xr = tl.load(base + r[None, :], mask=hmask & rmask, other=0.0).to(tl.float32)
    xp = tl.load(base + partner[None, :], mask=hmask & rmask, other=0.0).to(tl.float32)
    w_r = tl.where(is_q[:, None], tl.load(q_norm_ptr + r, mask=r < ROT, other=0.0).to(tl.float32)[None, :],
                   tl.load(k_norm_ptr + r, mask=r < ROT, other=0.0).to(tl.float32)[None, :]) + 1.0
    w_p = tl.where(is_q[:, None], tl.load(q_norm_ptr + partner, mask=r < ROT, other=0.0).to(tl.float32)[None, :],
                   tl.load(k_norm_ptr + partner, mask=r < ROT, other=0.0).to(tl.float32)[None, :]) + 1.0
    y_rot = (xr * w_r * cos[None, :] + xp * w_p * sin[None, :]) * inv_rms
    rest = dmask & (d >= ROT)[None, :]  # the full-width stores of y write the pass-through dims only

    q_mask = is_q[:, None] & rest
    q_rmask = is_q[:, None] & rmask
    out = (t.to(tl.int64) * n_q_heads + heads[:, None]) * HEAD_DIM
    tl.store(q_out_ptr + out + d[None, :], y.to(q_out_ptr.dtype.element_ty), mask=q_mask)
    tl.store(q_out_ptr + out + r[None, :], y_rot.to(q_out_ptr.dtype.element_ty), mask=q_rmask)
    g_mask = is_q[:, None] & dmask
    gate = tl.load(row + (2 * heads[:, None] + 1) * HEAD_DIM + d[None, :], mask=g_mask)
    tl.store(gate_out_ptr + out + d[None, :], gate, mask=g_mask)

    slot = tl.load(slot_ptr + t)
    slot_ok = (slot >= 0) & (slot < n_slots)
    kv_full = is_k[:, None] & dmask & slot_ok
    dst = (slot.to(tl.int64) * n_kv_heads + kv_head[:, None]) * HEAD_DIM
    tl.store(cache_ptr + dst + d[None, :], y.to(cache_ptr.dtype.element_ty), mask=is_k[:, None] & rest & slot_ok)
    tl.store(cache_ptr + dst + r[None, :], y_rot.to(cache_ptr.dtype.element_ty), mask=is_k[:, None] & rmask & slot_ok)
    v = tl.load(row + ((2 * n_q_heads + n_kv_heads) + kv_head[:, None]) * HEAD_DIM + d[None, :], mask=kv_full)
    tl.store(cache_ptr + kv_plane + dst + d[None, :], v, mask=kv_full)


qkv_prologue_kernel_tuned = tuned(_qkv_prologue_kernel, AUTOTUNE_CONFIGS,
                                  key=["n_q_heads", "n_kv_heads", "HEAD_DIM", "ROT", "FROM_TABLE"])


def qkv_prologue(qkv: np.ndarray, q_norm_weight: np.ndarray, k_norm_weight: np.ndarray, positions: np.ndarray,
                 kv_cache: np.ndarray, slot_mapping: np.ndarray, rotary_dim: int = 64, *, theta: float = 1e7,
                 neox: bool = True, cos_sin_cache: np.ndarray | None = None, mrope_section=None,
                 eps: float = 1e-6, config: dict | None = None, tune: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """Run the gated-attention prologue; returns `(q, gate)`, both [T, H, D] in qkv's dtype, and writes the
    normalised, rotated k and the v of every token with `slot_mapping[t] >= 0` into `kv_cache` in place.

    Shapes: qkv [T, H*2D + 2*Hkv*D] (fp32/fp16/bf16); q_norm_weight, k_norm_weight [D] (zero-centred: the
    kernel scales by 1 + w); positions [T] ints ([3, T] with `mrope_section`); kv_cache [2, num_blocks, block_size,
    Hkv, D], C-contiguous, qkv's dtype (H and D are read from it and qkv's width); slot_mapping [T] ints.
    RoPE arguments as in `kernels.rope.rope`. `config`: one of AUTOTUNE_CONFIGS (default: config_table); `tune=True`
    lets the autotuner choose. Bound: fp32 1e-5 relative (+1e-6), fp16 1e-3, bf16 8e-3 against
    `qkv_prologue_reference`; gate and v are exact copies.
    """
    qkv = float_array(qkv, "qkv", ndim=2)
    if not isinstance(kv_cache, np.ndarray) or kv_cache.ndim != 5 or kv_cache.shape[0] != 2:
        raise ValueError(f"kv_cache must be a numpy array [2, num_blocks, block_size, Hkv, D], "
                         f"got {getattr(kv_cache, 'shape', type(kv_cache).__name__)}")
    if kv_cache.dtype != qkv.dtype or not kv_cache.flags.c_contiguous or not kv_cache.flags.writeable:
        raise ValueError(f"kv_cache must be a writeable C-contiguous {qkv.dtype} array, got {kv_cache.dtype}")
    _, num_blocks, block_size, n_kv, head_dim = kv_cache.shape
    n_tokens, width = qkv.shape
    if width % head_dim or (width // head_dim - 2 * n_kv) <= 0 or (width // head_dim - 2 * n_kv) % 2:
        raise ValueError(f"qkv width {width} is not H*2*{head_dim} + 2*{n_kv}*{head_dim} for any H >= 1")
    n_q = (width // head_dim - 2 * n_kv) // 2
    if n_q % n_kv:
        raise ValueError(f"query heads ({n_q}) must be a multiple of KV heads ({n_kv})")
    qw = float_array(q_norm_weight, "q_norm_weight", ndim=1)
    kw = float_array(k_norm_weight, "k_norm_weight", ndim=1)
    if qw.shape[0] != head_dim or kw.shape[0] != head_dim:
        raise ValueError(f"q_norm_weight and k_norm_weight must have shape ({head_dim},), got {qw.shape}, {kw.shape}")
    slots = int_array(slot_mapping, "slot_mapping", (n_tokens,))
    n_slots = num_blocks * block_size
    if slots.size and slots.max() >= n_slots:
        raise ValueError(f"slot_mapping values must be < num_blocks * block_size = {n_slots} (or -1 to skip)")
    rot, pos, table, s1, s2 = _rope_params(head_dim, rotary_dim, positions, n_tokens, cos_sin_cache,
                                           mrope_section, theta)
    q = np.empty((n_tokens, n_q, head_dim), qkv.dtype)
    gate = np.empty_like(q)
    if n_tokens == 0:
        return q, gate
    grid = lambda cfg: (n_tokens, cdiv(n_q + n_kv, cfg["BLOCK_H"]))
    launch(_qkv_prologue_kernel, qkv_prologue_kernel_tuned, AUTOTUNE_CONFIGS, grid,
           (qkv, qw, kw, q, gate, kv_cache, slots, pos, pos if table is None else table, n_tokens, n_q, n_kv,
            kv_cache[0].size, n_slots, float(eps), float(theta)), config, tune,
           HEAD_DIM=head_dim, ROT=rot, NEOX=bool(neox), FROM_TABLE=table is not None,
           MROPE=mrope_section is not None, S1=s1, S2=s2, BLOCK_R=next_power_of_2(rot),
           BLOCK_D=next_power_of_2(head_dim))
    return q, gate


def qkv_prologue_reference(qkv, q_norm_weight, k_norm_weight, positions, kv_cache, slot_mapping, rotary_dim=64, *,
                           theta=1e7, neox=True, cos_sin_cache=None, mrope_section=None, eps=1e-6):
    """float64 composition of the reference norm and RoPE: returns (q, gate, updated copy of kv_cache)."""
    n_kv, head_dim = kv_cache.shape[3], kv_cache.shape[4]
    n_tokens = qkv.shape[0]
    n_q = (qkv.shape[1] // head_dim - 2 * n_kv) // 2
    qg = qkv[:, : 2 * n_q * head_dim].reshape(n_tokens, n_q, 2, head_dim)
    rope_args = dict(theta=theta, neox=neox, cos_sin_cache=cos_sin_cache, mrope_section=mrope_section)

    def norm_rope(x, w):  # norm and rotate in float64, round once, as the kernel does
        normed = rmsnorm_reference(x.astype(np.float64), w, eps, zero_centered=True)
        return rope_reference(normed, positions, rotary_dim, **rope_args).astype(qkv.dtype)

    q = norm_rope(qg[:, :, 0], q_norm_weight)
    gate = qg[:, :, 1].copy()
    kv = qkv[:, 2 * n_q * head_dim:].reshape(n_tokens, 2, n_kv, head_dim)
    k = norm_rope(kv[:, 0], k_norm_weight)
    cache = kv_cache.copy()
    flat = cache.reshape(2, -1, n_kv, head_dim)
    slots = np.asarray(slot_mapping)
    write = slots >= 0
    flat[0, slots[write]], flat[1, slots[write]] = k[write], kv[write, 1]
    return q, gate, cache


@register
def _cases():
    from kernels._common import BF16

    rng = np.random.default_rng(2)
    tokens, n_q, n_kv, head_dim, block_size, num_blocks = 32, 16, 2, 256, 16, 6
    width = (2 * n_q + 2 * n_kv) * head_dim
    positions = rng.integers(0, 4096, tokens)
    table = rope_cos_sin_table(4096, 64)
    slots = rng.permutation(num_blocks * block_size)[:tokens]
    slots[::7] = -1
    for dtype, use_table in ((BF16, False), (np.float32, True)):
        qkv = random_array(rng, (tokens, width), dtype)
        qw = random_array(rng, (head_dim,), np.float32, scale=0.1, offset=0.0)
        kw = random_array(rng, (head_dim,), np.float32, scale=0.1, offset=0.0)
        cache = random_array(rng, (2, num_blocks, block_size, n_kv, head_dim), dtype)
        tab = table if use_table else None

        def run(qkv=qkv, qw=qw, kw=kw, cache=cache, tab=tab):
            c = cache.copy()
            return (*qkv_prologue(qkv, qw, kw, positions, c, slots, cos_sin_cache=tab), c)

        def reference(qkv=qkv, qw=qw, kw=kw, cache=cache, tab=tab):
            return qkv_prologue_reference(qkv, qw, kw, positions, cache, slots, cos_sin_cache=tab)

        nbytes = qkv.nbytes * 2 - tokens * 2 * n_kv * head_dim * qkv.itemsize  # read qkv; write q, gate, k, v
        yield Case("qkv.gated_prologue", f"T={tokens} H={n_q}/{n_kv} D={head_dim} rot=64 "
                   f"{'table' if use_table else 'theta'}", dtype_name(dtype), run, reference, *tolerance(dtype), nbytes)
