"""Gated DeltaNet, the linear-attention mixer of three in four Qwen3.5 layers (research/qwen35.md §1.5-1.6).

The ops live in one module each; this one re-exports them, chains them into the layer's token mixer for
prefill and decode (projections excluded: in_proj / out_proj are plain GEMMs) and registers the
benchmark cases.

    conv:   deltanet_conv.causal_conv1d / causal_conv1d_update   (q|k|v channels, kernel 4, SiLU)
    gates:  deltanet_gates.gdn_gates, and computed inside the delta-rule kernels from raw a, b
    rule:   deltanet_chunk.chunk_gated_delta_rule (prefill), deltanet_decode.gated_delta_decode (decode)
    output: norm.gated_rmsnorm per value head with z
    numpy:  deltanet_ref (token recurrence, chunked form, conv, gates; FLOP counts of both forms)

What is fused and why: the gates and the q/k L2 norm + scale run inside the delta-rule kernels (they are a
few ops per token that would otherwise be a pass over memory each). The conv stays separate: its output
feeds every value head of a key head, so fusing it would recompute it per value block. The output norm
stays separate too: it needs all dv columns of a head, which the value-blocked prefill programs split.

Error bound (fp32): the chunked prefill and the decode step stay within 2e-5 * max(1, max|ref|) of the
float64 token recurrence, outputs and states (what the tests assert; measured ~1e-7, the fp32 recurrence's
own level, for lengths up to 200 with decays from none to -1e30 per token).
"""

from __future__ import annotations

import numpy as np

from kernels import deltanet_ref as ref
from kernels._common import BF16
from kernels.deltanet_chunk import chunk_gated_delta_rule
from kernels.deltanet_common import check_activation
from kernels.deltanet_conv import causal_conv1d, causal_conv1d_update
from kernels.deltanet_decode import gated_delta_decode
from kernels.deltanet_gates import gdn_gates
from kernels.norm import gated_rmsnorm, gated_rmsnorm_reference
from kernels.registry import Case, register

__all__ = ["causal_conv1d", "causal_conv1d_update", "gdn_gates", "chunk_gated_delta_rule", "gated_delta_decode",
           "gated_deltanet_prefill", "gated_deltanet_decode", "gated_deltanet_reference", "split_qkv"]

NORM_EPS = 1e-6


def split_qkv(y: np.ndarray, num_k_heads: int, num_v_heads: int,
              head_v_dim: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Views q [T, HK, dk], k [T, HK, dk], v [T, HV, dv] into the conv output's q|k|v channels (no copies)."""
    T, D = y.shape
    value_dim = num_v_heads * head_v_dim
    key_dim2 = D - value_dim
    if key_dim2 <= 0 or key_dim2 % (2 * num_k_heads):
        raise ValueError(f"{D} channels do not split into 2 x {num_k_heads} key heads + {value_dim} value channels")
    key_dim = key_dim2 // 2
    dk = key_dim // num_k_heads
    q = y[:, :key_dim].reshape(T, num_k_heads, dk)
    k = y[:, key_dim:2 * key_dim].reshape(T, num_k_heads, dk)
    v = y[:, 2 * key_dim:].reshape(T, num_v_heads, head_v_dim)
    return q, k, v


def _check_z(z, rows: int) -> tuple[int, int]:
    check_activation("z", z, 3)
    if z.shape[0] != rows:
        raise ValueError(f"z must have {rows} rows, got shape {z.shape}")
    return z.shape[1], z.shape[2]


def gated_deltanet_prefill(mixed_qkv: np.ndarray, z: np.ndarray, a: np.ndarray, b: np.ndarray,
                           conv_weight: np.ndarray, A_log: np.ndarray, dt_bias: np.ndarray, norm_weight: np.ndarray,
                           num_k_heads: int, cu_seqlens: np.ndarray | None = None,
                           conv_state: np.ndarray | None = None, recurrent_state: np.ndarray | None = None
                           ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The token mixer over packed prompts: (o [T, HV * dv], conv states [N, conv_dim, 3], fp32 states [N, HV, dk, dv]).

    mixed_qkv [T, conv_dim] is in_proj_qkv's output (channels q | k | v, head-major); z [T, HV, dv]; a, b [T, HV];
    conv_weight [conv_dim, 4]; A_log, dt_bias fp32 [HV]; norm_weight [dv]. The returned caches continue with
    `gated_deltanet_decode`; incoming caches (one row per sequence) continue earlier prefills.
    """
    check_activation("mixed_qkv", mixed_qkv, 2)
    HV, dv = _check_z(z, mixed_qkv.shape[0])
    y, conv_out = causal_conv1d(mixed_qkv, conv_weight, cu_seqlens, conv_state)
    q, k, v = split_qkv(y, num_k_heads, HV, dv)
    o, state = chunk_gated_delta_rule(q, k, v, a=a, b=b, A_log=A_log, dt_bias=dt_bias, initial_state=recurrent_state,
                                      cu_seqlens=cu_seqlens)
    return gated_rmsnorm(o, z, norm_weight, NORM_EPS).reshape(o.shape[0], HV * dv), conv_out, state


def gated_deltanet_decode(mixed_qkv: np.ndarray, z: np.ndarray, a: np.ndarray, b: np.ndarray,
                          conv_weight: np.ndarray, A_log: np.ndarray, dt_bias: np.ndarray, norm_weight: np.ndarray,
                          num_k_heads: int, conv_state: np.ndarray, recurrent_state: np.ndarray,
                          state_indices: np.ndarray | None = None) -> np.ndarray:
    """One token for each of N sequences: o [N, HV * dv]; the conv and recurrent caches advance in place.

    Arguments as in `gated_deltanet_prefill` with N rows instead of T; the caches are [slots, ...] and row n uses
    slot `state_indices[n]` (default n).
    """
    check_activation("mixed_qkv", mixed_qkv, 2)
    HV, dv = _check_z(z, mixed_qkv.shape[0])
    y = causal_conv1d_update(mixed_qkv, conv_weight, conv_state, state_indices)
    q, k, v = split_qkv(y, num_k_heads, HV, dv)
    o = gated_delta_decode(q, k, v, recurrent_state, a=a, b=b, A_log=A_log, dt_bias=dt_bias,
                           state_indices=state_indices)
    return gated_rmsnorm(o, z, norm_weight, NORM_EPS).reshape(o.shape[0], HV * dv)


def gated_deltanet_reference(mixed_qkv, z, a, b, conv_weight, A_log, dt_bias, norm_weight, num_k_heads: int,
                             cu_seqlens=None, conv_state=None, recurrent_state=None):
    """float64 numpy version of `gated_deltanet_prefill` built on the token recurrence; same results."""
    y, conv_out = ref.conv1d_ref(mixed_qkv, conv_weight, cu_seqlens, conv_state)
    HV, dv = z.shape[1:]
    q, k, v = split_qkv(y, num_k_heads, HV, dv)
    g, beta = ref.gates_ref(a, b, A_log, dt_bias)
    o, state = ref.recurrent_ref(q, k, v, g, beta, initial_state=recurrent_state, cu_seqlens=cu_seqlens)
    out = gated_rmsnorm_reference(o, z.astype(np.float64), norm_weight.astype(np.float64), NORM_EPS)
    return out.reshape(o.shape[0], HV * dv), conv_out, state


# -- cases for `python -m kernels.check` and `python -m kernels.bench`

@register
def _cases():
    rng = np.random.default_rng(0)
    HK, HV, dk, dv = 16, 32, 128, 128  # Qwen3.5-35B-A3B / Qwen3-Next GDN heads
    conv_dim = 2 * HK * dk + HV * dv
    rtol, atol = 2e-5, 2e-5

    T, cu = 64, np.array([0, 23, 64], np.int32)
    x = rng.standard_normal((T, conv_dim)).astype(BF16)
    w = (rng.standard_normal((conv_dim, 4)) * 0.5).astype(np.float32)
    s0 = rng.standard_normal((2, conv_dim, 3)).astype(BF16)
    yield Case("deltanet.conv1d", f"T={T} (2 seqs) D={conv_dim} K=4", "bf16",
               lambda: causal_conv1d(x, w, cu, s0), lambda: ref.conv1d_ref(x, w, cu, s0),
               8e-3, 8e-3, min_bytes=2 * x.nbytes + w.nbytes + 2 * s0.nbytes)

    xd = rng.standard_normal((8, conv_dim)).astype(BF16)
    sd = rng.standard_normal((8, conv_dim, 3)).astype(BF16)
    yield Case("deltanet.conv1d_update", f"N=8 D={conv_dim} K=4", "bf16",
               lambda: _conv_update_run(xd, w, sd), lambda: ref.conv1d_update_ref(xd, w, sd),
               8e-3, 8e-3, min_bytes=2 * xd.nbytes + w.nbytes + 2 * sd.nbytes)

    a = rng.standard_normal((256, HV)).astype(np.float32)
    bg = rng.standard_normal((256, HV)).astype(np.float32)
    A_log = np.log(rng.uniform(1, 16, HV)).astype(np.float32)
    dt_bias = rng.standard_normal(HV).astype(np.float32)
    yield Case("deltanet.gates", f"T=256 HV={HV}", "fp32", lambda: gdn_gates(a, bg, A_log, dt_bias),
               lambda: ref.gates_ref(a, bg, A_log, dt_bias), 1e-5, 1e-6, min_bytes=4 * a.nbytes)

    q = rng.standard_normal((T, HK, dk)).astype(np.float32)
    k = rng.standard_normal((T, HK, dk)).astype(np.float32)
    v = rng.standard_normal((T, HV, dv)).astype(np.float32)
    g, beta = (t.astype(np.float32) for t in ref.gates_ref(a[:T], bg[:T], A_log, dt_bias))
    h0 = (rng.standard_normal((2, HV, dk, dv)) * 0.1).astype(np.float32)
    args = (q, k, v, g, beta)
    flops = {"flops_chunked": ref.chunked_flops(T, HV, dk, dv), "flops_recurrent": ref.recurrent_flops(T, HV, dk, dv)}
    flops["chunked/recurrent"] = f"{flops['flops_chunked'] / flops['flops_recurrent']:.2f}"
    shape = f"T={T} (2 seqs) HK={HK} HV={HV} dk=dv={dk} h0"
    run = lambda: chunk_gated_delta_rule(*args, initial_state=h0, cu_seqlens=cu)  # noqa: E731
    nbytes = q.nbytes * 2 + v.nbytes * 2 + g.nbytes * 2 + h0.nbytes * 2
    # Twice, so the benchmark times the kernel against both numpy forms (each float64, the checked reference).
    yield Case("deltanet.chunk_prefill", shape, "fp32", run,
               lambda: ref.recurrent_ref(*args, initial_state=h0, cu_seqlens=cu), rtol, atol, nbytes,
               notes={"numpy": "token recurrence", **flops})
    yield Case("deltanet.chunk_prefill", shape, "fp32", run,
               lambda: ref.chunked_ref(*args, initial_state=h0, cu_seqlens=cu), rtol, atol, nbytes,
               notes={"numpy": "chunked form", **flops})

    qd, kd, vd = q[:8], k[:8], v[:8]
    state = (rng.standard_normal((12, HV, dk, dv)) * 0.1).astype(np.float32)
    idx = np.array([11, 0, 5, 3, 2, 9, 7, 1], np.int32)
    yield Case("deltanet.decode", f"N=8 HK={HK} HV={HV} dk=dv={dk}", "fp32",
               lambda: gated_delta_decode(qd, kd, vd, state.copy(), a=a[:8], b=bg[:8], A_log=A_log, dt_bias=dt_bias,
                                          state_indices=idx),
               lambda: _decode_reference(qd, kd, vd, a[:8], bg[:8], A_log, dt_bias, state[idx]), rtol, atol,
               min_bytes=state[:8].nbytes * 2 + vd.nbytes * 2 + qd.nbytes * 2,
               notes={"flops_recurrent": ref.recurrent_flops(8, HV, dk, dv)})


def _conv_update_run(x, w, state):
    state = state.copy()
    return causal_conv1d_update(x, w, state), state


def _decode_reference(q, k, v, a, b, A_log, dt_bias, states):
    """Per-sequence one-token recurrence (each row its own sequence with its own state)."""
    g, beta = ref.gates_ref(a, b, A_log, dt_bias)
    cu = np.arange(q.shape[0] + 1)
    return ref.recurrent_ref(q, k, v, g, beta, initial_state=states, cu_seqlens=cu)[0]
