"""Hybrid attention prefill: one fused flash-attention forward kernel for Qwen3.5's gated full attention.

One kernel covers every mask the model family needs (causal, sliding window, sink tokens, a
bidirectional multimodal prefix), GQA, Qwen3.5's output gate and the log-sum-exp output. The mask
is one predicate on (query position qp, key position j), with qp bottom-right aligned
(qp = i + Sk - Sq, FlashAttention's convention):

    visible(qp, j) =  j < prefix                                   (multimodal prefix: seen by all)
                   or (j < n_sink and j <= qp)                     (sink / global tokens, causal)
                   or (j <= qp and qp - j < window)                (causal band; window=None: no limit)

(`causal=False` drops the `j <= qp` terms.) A window of W is FlashAttention's `(W - 1, 0)`.
Prefix queries (qp < prefix) see the whole prefix and nothing after it: bidirectional among
themselves. Each program walks only the key blocks that intersect [0, global_end) or the band
[lo, hi) of its query block, so the work grows with the visible area, not with Sq * Sk.
"""

from __future__ import annotations

import numpy as np

import dsl as tl
from jit import Config, autotune, cdiv, jit, next_power_of_2
from kernels import config_table
from kernels._common import resolve
from kernels.config_table import with_default
from kernels.registry import Case, register

LOG2E = 1.4426950408889634
DTYPES = ("float32", "float16", "bfloat16")

# Block shapes (BLOCK_M query rows x BLOCK_N keys) and warps: the autotuner's search space. default_config picks
# the first entry for head dims up to 128 and the second above, where 64-key blocks of K^T and V would be 64 KiB
# of fp32 each.
AUTOTUNE_CONFIGS: list[Config] = [
    Config({"BLOCK_M": 64, "BLOCK_N": 64}, num_warps=4),
    Config({"BLOCK_M": 64, "BLOCK_N": 32}, num_warps=4),
    Config({"BLOCK_M": 32, "BLOCK_N": 64}, num_warps=4),
    Config({"BLOCK_M": 128, "BLOCK_N": 64}, num_warps=8),
    Config({"BLOCK_M": 32, "BLOCK_N": 32}, num_warps=2),
]

_RUNTIME_ARGS = [
    "q_ptr", "k_ptr", "v_ptr", "gate_ptr", "out_ptr", "lse_ptr", "visited_ptr",
    "stride_qb", "stride_qs", "stride_qh", "stride_kb", "stride_ks", "stride_kh", "stride_vb", "stride_vs",
    "stride_vh", "stride_gb", "stride_gs", "stride_gh", "stride_ob", "stride_os", "stride_oh",
    "seq_q", "seq_k", "num_heads", "group", "head_dim", "qk_scale", "window", "n_sink", "prefix", "causal",
    "count_blocks",
]


@jit(do_not_specialize=_RUNTIME_ARGS)
def attention_fwd_kernel(q_ptr, k_ptr, v_ptr, gate_ptr, out_ptr, lse_ptr, visited_ptr,
                         stride_qb, stride_qs, stride_qh, stride_kb, stride_ks, stride_kh,
                         stride_vb, stride_vs, stride_vh, stride_gb, stride_gs, stride_gh,
                         stride_ob, stride_os, stride_oh,
                         seq_q, seq_k, num_heads, group, head_dim, qk_scale, window, n_sink, prefix, causal,
                         count_blocks, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_D: tl.constexpr,
                         HAS_GATE: tl.constexpr, PRECISION: tl.constexpr):
    """One program: BLOCK_M queries of one head of one batch entry, online softmax over its visible key blocks."""
    pid_m = tl.program_id(0)
    head = tl.program_id(1)
    batch = tl.program_id(2).to(tl.int64)  # 64-bit addressing: 256K-token contexts overflow 32-bit offsets
    kv_head = head // group
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = tl.arange(0, BLOCK_N)
    offs_d = tl.arange(0, BLOCK_D)
    row_ok = offs_m < seq_q
    d_ok = offs_d < head_dim
    shift = seq_k - seq_q
    qpos = offs_m + shift

    rows = offs_m.to(tl.int64)
    q_rows = q_ptr + batch * stride_qb + head * stride_qh + rows[:, None] * stride_qs
    q = tl.load(q_rows + offs_d[None, :], mask=row_ok[:, None] & d_ok[None, :], other=0.0)
    k_base = k_ptr + batch * stride_kb + kv_head * stride_kh
    v_base = v_ptr + batch * stride_vb + kv_head * stride_vh

    # Key ranges this query block can see: the global range [0, global_end) and the band [lo, hi).
    first_q = pid_m * BLOCK_M + shift
    last_q = tl.minimum(pid_m * BLOCK_M + BLOCK_M, seq_q) - 1 + shift
    hi = tl.where(causal != 0, last_q + 1, seq_k)
    hi = tl.minimum(tl.maximum(hi, tl.where(first_q < prefix, prefix, 0)), seq_k)
    global_end = tl.minimum(tl.maximum(prefix, tl.minimum(n_sink, hi)), seq_k)
    lo = tl.where(window > 0, tl.maximum(first_q - window + 1, 0), 0)
    n_global = tl.cdiv(global_end, BLOCK_N)
    band_start = tl.maximum(lo // BLOCK_N, n_global)
    n_band = tl.maximum(tl.cdiv(hi, BLOCK_N) - band_start, 0)
    n_blocks = n_global + n_band

    m_i = tl.full((BLOCK_M,), -float("inf"), tl.float32)
    l_i = tl.zeros((BLOCK_M,), tl.float32)
    acc = tl.zeros((BLOCK_M, BLOCK_D), tl.float32)
    for t in range(0, n_blocks):
        start = tl.where(t < n_global, t, band_start + t - n_global) * BLOCK_N
        keys = start + offs_n
        key_ok = keys < seq_k
        key_rows = keys.to(tl.int64)
        kt = tl.load(k_base + key_rows[None, :] * stride_ks + offs_d[:, None], mask=d_ok[:, None] & key_ok[None, :],
                     other=0.0)
        s = tl.dot(q, kt, input_precision=PRECISION) * qk_scale
        before = (keys[None, :] <= qpos[:, None]) | (causal == 0)
        in_window = (window <= 0) | (qpos[:, None] - keys[None, :] < window)
        visible = (keys[None, :] < prefix) | (before & ((keys[None, :] < n_sink) | in_window))
        s = tl.where(visible & key_ok[None, :], s, -float("inf"))
        m_new = tl.maximum(m_i, tl.max(s, axis=1))
        m_safe = tl.where(m_new == -float("inf"), 0.0, m_new)
        p = tl.exp2(s - m_safe[:, None])
        alpha = tl.exp2(m_i - m_safe)
        l_i = l_i * alpha + tl.sum(p, axis=1)
        v = tl.load(v_base + key_rows[:, None] * stride_vs + offs_d[None, :], mask=key_ok[:, None] & d_ok[None, :],
                    other=0.0)
        acc = acc * alpha[:, None] + tl.dot(p.to(v.dtype), v, input_precision=PRECISION)
        m_i = m_new

    has_keys = l_i > 0
    o = acc / tl.where(has_keys, l_i, 1.0)[:, None]
    out_mask = row_ok[:, None] & d_ok[None, :]
    if HAS_GATE:
        g_rows = gate_ptr + batch * stride_gb + head * stride_gh + rows[:, None] * stride_gs
        g = tl.load(g_rows + offs_d[None, :], mask=out_mask, other=0.0).to(tl.float32)
        o = o * tl.sigmoid(g)
    o_rows = out_ptr + batch * stride_ob + head * stride_oh + rows[:, None] * stride_os
    tl.store(o_rows + offs_d[None, :], o.to(out_ptr.dtype.element_ty), mask=out_mask)
    lse = tl.where(has_keys, (m_i + tl.log2(tl.where(has_keys, l_i, 1.0))) * 0.6931471805599453, -float("inf"))
    tl.store(lse_ptr + (batch * num_heads + head) * seq_q + offs_m, lse, mask=row_ok)
    if count_blocks != 0:  # debug output: key blocks this program computed
        program = (batch * num_heads + head) * tl.num_programs(0) + pid_m
        tl.store(visited_ptr + program, n_blocks)


_NO_COUNTS = np.zeros(1, dtype=np.int32)  # the counter argument when no counts are asked for (never written)

# Tuned once per head shape and mask kind (not per length: a sweep compiles every config), on modeled time.
attention_fwd_tuned = with_default(
    autotune(configs=AUTOTUNE_CONFIGS, key=["head_dim", "group", "causal", "HAS_GATE"])(attention_fwd_kernel),
    lambda named: default_config(int(named["head_dim"])))


# ----------------------------------------------------------------------------------------------- host


def attention(q: np.ndarray, k: np.ndarray, v: np.ndarray, gate: np.ndarray | None = None, *, causal: bool = True,
              window: int | None = None, n_sink: int = 0, prefix: int = 0, scale: float | None = None,
              return_lse: bool = False, config: Config | str | None = None, visited: np.ndarray | None = None,
              precision: str = "ieee", launch: dict | None = None, out: np.ndarray | None = None):
    """Gated flash attention forward.

    q, gate: [B, Sq, H, D] (or [Sq, H, D]); k, v: [B, Sk, Hkv, D] with H % Hkv == 0 and Sq <= Sk
    (queries are the last Sq positions). The last dimension must be contiguous; other strides are free,
    so Qwen3.5's interleaved q|gate projection can be passed as two views. Returns out (q's dtype,
    [B, Sq, H, D]) and, with return_lse, the natural-log LSE as fp32 [B, H, Sq]. `visited`, an int32
    array of cdiv(Sq, BLOCK_M) * H * B entries, receives the number of key blocks each program computed.
    config: a Config of AUTOTUNE_CONFIGS' form, None for the machine's config table's pick (kernels.config_table;
    default_config when it has none), or "auto" to tune on first use.
    fp32 inputs use exact fp32 dots unless precision="tf32". `launch` adds launch options (machine=...,
    sample=False for exact simulator counters of a profiled launch). `out`: an array of the output's shape and
    dtype (any strides, head dimension contiguous) to write into instead of a new one, e.g. a sequence's rows of
    a packed batch.
    """
    squeeze = q.ndim == 3
    q, k, v, gate = (None if a is None else (a[None] if squeeze and a.ndim == 3 else a) for a in (q, k, v, gate))
    _check_inputs(q, k, v, gate)
    batch, seq_q, heads, dim = q.shape
    seq_k, kv_heads = k.shape[1], k.shape[2]
    window = _check_mask_args(seq_k, causal, window, n_sink, prefix)
    if not (config is None or isinstance(config, Config) or (isinstance(config, str) and config == "auto")):
        raise ValueError(f"config must be a jit Config, None or 'auto', got {config!r}")
    out = _output(out, (batch, seq_q, heads, dim), q.dtype, squeeze)
    lse = np.empty((batch, heads, seq_q), dtype=np.float32)  # always written: 1/D of the output's bytes
    counts = _NO_COUNTS if visited is None else visited
    args = (q, k, v, q if gate is None else gate, out, lse, counts,
            *_strides(q), *_strides(k), *_strides(v), *_strides(q if gate is None else gate), *_strides(out),
            seq_q, seq_k, heads, heads // kv_heads, dim, float((dim ** -0.5 if scale is None else scale) * LOG2E),
            window, min(n_sink, seq_k), min(prefix, seq_k), int(causal), int(visited is not None))
    meta = dict(BLOCK_D=max(16, next_power_of_2(dim)), HAS_GATE=gate is not None,
                PRECISION=_precision(q.dtype, precision), **(launch or {}))
    # a counts array is sized by the config's BLOCK_M, so it pins the config (the table's pick, not a capture)
    if visited is not None and config is None:
        cfg = config_table.pick(attention_fwd_tuned, AUTOTUNE_CONFIGS, args, meta)
    else:
        cfg = resolve(attention_fwd_tuned, AUTOTUNE_CONFIGS, args, meta, config)
    if visited is not None:
        programs = (0 if cfg is None else cdiv(seq_q, cfg.kwargs["BLOCK_M"])) * heads * batch
        if cfg is None or visited.dtype != np.int32 or visited.size != programs:
            raise ValueError(f"visited must be int32 with {programs} entries (not with config='auto'), got "
                             f"{visited.dtype} {visited.shape}")
    if seq_q:
        grid = lambda meta: (cdiv(seq_q, meta["BLOCK_M"]), heads, batch)  # noqa: E731
        if cfg is None:
            attention_fwd_tuned[grid](*args, **meta)
        else:
            attention_fwd_kernel[grid](*args, **meta, **cfg.all_kwargs())
    if squeeze:
        out, lse = out[0], lse[0]
    return (out, lse) if return_lse else out


def _output(out: np.ndarray | None, shape: tuple[int, ...], dtype, squeeze: bool) -> np.ndarray:
    if out is None:
        return np.empty(shape, dtype=dtype)
    view = out[None] if squeeze and isinstance(out, np.ndarray) and out.ndim == 3 else out
    if (not isinstance(view, np.ndarray) or view.shape != shape or view.dtype != dtype or not view.flags.writeable
            or (shape[-1] > 1 and view.strides[-1] != view.itemsize)):
        raise ValueError(f"out must be a writeable {np.dtype(dtype)} array of shape {shape} with a contiguous head "
                         f"dimension, got {getattr(out, 'dtype', type(out).__name__)} {getattr(out, 'shape', '')}")
    return view


def default_config(head_dim: int) -> Config:
    """The untuned choice: 64x64 blocks, 64x32 for head dims above 128 (halves the K/V tiles)."""
    return AUTOTUNE_CONFIGS[1] if head_dim > 128 else AUTOTUNE_CONFIGS[0]


def kv_blocks_visited(seq_q: int, seq_k: int, block_m: int, block_n: int, *, causal: bool = True,
                      window: int | None = None, n_sink: int = 0, prefix: int = 0) -> np.ndarray:
    """Key blocks each query block computes, by the kernel's own loop bounds (for FLOP accounting)."""
    window = window or 0
    counts = []
    for pid in range(cdiv(seq_q, block_m)):
        first_q = pid * block_m + seq_k - seq_q
        last_q = min(pid * block_m + block_m, seq_q) - 1 + seq_k - seq_q
        hi = min(max(last_q + 1 if causal else seq_k, prefix if first_q < prefix else 0), seq_k)
        global_end = min(max(prefix, min(n_sink, hi)), seq_k)
        lo = max(first_q - window + 1, 0) if window > 0 else 0
        n_global = cdiv(global_end, block_n)
        counts.append(n_global + max(cdiv(hi, block_n) - max(lo // block_n, n_global), 0))
    return np.array(counts, dtype=np.int64)


def dense_flop_fraction(seq_q: int, seq_k: int, head_dim: int, config: Config | None = None, **mask) -> float:
    """Dot FLOPs the kernel computes over those of dense (unmasked) attention of the same shape."""
    meta = (config or default_config(head_dim)).kwargs
    visited = kv_blocks_visited(seq_q, seq_k, meta["BLOCK_M"], meta["BLOCK_N"], **mask).sum()
    return float(visited * meta["BLOCK_M"] * meta["BLOCK_N"]) / (seq_q * seq_k)


def _precision(dtype, precision: str) -> str:
    if precision not in ("ieee", "tf32"):
        raise ValueError(f"precision must be 'ieee' or 'tf32', got {precision!r}")
    return precision if dtype == np.float32 else "ieee"


def _strides(a: np.ndarray) -> tuple[int, int, int]:
    return tuple(s // a.itemsize for s in a.strides[:3])


def _check_inputs(q, k, v, gate) -> None:
    for name, a in (("q", q), ("k", k), ("v", v), ("gate", gate)):
        if a is None:
            continue
        if not isinstance(a, np.ndarray) or a.ndim != 4:
            raise ValueError(f"{name} must be a 4-D [B, S, heads, D] (or 3-D [S, heads, D]) array")
        if a.dtype.name not in DTYPES:
            raise ValueError(f"{name}: dtype must be one of {DTYPES}, got {a.dtype}")
        if a.dtype != q.dtype:
            raise ValueError(f"{name} has dtype {a.dtype}, q has {q.dtype}; all inputs need one dtype")
        if a.shape[-1] > 1 and a.strides[-1] != a.itemsize:
            raise ValueError(f"{name}: the head dimension must be contiguous (stride {a.itemsize} bytes)")
    if k.shape != v.shape:
        raise ValueError(f"k and v shapes differ: {k.shape} vs {v.shape}")
    if q.shape[0] != k.shape[0] or q.shape[3] != k.shape[3]:
        raise ValueError(f"q {q.shape} and k {k.shape} disagree on batch or head_dim")
    if q.shape[3] > 256 or q.shape[3] < 1:
        raise ValueError(f"head_dim must be 1..256, got {q.shape[3]}")
    if k.shape[2] == 0 or q.shape[2] % k.shape[2]:
        raise ValueError(f"query heads ({q.shape[2]}) must be a multiple of KV heads ({k.shape[2]})")
    if q.shape[1] > k.shape[1]:
        raise ValueError(f"more queries ({q.shape[1]}) than keys ({k.shape[1]}): queries are the last Sq keys")
    if gate is not None and gate.shape != q.shape:
        raise ValueError(f"gate shape {gate.shape} differs from q shape {q.shape}")


def _check_mask_args(seq_k: int, causal: bool, window: int | None, n_sink: int, prefix: int) -> int:
    if window is not None and window < 1:
        raise ValueError(f"window must be None or >= 1 keys (FlashAttention (W-1, 0)), got {window}")
    if n_sink < 0 or prefix < 0:
        raise ValueError(f"n_sink ({n_sink}) and prefix ({prefix}) must be >= 0 (values past Sk={seq_k} are clipped)")
    return 0 if window is None else int(window)


# ------------------------------------------------------------------------------------------ reference


def attention_mask(seq_q: int, seq_k: int, *, causal: bool = True, window: int | None = None, n_sink: int = 0,
                   prefix: int = 0) -> np.ndarray:
    """Dense boolean [Sq, Sk] mask of the module docstring's predicate."""
    qpos = np.arange(seq_q)[:, None] + seq_k - seq_q
    keys = np.arange(seq_k)[None, :]
    before = keys <= qpos if causal else np.ones((seq_q, seq_k), bool)
    in_window = np.ones_like(before) if window is None else qpos - keys < window
    return (keys < prefix) | (before & ((keys < n_sink) | in_window))


def attention_reference(q: np.ndarray, k: np.ndarray, v: np.ndarray, gate: np.ndarray | None = None, *,
                        causal: bool = True, window: int | None = None, n_sink: int = 0, prefix: int = 0,
                        scale: float | None = None, return_lse: bool = False):
    """Dense masked attention in float64 (rows with no visible key give 0 and LSE -inf)."""
    squeeze = q.ndim == 3
    q, k, v = (a[None] if squeeze else a for a in (q, k, v))
    q64, k64, v64 = (a.astype(np.float64) for a in (q, k, v))
    heads, kv_heads, dim = q.shape[2], k.shape[2], q.shape[3]
    k64 = np.repeat(k64, heads // kv_heads, axis=2).transpose(0, 2, 3, 1)  # [B, H, D, Sk]
    v64 = np.repeat(v64, heads // kv_heads, axis=2).transpose(0, 2, 1, 3)  # [B, H, Sk, D]
    s = (q64.transpose(0, 2, 1, 3) @ k64) * (dim ** -0.5 if scale is None else scale)
    mask = attention_mask(q.shape[1], k.shape[1], causal=causal, window=window, n_sink=n_sink, prefix=prefix)
    s = np.where(mask, s, -np.inf)
    m = s.max(axis=-1, keepdims=True)
    m = np.where(np.isfinite(m), m, 0.0)
    p = np.exp(s - m)
    denom = p.sum(axis=-1, keepdims=True)
    out = ((p / np.where(denom > 0, denom, 1.0)) @ v64).transpose(0, 2, 1, 3)
    if gate is not None:
        g = (gate[None] if squeeze else gate).astype(np.float64)
        out = out / (1.0 + np.exp(-g))
    with np.errstate(divide="ignore"):
        lse = np.where(denom[..., 0] > 0, m[..., 0] + np.log(denom[..., 0]), -np.inf)
    if squeeze:
        out, lse = out[0], lse[0]
    return (out, lse) if return_lse else out


# ------------------------------------------------------------------------------------------- registry


@register
def _cases():
    rng = np.random.default_rng(0)
    shapes = [  # (label, B, S, H, Hkv, D, mask)
        ("qwen3.5 causal", 1, 256, 16, 2, 256, {}),
        ("qwen3.5 window 64 + 4 sinks", 1, 512, 16, 2, 256, {"window": 64, "n_sink": 4}),
        ("prefix 96 + causal", 1, 384, 4, 2, 128, {"prefix": 96}),
    ]
    for label, batch, seq, heads, kv_heads, dim, mask in shapes:
        q = rng.standard_normal((batch, seq, heads, dim)).astype(np.float16)
        k = rng.standard_normal((batch, seq, kv_heads, dim)).astype(np.float16)
        v = rng.standard_normal((batch, seq, kv_heads, dim)).astype(np.float16)
        g = rng.standard_normal((batch, seq, heads, dim)).astype(np.float16)
        fraction = dense_flop_fraction(seq, seq, dim, **mask)
        yield Case(op="attention.prefill", shape=f"{label}: B={batch} S={seq} H={heads}/{kv_heads} D={dim}",
                   dtype="fp16",
                   run=lambda q=q, k=k, v=v, g=g, mask=mask: attention(q, k, v, g, **mask),
                   reference=lambda q=q, k=k, v=v, g=g, mask=mask: attention_reference(q, k, v, g, **mask),
                   # fp16: two half-ulps of the output (measured 3e-4): a 1% softmax-scale error fails
                   rtol=1e-3, atol=1e-3, min_bytes=q.nbytes * 3 + k.nbytes * 2,
                   notes={"dense_flop_fraction": f"{fraction:.3f}"})
