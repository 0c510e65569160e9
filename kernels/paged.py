"""Paged KV cache (vLLM layout) and split-KV decode attention over it (flash-decoding).

Cache layout, vLLM's FlashAttention backend ("NHD"): key_cache and value_cache are each
[num_blocks, page_size, Hkv, D] (the halves kv_cache[0], kv_cache[1] of its [2, num_blocks, page_size,
Hkv, D] tensor). Token position p of sequence r lives at page block_table[r, p // page_size], row
p % page_size. `reshape_and_cache` writes token i's k, v at slot_mapping[i] = page * page_size + row;
a slot of -1 (vLLM's PAD_SLOT_ID) is skipped.

Decode runs in two kernels. The split kernel gives each (sequence, KV head, split) program an equal
share of the sequence's visible key blocks and computes, for all query heads of that KV head at
once, the locally normalised output and its log-sum-exp. The merge kernel combines the splits:
M = max lse_s, w_s = 2^(lse_s - M), out = sum w_s o_s / sum w_s, LSE = M + log2(sum w_s) (§6.1),
then applies Qwen3.5's output gate. The decode query sits at position seq_len - 1 and sees the same
mask as the prefill kernel's last row: global tokens [0, max(prefix, n_sink)) plus a window.
"""

from __future__ import annotations

import numpy as np

import dsl as tl
from jit import Config, autotune, cdiv, jit, next_power_of_2
from kernels._common import launch as run_kernel
from kernels.attention import DTYPES, LOG2E, attention_mask
from kernels.config_table import with_default
from kernels.registry import Case, register

# The autotuners' search spaces. Decode: keys per block (default_config: the first, the second for head dims
# above 128). Cache writes: tokens per program (default: the first).
AUTOTUNE_CONFIGS: list[Config] = [
    Config({"BLOCK_N": 64}, num_warps=4),
    Config({"BLOCK_N": 32}, num_warps=4),
    Config({"BLOCK_N": 128}, num_warps=4),
    Config({"BLOCK_N": 16}, num_warps=2),
]
CACHE_AUTOTUNE_CONFIGS: list[Config] = [
    Config({"BLOCK_T": 8}, num_warps=4),
    Config({"BLOCK_T": 32}, num_warps=4),
    Config({"BLOCK_T": 1}, num_warps=1),
]


@jit(do_not_specialize=["key_ptr", "value_ptr", "key_cache_ptr", "value_cache_ptr", "slot_ptr", "num_tokens",
                        "kv_heads", "head_dim", "stride_kt", "stride_kh", "stride_vt", "stride_vh"])
def reshape_and_cache_kernel(key_ptr, value_ptr, key_cache_ptr, value_cache_ptr, slot_ptr, num_tokens, kv_heads,
                             head_dim, stride_kt, stride_kh, stride_vt, stride_vh,
                             BLOCK_T: tl.constexpr, BLOCK_H: tl.constexpr, BLOCK_D: tl.constexpr):
    """One program: BLOCK_T tokens as a [BLOCK_T, Hkv, D] tile; each token's [Hkv, D] is one contiguous cache row."""
    tokens = tl.program_id(0).to(tl.int64) * BLOCK_T + tl.arange(0, BLOCK_T)
    offs_h = tl.arange(0, BLOCK_H)
    offs_d = tl.arange(0, BLOCK_D)
    slot = tl.load(slot_ptr + tokens, mask=tokens < num_tokens, other=-1).to(tl.int64)
    mask = (slot >= 0)[:, None, None] & (offs_h[None, :, None] < kv_heads) & (offs_d[None, None, :] < head_dim)
    inner = offs_h[None, :, None] * head_dim + offs_d[None, None, :]
    dest = slot[:, None, None] * (kv_heads * head_dim) + inner
    k = tl.load(key_ptr + tokens[:, None, None] * stride_kt + offs_h[None, :, None] * stride_kh
                + offs_d[None, None, :], mask=mask)
    tl.store(key_cache_ptr + dest, k, mask=mask)
    v = tl.load(value_ptr + tokens[:, None, None] * stride_vt + offs_h[None, :, None] * stride_vh
                + offs_d[None, None, :], mask=mask)
    tl.store(value_cache_ptr + dest, v, mask=mask)


_SPLIT_RUNTIME = ["q_ptr", "key_cache_ptr", "value_cache_ptr", "block_table_ptr", "seq_lens_ptr", "o_part_ptr",
                  "lse_part_ptr", "stride_qb", "stride_qh", "stride_bt", "num_heads", "kv_heads", "group", "head_dim",
                  "page_size", "num_splits", "qk_scale", "window", "n_global"]


@jit(do_not_specialize=_SPLIT_RUNTIME)
def paged_decode_split_kernel(q_ptr, key_cache_ptr, value_cache_ptr, block_table_ptr, seq_lens_ptr, o_part_ptr,
                              lse_part_ptr, stride_qb, stride_qh, stride_bt, num_heads, kv_heads, group, head_dim,
                              page_size, num_splits, qk_scale, window, n_global,
                              BLOCK_G: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_D: tl.constexpr,
                              PRECISION: tl.constexpr):
    """One program: the `group` query heads of one KV head of one sequence over one split of its key blocks."""
    split = tl.program_id(0)
    kv_head = tl.program_id(1)
    seq = tl.program_id(2).to(tl.int64)
    offs_g = tl.arange(0, BLOCK_G)
    offs_n = tl.arange(0, BLOCK_N)
    offs_d = tl.arange(0, BLOCK_D)
    g_ok = offs_g < group
    d_ok = offs_d < head_dim
    heads = kv_head * group + offs_g
    q = tl.load(q_ptr + seq * stride_qb + heads[:, None] * stride_qh + offs_d[None, :],
                mask=g_ok[:, None] & d_ok[None, :], other=0.0)

    seq_len = tl.load(seq_lens_ptr + seq)
    qpos = seq_len - 1
    global_end = tl.minimum(n_global, seq_len)
    lo = tl.where(window > 0, tl.maximum(qpos - window + 1, 0), 0)
    n_glob_blocks = tl.cdiv(global_end, BLOCK_N)
    band_start = tl.maximum(lo // BLOCK_N, n_glob_blocks)
    n_blocks = n_glob_blocks + tl.maximum(tl.cdiv(seq_len, BLOCK_N) - band_start, 0)
    per_split = tl.cdiv(n_blocks, num_splits)
    first = split * per_split
    last = tl.minimum(first + per_split, n_blocks)

    row_stride = kv_heads * head_dim
    table = block_table_ptr + seq * stride_bt
    m_i = tl.full((BLOCK_G,), -float("inf"), tl.float32)
    l_i = tl.zeros((BLOCK_G,), tl.float32)
    acc = tl.zeros((BLOCK_G, BLOCK_D), tl.float32)
    for t in range(first, last):
        keys = tl.where(t < n_glob_blocks, t, band_start + t - n_glob_blocks) * BLOCK_N + offs_n
        key_ok = keys < seq_len
        page = tl.load(table + keys // page_size, mask=key_ok, other=0).to(tl.int64)
        rows = (page * page_size + keys % page_size) * row_stride + kv_head * head_dim
        kt = tl.load(key_cache_ptr + rows[None, :] + offs_d[:, None], mask=d_ok[:, None] & key_ok[None, :],
                     other=0.0)
        s = tl.dot(q, kt, input_precision=PRECISION) * qk_scale
        visible = key_ok & ((keys < global_end) | (window <= 0) | (qpos - keys < window))
        s = tl.where(visible[None, :], s, -float("inf"))
        m_new = tl.maximum(m_i, tl.max(s, axis=1))
        m_safe = tl.where(m_new == -float("inf"), 0.0, m_new)
        p = tl.exp2(s - m_safe[:, None])
        alpha = tl.exp2(m_i - m_safe)
        l_i = l_i * alpha + tl.sum(p, axis=1)
        v = tl.load(value_cache_ptr + rows[:, None] + offs_d[None, :], mask=key_ok[:, None] & d_ok[None, :],
                    other=0.0)
        acc = acc * alpha[:, None] + tl.dot(p.to(v.dtype), v, input_precision=PRECISION)
        m_i = m_new

    has_keys = l_i > 0
    o = acc / tl.where(has_keys, l_i, 1.0)[:, None]
    lse = tl.where(has_keys, m_i + tl.log2(tl.where(has_keys, l_i, 1.0)), -float("inf"))
    part = (seq * num_heads + heads) * num_splits + split  # o_part [B, H, splits, D], lse_part [B, H, splits]
    tl.store(o_part_ptr + part[:, None] * head_dim + offs_d[None, :], o, mask=g_ok[:, None] & d_ok[None, :])
    tl.store(lse_part_ptr + part, lse, mask=g_ok)


@jit(do_not_specialize=["o_part_ptr", "lse_part_ptr", "gate_ptr", "out_ptr", "lse_ptr", "num_heads", "num_splits",
                        "head_dim", "stride_gb", "stride_gh", "stride_ob", "stride_oh"])
def paged_decode_merge_kernel(o_part_ptr, lse_part_ptr, gate_ptr, out_ptr, lse_ptr, num_heads, num_splits, head_dim,
                              stride_gb, stride_gh, stride_ob, stride_oh,
                              BLOCK_S: tl.constexpr, BLOCK_D: tl.constexpr, HAS_GATE: tl.constexpr):
    """One program: one (sequence, head); combines its splits by their log-sum-exp and applies the gate."""
    head = tl.program_id(0)
    seq = tl.program_id(1)
    offs_s = tl.arange(0, BLOCK_S)
    offs_d = tl.arange(0, BLOCK_D)
    s_ok = offs_s < num_splits
    d_ok = offs_d < head_dim
    base = (seq * num_heads + head) * num_splits
    lse = tl.load(lse_part_ptr + base + offs_s, mask=s_ok, other=-float("inf"))
    m = tl.max(lse, axis=0)
    m_safe = tl.where(m == -float("inf"), 0.0, m)
    w = tl.exp2(lse - m_safe)
    total = tl.sum(w, axis=0)
    parts = tl.load(o_part_ptr + (base + offs_s[:, None]) * head_dim + offs_d[None, :],
                    mask=s_ok[:, None] & d_ok[None, :], other=0.0)
    o = tl.sum(parts * w[:, None], axis=0) / tl.where(total > 0, total, 1.0)
    if HAS_GATE:
        g = tl.load(gate_ptr + seq * stride_gb + head * stride_gh + offs_d, mask=d_ok, other=0.0).to(tl.float32)
        o = o * tl.sigmoid(g)
    tl.store(out_ptr + seq * stride_ob + head * stride_oh + offs_d, o.to(out_ptr.dtype.element_ty), mask=d_ok)
    out_lse = tl.where(total > 0, (m_safe + tl.log2(tl.where(total > 0, total, 1.0))) * 0.6931471805599453,
                       -float("inf"))
    tl.store(lse_ptr + seq * num_heads + head, out_lse)


# Tuned once per head shape and page size (not per batch or length: a sweep compiles every config).
reshape_and_cache_tuned = autotune(configs=CACHE_AUTOTUNE_CONFIGS, key=["kv_heads", "head_dim"])(
    reshape_and_cache_kernel)
paged_decode_split_tuned = with_default(
    autotune(configs=AUTOTUNE_CONFIGS, key=["head_dim", "group", "page_size"])(paged_decode_split_kernel),
    lambda named: default_config(int(named["head_dim"])))


# ----------------------------------------------------------------------------------------------- host


def reshape_and_cache(key: np.ndarray, value: np.ndarray, key_cache: np.ndarray, value_cache: np.ndarray,
                      slot_mapping: np.ndarray, config: Config | str | None = None) -> None:
    """Write key[i], value[i] ([T, Hkv, D]) into the caches at slot_mapping[i] (in place; -1 skips).

    config: a Config like CACHE_AUTOTUNE_CONFIGS', None for the config table's pick (kernels.config_table; the
    first of them when it has none), or "auto" to tune on first use.
    """
    if key.ndim != 3 or key.shape != value.shape:
        raise ValueError(f"key and value must both be [T, Hkv, D], got {key.shape} and {value.shape}")
    _check_cache(key_cache, value_cache)
    if key_cache.shape[2:] != key.shape[1:]:
        raise ValueError(f"cache rows are [Hkv, D] = {key_cache.shape[2:]}, key rows are {key.shape[1:]}")
    for name, a in (("key", key), ("value", value)):
        if a.dtype != key_cache.dtype or (a.shape[-1] > 1 and a.strides[-1] != a.itemsize):
            raise ValueError(f"{name}: need a contiguous last dim and the cache's dtype {key_cache.dtype}, "
                             f"got {a.dtype}")
    if slot_mapping.shape != (key.shape[0],) or slot_mapping.dtype not in (np.int32, np.int64):
        raise ValueError(f"slot_mapping must be int32/int64 [T={key.shape[0]}], got {slot_mapping.dtype} "
                         f"{slot_mapping.shape}")
    slots = key_cache.shape[0] * key_cache.shape[1]
    if slot_mapping.size and (slot_mapping.max() >= slots or slot_mapping.min() < -1):
        raise ValueError(f"slot_mapping entries must be -1 or in [0, {slots})")
    tokens, kv_heads, dim = key.shape
    _check_config(config)
    if tokens:
        args = (key, value, key_cache, value_cache, np.ascontiguousarray(slot_mapping), tokens, kv_heads, dim,
                key.strides[0] // key.itemsize, key.strides[1] // key.itemsize,
                value.strides[0] // value.itemsize, value.strides[1] // value.itemsize)
        run_kernel(reshape_and_cache_kernel, reshape_and_cache_tuned, CACHE_AUTOTUNE_CONFIGS,
                   lambda m: (cdiv(tokens, m["BLOCK_T"]),), args, config,
                   BLOCK_H=next_power_of_2(kv_heads), BLOCK_D=max(16, next_power_of_2(dim)))


def paged_decode(q: np.ndarray, key_cache: np.ndarray, value_cache: np.ndarray, block_table: np.ndarray,
                 seq_lens: np.ndarray, gate: np.ndarray | None = None, *, window: int | None = None, n_sink: int = 0,
                 prefix: int = 0, scale: float | None = None, num_splits: int | None = None,
                 return_lse: bool = False, config: Config | str | None = None, precision: str = "ieee",
                 launch: dict | None = None):
    """Decode attention of one query per sequence over the paged cache.

    q, gate: [B, H, D]; caches [num_blocks, page_size, Hkv, D]; block_table int32 [B, max_pages];
    seq_lens int32 [B] (keys per sequence, the query is the last). Returns out [B, H, D] in q's dtype
    and, with return_lse, fp32 LSE [B, H]. num_splits=None picks a split count from the longest sequence.
    config: a Config like AUTOTUNE_CONFIGS', None for the config table's pick (kernels.config_table; default_config
    when it has none), or "auto" to tune on first use. The split count is sized by default_config's key block
    unless a Config is given, so the table's pick changes only the blocking.
    `launch` adds launch options to both kernels (machine=..., sample=False for exact profiled counters).
    """
    _check_decode(q, key_cache, value_cache, block_table, seq_lens, gate)
    if window is not None and window < 1:
        raise ValueError(f"window must be None or >= 1, got {window}")
    if n_sink < 0 or prefix < 0:
        raise ValueError("n_sink and prefix must be >= 0")
    batch, heads, dim = q.shape
    page_size, kv_heads = key_cache.shape[1], key_cache.shape[2]
    group = heads // kv_heads
    _check_config(config)
    block_n = (config if isinstance(config, Config) else default_config(dim)).kwargs["BLOCK_N"]  # sizes the splits
    max_len = int(seq_lens.max()) if batch else 0
    splits = num_splits or default_splits(max_len, batch * kv_heads, block_n)
    if splits < 1:
        raise ValueError(f"num_splits must be >= 1, got {splits}")
    out = np.empty((batch, heads, dim), dtype=q.dtype)
    lse = np.empty((batch, heads), dtype=np.float32)
    if batch == 0:
        return (out, lse) if return_lse else out
    o_part = np.empty((batch, heads, splits, dim), dtype=np.float32)
    lse_part = np.empty((batch, heads, splits), dtype=np.float32)
    qk_scale = float((dim ** -0.5 if scale is None else scale) * LOG2E)
    prec = precision if q.dtype == np.float32 else "ieee"
    args = (q, key_cache, value_cache, block_table, seq_lens, o_part, lse_part,
            q.strides[0] // q.itemsize, q.strides[1] // q.itemsize, block_table.strides[0] // block_table.itemsize,
            heads, kv_heads, group, dim, page_size, splits, qk_scale, 0 if window is None else int(window),
            max(prefix, n_sink))
    run_kernel(paged_decode_split_kernel, paged_decode_split_tuned, AUTOTUNE_CONFIGS,
               lambda m: (splits, kv_heads, batch), args, config, BLOCK_G=max(16, next_power_of_2(group)),
               BLOCK_D=max(16, next_power_of_2(dim)), PRECISION=prec, **(launch or {}))
    g = q if gate is None else gate
    paged_decode_merge_kernel[(heads, batch)](
        o_part, lse_part, g, out, lse, heads, splits, dim, g.strides[0] // g.itemsize, g.strides[1] // g.itemsize,
        out.strides[0] // out.itemsize, out.strides[1] // out.itemsize,
        BLOCK_S=max(16, next_power_of_2(splits)), BLOCK_D=max(16, next_power_of_2(dim)), HAS_GATE=gate is not None,
        **(launch or {}))
    return (out, lse) if return_lse else out


def default_config(head_dim: int) -> Config:
    """The untuned choice: 64-key blocks, 32 for head dims above 128 (halves the K/V tiles)."""
    return AUTOTUNE_CONFIGS[1] if head_dim > 128 else AUTOTUNE_CONFIGS[0]


def decode_blocks_visited(seq_lens: np.ndarray, block_n: int, *, window: int | None = None, n_sink: int = 0,
                          prefix: int = 0) -> np.ndarray:
    """Key blocks the split kernel computes per sequence (all splits together), by its own loop bounds."""
    counts = []
    for length in np.asarray(seq_lens, dtype=np.int64):
        n_glob = cdiv(min(max(prefix, n_sink), int(length)), block_n)
        lo = max(int(length) - window, 0) if window else 0
        counts.append(n_glob + max(cdiv(int(length), block_n) - max(lo // block_n, n_glob), 0))
    return np.array(counts, dtype=np.int64)


def _check_config(config) -> None:
    if not (config is None or isinstance(config, Config) or (isinstance(config, str) and config == "auto")):
        raise ValueError(f"config must be a jit Config, None or 'auto', got {config!r}")


def default_splits(max_len: int, programs: int, block_n: int, target_programs: int = 112) -> int:
    """Enough splits to give ~2 programs per compute unit, with at least 4 key blocks per split."""
    by_work = max(1, cdiv(max_len, 4 * block_n))
    by_machine = max(1, cdiv(target_programs, max(programs, 1)))
    return int(min(by_work, by_machine, 16))


def _check_cache(key_cache: np.ndarray, value_cache: np.ndarray) -> None:
    if key_cache.ndim != 4 or key_cache.shape != value_cache.shape:
        raise ValueError(f"caches must both be [num_blocks, page_size, Hkv, D], got {key_cache.shape} and "
                         f"{value_cache.shape}")
    for name, c in (("key_cache", key_cache), ("value_cache", value_cache)):
        if not c.flags.c_contiguous or c.dtype.name not in DTYPES:
            raise ValueError(f"{name} must be C-contiguous with a dtype in {DTYPES}, got {c.dtype}")


def _check_decode(q, key_cache, value_cache, block_table, seq_lens, gate) -> None:
    _check_cache(key_cache, value_cache)
    if q.ndim != 3 or q.dtype.name not in DTYPES or (q.shape[-1] > 1 and q.strides[-1] != q.itemsize):
        raise ValueError(f"q must be [B, H, D] with a contiguous last dim and a dtype in {DTYPES}")
    if key_cache.dtype != q.dtype:
        raise ValueError(f"cache dtype {key_cache.dtype} differs from q dtype {q.dtype}")
    batch, heads, dim = q.shape
    if key_cache.shape[3] != dim or key_cache.shape[2] == 0 or heads % key_cache.shape[2]:
        raise ValueError(f"q {q.shape} does not fit cache rows [Hkv, D] = {key_cache.shape[2:]}")
    if dim > 256:
        raise ValueError(f"head_dim must be <= 256, got {dim}")
    if block_table.ndim != 2 or block_table.shape[0] != batch or block_table.dtype != np.int32:
        raise ValueError(f"block_table must be int32 [B={batch}, max_pages], got {block_table.dtype} "
                         f"{block_table.shape}")
    if seq_lens.shape != (batch,) or seq_lens.dtype != np.int32:
        raise ValueError(f"seq_lens must be int32 [B={batch}], got {seq_lens.dtype} {seq_lens.shape}")
    page_size = key_cache.shape[1]
    if batch and (seq_lens.min() < 0 or seq_lens.max() > block_table.shape[1] * page_size):
        raise ValueError("seq_lens must lie in [0, max_pages * page_size]")
    if block_table.size and (block_table.min() < 0 or block_table.max() >= key_cache.shape[0]):
        raise ValueError(f"block_table entries must lie in [0, {key_cache.shape[0]})")
    if gate is not None and (gate.shape != q.shape or gate.dtype != q.dtype or gate.strides[-1] != gate.itemsize):
        raise ValueError(f"gate must match q: {q.shape} {q.dtype} with a contiguous last dim")


# ------------------------------------------------------------------------------------------ reference


def reshape_and_cache_reference(key, value, key_cache, value_cache, slot_mapping) -> tuple[np.ndarray, np.ndarray]:
    """New cache arrays with the tokens written (a numpy scatter; slots are assumed distinct, as in vLLM)."""
    kc, vc = key_cache.copy(), value_cache.copy()
    slots = np.asarray(slot_mapping)
    write = slots >= 0
    kc.reshape(-1, *kc.shape[2:])[slots[write]] = key[write]
    vc.reshape(-1, *vc.shape[2:])[slots[write]] = value[write]
    return kc, vc


def gather_sequence(cache: np.ndarray, block_table: np.ndarray, seq: int, length: int) -> np.ndarray:
    """Logical [length, Hkv, D] keys (or values) of one sequence, read through its block table."""
    pos = np.arange(length)
    return cache[block_table[seq, pos // cache.shape[1]], pos % cache.shape[1]]


def paged_decode_reference(q, key_cache, value_cache, block_table, seq_lens, gate=None, *, window=None, n_sink=0,
                           prefix=0, scale=None, return_lse=False):
    """Per-sequence dense attention in float64 over the gathered cache (the decode query is the last row)."""
    batch, heads, dim = q.shape
    group = heads // key_cache.shape[2]
    out = np.zeros((batch, heads, dim))
    lse = np.full((batch, heads), -np.inf)
    for b in range(batch):
        length = int(seq_lens[b])
        if length == 0:
            continue
        k = np.repeat(gather_sequence(key_cache, block_table, b, length).astype(np.float64), group, axis=1)
        v = np.repeat(gather_sequence(value_cache, block_table, b, length).astype(np.float64), group, axis=1)
        s = np.einsum("hd,khd->hk", q[b].astype(np.float64), k) * (dim ** -0.5 if scale is None else scale)
        mask = attention_mask(1, length, window=window, n_sink=n_sink, prefix=prefix)[0]
        s = np.where(mask, s, -np.inf)
        m = s.max(axis=1, keepdims=True)
        p = np.exp(s - m)
        out[b] = np.einsum("hk,khd->hd", p / p.sum(axis=1, keepdims=True), v)
        lse[b] = m[:, 0] + np.log(p.sum(axis=1))
    if gate is not None:
        out = out / (1.0 + np.exp(-gate.astype(np.float64)))
    return (out, lse) if return_lse else out


# ------------------------------------------------------------------------------------------- registry


def random_paged_cache(rng, seq_lens, page_size: int, kv_heads: int, dim: int, dtype, spare_pages: int = 3):
    """Caches with shuffled page assignment and random contents; returns (key_cache, value_cache, block_table)."""
    pages_per_seq = [cdiv(int(n), page_size) for n in seq_lens]
    max_pages = max(max(pages_per_seq), 1)
    num_blocks = sum(pages_per_seq) + spare_pages
    order = rng.permutation(num_blocks).astype(np.int32)
    table = np.zeros((len(seq_lens), max_pages), dtype=np.int32)
    used = 0
    for b, n in enumerate(pages_per_seq):
        table[b, :n] = order[used:used + n]
        used += n
    shape = (num_blocks, page_size, kv_heads, dim)
    return (rng.standard_normal(shape).astype(dtype), rng.standard_normal(shape).astype(dtype), table)


@register
def _cases():
    rng = np.random.default_rng(0)
    for label, lens, page, mask in (("qwen3.5 decode", [4096, 1000, 77, 2500], 16, {}),
                                    ("qwen3.5 decode window 512 + 4 sinks", [4096, 1000, 77, 2500], 256,
                                     {"window": 512, "n_sink": 4})):
        seq_lens = np.array(lens, dtype=np.int32)
        kc, vc, table = random_paged_cache(rng, seq_lens, page, 2, 256, np.float16)
        q = rng.standard_normal((len(lens), 16, 256)).astype(np.float16)
        g = rng.standard_normal(q.shape).astype(np.float16)
        block_n = default_config(256).kwargs["BLOCK_N"]
        fraction = decode_blocks_visited(seq_lens, block_n, **mask).sum() * block_n / seq_lens.sum()
        yield Case(op="paged.decode", shape=f"{label}: B={len(lens)} H=16/2 D=256 page={page} lens={lens}",
                   dtype="fp16",
                   run=lambda q=q, kc=kc, vc=vc, t=table, s=seq_lens, g=g, m=mask: paged_decode(q, kc, vc, t, s, g,
                                                                                             **m),
                   reference=lambda q=q, kc=kc, vc=vc, t=table, s=seq_lens, g=g, m=mask: paged_decode_reference(
                       q, kc, vc, t, s, g, **m),
                   # fp16: two half-ulps of the output (measured 1.2e-4): a dropped page fails
                   rtol=1e-3, atol=1e-3, min_bytes=int(fraction * seq_lens.sum()) * 2 * 2 * 256 * 2 + 3 * q.nbytes,
                   notes={"dense_flop_fraction": f"{fraction:.3f}"})
    tokens, page = 3000, 64
    key = rng.standard_normal((tokens, 2, 256)).astype(np.float16)
    value = rng.standard_normal((tokens, 2, 256)).astype(np.float16)
    kc = np.zeros((cdiv(tokens, page) + 4, page, 2, 256), dtype=np.float16)
    vc = np.zeros_like(kc)
    slots = rng.permutation(kc.shape[0] * page)[:tokens].astype(np.int32)

    def run_cache():
        kc1, vc1 = kc.copy(), vc.copy()
        reshape_and_cache(key, value, kc1, vc1, slots)
        return kc1, vc1

    yield Case(op="paged.reshape_and_cache", shape=f"T={tokens} Hkv=2 D=256 page={page}", dtype="fp16",
               run=run_cache, reference=lambda: reshape_and_cache_reference(key, value, kc, vc, slots),
               rtol=0, atol=0, min_bytes=2 * (key.nbytes + value.nbytes))
