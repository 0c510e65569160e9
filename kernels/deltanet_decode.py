"""Recurrent gated delta rule for decode: one token per sequence, the fp32 state updated in place.

One program owns one (sequence, value head, block of BV state columns): it loads the [dk, BV] slice,
decays it, reads u = S^T k from the decayed state, writes the delta update and produces o = S^T q from
the updated state (research/qwen35.md §1.5 step 7). Sequences of any length share one launch: the
state is all a sequence carries, and `state_indices` maps each row to its slot in the state cache.
"""

from __future__ import annotations

import numpy as np

import dsl as tl
from jit import Config, autotune, cdiv, jit, next_power_of_2
from kernels.deltanet_common import (
    check_gates,
    check_qkv,
    check_state,
    check_state_indices,
    configured,
    l2_normalise,
)
from kernels.deltanet_gates import load_gates

# State columns per program: more programs for a small batch against fewer, longer ones; the first is the default.
AUTOTUNE_CONFIGS: list[Config] = [Config({"BV": 32}, num_warps=4), Config({"BV": 16}, num_warps=2),
                                  Config({"BV": 64}, num_warps=4), Config({"BV": 128}, num_warps=8)]


@jit(do_not_specialize=["q_sn", "q_sh", "k_sn", "k_sh", "v_sn", "v_sh", "o_sn", "o_sh", "HV", "DK", "DV", "GROUP",
                        "scale"])
def gated_delta_decode_kernel(q_ptr, k_ptr, v_ptr, g_ptr, beta_ptr, a_ptr, b_ptr, alog_ptr, dtb_ptr, state_ptr,
                              idx_ptr, o_ptr, q_sn, q_sh, k_sn, k_sh, v_sn, v_sh, o_sn, o_sh, HV, DK, DV, GROUP, scale,
                              raw_gates, has_idx, BK: tl.constexpr, BV: tl.constexpr, L2NORM: tl.constexpr):
    i_v = tl.program_id(0)
    i_h = tl.program_id(1)
    i_n = tl.program_id(2)
    slot = tl.where(has_idx, tl.load(idx_ptr + i_n * has_idx), i_n).to(tl.int64)
    i_hk = i_h // GROUP
    rk = tl.arange(0, BK)
    rv = i_v * BV + tl.arange(0, BV)
    mk = rk < DK
    mv = rv < DV
    k = tl.load(k_ptr + i_n * k_sn + i_hk * k_sh + rk, mask=mk, other=0.0).to(tl.float32)
    q = tl.load(q_ptr + i_n * q_sn + i_hk * q_sh + rk, mask=mk, other=0.0).to(tl.float32)
    if L2NORM:
        k = l2_normalise(k)
        q = l2_normalise(q)
    q = q * scale
    v = tl.load(v_ptr + i_n * v_sn + i_h * v_sh + rv, mask=mv, other=0.0).to(tl.float32)
    g, beta = load_gates(g_ptr, beta_ptr, a_ptr, b_ptr, alog_ptr, dtb_ptr, i_n * HV + i_h, i_h, True, raw_gates)
    state_offs = (slot * HV + i_h) * DK * DV + rk[:, None] * DV + rv[None, :]
    m_state = mk[:, None] & mv[None, :]
    S = tl.load(state_ptr + state_offs, mask=m_state, other=0.0) * tl.exp(g)
    u = tl.sum(S * k[:, None], axis=0)
    S = S + k[:, None] * (beta * (v - u))[None, :]
    o = tl.sum(S * q[:, None], axis=0)
    tl.store(state_ptr + state_offs, S, mask=m_state)
    tl.store(o_ptr + i_n * o_sn + i_h * o_sh + rv, o.to(o_ptr.dtype.element_ty), mask=mv)


# Tuning runs every config on the same call, so the state it updates in place is restored between trials.
gated_delta_decode_tuned = autotune(configs=AUTOTUNE_CONFIGS, key=["DK", "DV", "HV"], restore_value=["state_ptr"])(
    gated_delta_decode_kernel)


def gated_delta_decode(q: np.ndarray, k: np.ndarray, v: np.ndarray, state: np.ndarray, g: np.ndarray | None = None,
                       beta: np.ndarray | None = None, *, a: np.ndarray | None = None, b: np.ndarray | None = None,
                       A_log: np.ndarray | None = None, dt_bias: np.ndarray | None = None,
                       state_indices: np.ndarray | None = None, scale: float | None = None, l2norm: bool = True,
                       config: Config | str | None = None) -> np.ndarray:
    """One decode step for N sequences: returns o [N, HV, dv] (q's dtype) and updates `state` in place.

    q, k [N, HK, dk], v [N, HV, dv] (one token per sequence); state fp32 [slots, HV, dk, dv]; row n uses
    slot `state_indices[n]` (default n; slots must be distinct). Gates as in `chunk_gated_delta_rule`.
    config: one of AUTOTUNE_CONFIGS (None: the config table's pick, else the first) or "auto" to tune on first use.
    """
    N, HK, HV, dk, dv = check_qkv(q, k, v, lead="N")
    gates, raw = check_gates(N, HV, g, beta, a, b, A_log, dt_bias)
    if not isinstance(state, np.ndarray) or state.ndim != 4:
        raise ValueError(f"state must be a float32 array [slots, {HV}, {dk}, {dv}], "
                         f"got {getattr(state, 'shape', type(state).__name__)}")
    check_state(state, (state.shape[0], HV, dk, dv))
    idx = check_state_indices(state_indices, N, state.shape[0])
    launcher = configured(config, gated_delta_decode_kernel, gated_delta_decode_tuned, AUTOTUNE_CONFIGS)
    o = np.empty(v.shape, dtype=q.dtype)
    if N == 0:
        return o
    st = [x.strides[i] // x.itemsize for x in (q, k, v, o) for i in (0, 1)]
    launcher[lambda m: (cdiv(dv, m["BV"]), HV, N)](
        q, k, v, *gates, state, idx, o, *st, HV, dk, dv, HV // HK, dk ** -0.5 if scale is None else float(scale), raw,
        state_indices is not None, BK=next_power_of_2(dk), L2NORM=bool(l2norm))
    return o
