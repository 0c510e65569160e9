"""Chunked gated delta rule for prefill (research/qwen35.md §1.6), one fused kernel.

One program owns one (sequence, value head, block of BV value columns) and walks the sequence in
64-token chunks, carrying its [dk, BV] slice of the fp32 state in registers. The state's value
columns evolve independently, so the value dimension splits across programs with no communication;
the chunk-local pieces that do not depend on the state (A, the triangular solve, W, U) are recomputed
per value block instead of being written to memory and read back as FLA's multi-kernel pipeline does.

Per chunk: G = cumsum(g); A = strictly-lower beta K K^T exp(G_i - G_j) (the differences summed directly);
Tm = (I + A)^-1 by forward substitution; W = Tm (beta e^G K); U = Tm (beta V); V' = U - W S;
O = e^G Q S + (Q K^T . M) V'; S = e^{G_C} S + (e^{G_C - G} K)^T V'. Every dot is exact fp32 ("ieee").
"""

from __future__ import annotations

import numpy as np

import dsl as tl
from jit import Config, autotune, cdiv, jit, next_power_of_2
from kernels.deltanet_common import (
    check_gates,
    check_qkv,
    check_state,
    configured,
    l2_normalise,
    normalise_cu_seqlens,
)
from kernels.deltanet_gates import load_gates

CHUNK = 64
# The value-block width trades parallelism (more programs) against recomputing A, the solve and W per block;
# the first is the default. One stage: each chunk needs the state the previous one left, so there is no load
# to pipeline, and staging buffers for the dots would only multiply shared memory (3 stages of the 64 x 128
# operands exceed the 192 KiB of an mtt-s5000 unit).
AUTOTUNE_CONFIGS: list[Config] = [Config({"BV": 64}, num_warps=4, num_stages=1),
                                  Config({"BV": 32}, num_warps=4, num_stages=1),
                                  Config({"BV": 128}, num_warps=8, num_stages=1)]


@jit(do_not_specialize=["q_st", "q_sh", "k_st", "k_sh", "v_st", "v_sh", "o_st", "o_sh", "HV", "DK", "DV", "GROUP",
                        "scale"])
def chunk_gated_delta_kernel(q_ptr, k_ptr, v_ptr, g_ptr, beta_ptr, a_ptr, b_ptr, alog_ptr, dtb_ptr, h0_ptr, o_ptr,
                             ht_ptr, cu_ptr, q_st, q_sh, k_st, k_sh, v_st, v_sh, o_st, o_sh, HV, DK, DV, GROUP,
                             scale, raw_gates, has_h0, C: tl.constexpr, BK: tl.constexpr, BV: tl.constexpr,
                             L2NORM: tl.constexpr):
    i_v = tl.program_id(0)
    i_h = tl.program_id(1)
    i_n = tl.program_id(2)
    bos = tl.load(cu_ptr + i_n).to(tl.int64)  # 64-bit token offsets: T x row stride passes 2^31 in long prompts
    eos = tl.load(cu_ptr + i_n + 1).to(tl.int64)
    i_hk = i_h // GROUP
    rk = tl.arange(0, BK)
    rv = i_v * BV + tl.arange(0, BV)
    rc = tl.arange(0, C)
    mk = rk < DK
    mv = rv < DV
    m_state = mk[:, None] & mv[None, :]
    state_offs = (i_n * HV + i_h) * DK * DV + rk[:, None] * DV + rv[None, :]
    S = tl.load(h0_ptr + state_offs, mask=m_state & has_h0, other=0.0)
    lower = rc[:, None] > rc[None, :]
    causal = rc[:, None] >= rc[None, :]
    eye = tl.where(rc[:, None] == rc[None, :], 1.0, 0.0)
    for t0 in range(bos, eos, C):
        rt = t0 + rc
        mt = rt < eos
        m_k = mt[:, None] & mk[None, :]
        k = tl.load(k_ptr + rt[:, None] * k_st + i_hk * k_sh + rk[None, :], mask=m_k, other=0.0).to(tl.float32)
        q = tl.load(q_ptr + rt[:, None] * q_st + i_hk * q_sh + rk[None, :], mask=m_k, other=0.0).to(tl.float32)
        if L2NORM:
            k = l2_normalise(k)
            q = l2_normalise(q)
        q = q * scale
        v = tl.load(v_ptr + rt[:, None] * v_st + i_h * v_sh + rv[None, :], mask=mt[:, None] & mv[None, :],
                    other=0.0).to(tl.float32)
        g, beta = load_gates(g_ptr, beta_ptr, a_ptr, b_ptr, alog_ptr, dtb_ptr, rt * HV + i_h, i_h, mt, raw_gates)
        G = tl.cumsum(g, axis=0)
        g_last = tl.sum(g, axis=0)
        # Pairwise log-decays D[i, j] = g[j+1] + ... + g[i] summed directly, not as G_i - G_j: prefix sums grow
        # large under strong decay and their difference would lose the digits that matter when i is near j.
        D = tl.cumsum(tl.where(lower, g[:, None], 0.0), axis=0)
        decay = tl.where(causal, tl.exp(D), 0.0)
        to_end = tl.sum(tl.where(rc[:, None] == C - 1, D, 0.0), axis=0)  # g[j+1] + ... + g[C-1]
        kk = tl.dot(k, tl.trans(k), input_precision="ieee")
        A = tl.where(lower, beta[:, None] * kk * decay, 0.0)
        # (I + A)^-1, unit lower triangular: row i = e_i - A[i, :] Tm, rows above i already final.
        Tm = eye
        for i in range(1, C):
            a_i = tl.sum(tl.where(rc[:, None] == i, A, 0.0), axis=0)
            t_i = tl.sum(a_i[:, None] * Tm, axis=0)
            Tm = tl.where(rc[:, None] == i, Tm - t_i[None, :], Tm)
        W = tl.dot(Tm, k * (beta * tl.exp(G))[:, None], input_precision="ieee")
        U = tl.dot(Tm, v * beta[:, None], input_precision="ieee")
        v_new = U - tl.dot(W, S, input_precision="ieee")
        qk = tl.where(causal, tl.dot(q, tl.trans(k), input_precision="ieee") * decay, 0.0)
        o = tl.exp(G)[:, None] * tl.dot(q, S, input_precision="ieee") + tl.dot(qk, v_new, input_precision="ieee")
        tl.store(o_ptr + rt[:, None] * o_st + i_h * o_sh + rv[None, :], o.to(o_ptr.dtype.element_ty),
                 mask=mt[:, None] & mv[None, :])
        k_dec = k * tl.exp(to_end)[:, None]
        S = tl.exp(g_last) * S + tl.dot(tl.trans(k_dec), v_new, input_precision="ieee")
    tl.store(ht_ptr + state_offs, S, mask=m_state)


chunk_gated_delta_tuned = autotune(configs=AUTOTUNE_CONFIGS, key=["DK", "DV", "HV"])(chunk_gated_delta_kernel)


def chunk_gated_delta_rule(q: np.ndarray, k: np.ndarray, v: np.ndarray, g: np.ndarray | None = None,
                           beta: np.ndarray | None = None, *, a: np.ndarray | None = None, b: np.ndarray | None = None,
                           A_log: np.ndarray | None = None, dt_bias: np.ndarray | None = None,
                           initial_state: np.ndarray | None = None, cu_seqlens: np.ndarray | None = None,
                           scale: float | None = None, l2norm: bool = True, config: Config | str | None = None
                           ) -> tuple[np.ndarray, np.ndarray]:
    """Prefill: o [T, HV, dv] (q's dtype) and the final fp32 states [N, HV, dk, dv].

    q, k [T, HK, dk] and v [T, HV, dv] (fp32/fp16/bf16; rows may be strided views of the conv output);
    gates either precomputed (g, beta: fp32 [T, HV]) or raw (a, b [T, HV], A_log, dt_bias [HV]) and then
    computed in the kernel. Sequences are packed along T with `cu_seqlens` [N + 1] (default: one).
    config: one of AUTOTUNE_CONFIGS (None: the config table's pick, else the first) or "auto" to tune on first use.
    """
    T, HK, HV, dk, dv = check_qkv(q, k, v)
    cu, N = normalise_cu_seqlens(cu_seqlens, T)
    gates, raw = check_gates(T, HV, g, beta, a, b, A_log, dt_bias)
    if initial_state is not None:
        check_state(initial_state, (N, HV, dk, dv), "initial_state")
    launcher = configured(config, chunk_gated_delta_kernel, chunk_gated_delta_tuned, AUTOTUNE_CONFIGS)
    o = np.empty(v.shape, dtype=q.dtype)
    ht = np.empty((N, HV, dk, dv), dtype=np.float32)
    scale = dk ** -0.5 if scale is None else float(scale)
    h0 = initial_state if initial_state is not None else ht
    st = [x.strides[i] // x.itemsize for x in (q, k, v, o) for i in (0, 1)]
    launcher[lambda m: (cdiv(dv, m["BV"]), HV, N)](
        q, k, v, *gates, h0, o, ht, cu, *st, HV, dk, dv, HV // HK, scale, raw, initial_state is not None, C=CHUNK,
        BK=next_power_of_2(dk), L2NORM=bool(l2norm))
    return o, ht
