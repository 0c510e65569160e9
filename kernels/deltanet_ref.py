"""Numpy references for Gated DeltaNet (research/qwen35.md §1.5-1.6): what the kernels must equal.

Two forms of the delta rule are here on purpose: the token-by-token recurrence is the definition
(decayed read, then update, output from the updated state), the chunked form is the algorithm the
prefill kernel runs; tests hold the kernel to the first and the benchmark times both.
Everything computes in `dtype` (float64 by default, float32 for timing) and returns that dtype.
"""

from __future__ import annotations

import numpy as np

L2_EPS = 1e-6
CHUNK = 64


def _bounds(cu_seqlens, total: int) -> list[tuple[int, int]]:
    cu = np.asarray([0, total] if cu_seqlens is None else cu_seqlens, dtype=np.int64)
    return [(int(cu[i]), int(cu[i + 1])) for i in range(len(cu) - 1)]


def silu(x: np.ndarray) -> np.ndarray:
    return x / (1.0 + np.exp(-x))


def softplus(x: np.ndarray) -> np.ndarray:
    return np.maximum(x, 0) + np.log1p(np.exp(-np.abs(x)))


def gates_ref(a, b, A_log, dt_bias, dtype=np.float64) -> tuple[np.ndarray, np.ndarray]:
    """g = -exp(A_log) * softplus(a + dt_bias) (log-decay, <= 0) and beta = sigmoid(b), both [T, HV]."""
    a, b = np.asarray(a, dtype), np.asarray(b, dtype)
    g = -np.exp(np.asarray(A_log, dtype)) * softplus(a + np.asarray(dt_bias, dtype))
    beta = 1.0 / (1.0 + np.exp(-b))
    return g, beta


def conv1d_ref(x, weight, cu_seqlens=None, initial_state=None, dtype=np.float64):
    """Causal depthwise conv (kernel K) + SiLU over packed sequences; returns (y [T, D], last K-1 inputs [N, D, K-1]).

    `initial_state[n, :, j]` holds the input K-1-j steps before sequence n starts (oldest first).
    """
    x = np.asarray(x, dtype)
    w = np.asarray(weight, dtype).reshape(x.shape[1], -1)
    K = w.shape[1]
    bounds = _bounds(cu_seqlens, x.shape[0])
    y = np.zeros_like(x)
    final = np.zeros((len(bounds), x.shape[1], K - 1), dtype)
    for n, (bos, eos) in enumerate(bounds):
        past = np.zeros((K - 1, x.shape[1]), dtype) if initial_state is None else np.asarray(initial_state[n], dtype).T
        ext = np.concatenate([past, x[bos:eos]], axis=0)
        for j in range(K):
            y[bos:eos] += w[:, j] * ext[j:j + eos - bos]
        final[n] = ext[ext.shape[0] - (K - 1):].T
    return silu(y), final


def conv1d_update_ref(x, weight, conv_state, dtype=np.float64):
    """One decode step of the conv for N sequences: returns (y [N, D], new state [N, D, K-1]); no in-place update."""
    x = np.asarray(x, dtype)
    w = np.asarray(weight, dtype).reshape(x.shape[1], -1)
    window = np.concatenate([np.asarray(conv_state, dtype), x[:, :, None]], axis=2)
    return silu((window * w[None]).sum(-1)), window[:, :, 1:]


def _prep_qk(q, k, scale, l2norm: bool, dtype):
    q, k = np.asarray(q, dtype), np.asarray(k, dtype)
    if l2norm:
        q = q / np.sqrt((q * q).sum(-1, keepdims=True) + L2_EPS)
        k = k / np.sqrt((k * k).sum(-1, keepdims=True) + L2_EPS)
    scale = q.shape[-1] ** -0.5 if scale is None else scale
    return q * scale, k


def recurrent_ref(q, k, v, g, beta, scale=None, initial_state=None, cu_seqlens=None, l2norm=True,
                  dtype=np.float64) -> tuple[np.ndarray, np.ndarray]:
    """Token-by-token gated delta rule (§1.5 step 7). q, k [T, HK, dk]; v [T, HV, dv]; g, beta [T, HV].

    Returns o [T, HV, dv] and the final states [N, HV, dk, dv].
    """
    q, k = _prep_qk(q, k, scale, l2norm, dtype)
    v, g, beta = (np.asarray(t, dtype) for t in (v, g, beta))
    HV, dk, dv = v.shape[1], q.shape[2], v.shape[2]
    group = HV // q.shape[1]
    q, k = np.repeat(q, group, axis=1), np.repeat(k, group, axis=1)
    bounds = _bounds(cu_seqlens, v.shape[0])
    o = np.zeros_like(v)
    states = np.zeros((len(bounds), HV, dk, dv), dtype)
    for n, (bos, eos) in enumerate(bounds):
        S = np.zeros((HV, dk, dv), dtype) if initial_state is None else np.array(initial_state[n], dtype)
        for t in range(bos, eos):
            S *= np.exp(g[t])[:, None, None]
            u = np.einsum("hkv,hk->hv", S, k[t])
            S += k[t][:, :, None] * (beta[t][:, None] * (v[t] - u))[:, None, :]
            o[t] = np.einsum("hkv,hk->hv", S, q[t])
        states[n] = S
    return o, states


def chunked_ref(q, k, v, g, beta, scale=None, initial_state=None, cu_seqlens=None, l2norm=True,
                dtype=np.float64, chunk: int = CHUNK) -> tuple[np.ndarray, np.ndarray]:
    """The same rule in the chunked (WY) form of §1.6, all heads of a chunk at once; same arguments and results."""
    q, k = _prep_qk(q, k, scale, l2norm, dtype)
    v, g, beta = (np.asarray(t, dtype) for t in (v, g, beta))
    HV, dk, dv = v.shape[1], q.shape[2], v.shape[2]
    group = HV // q.shape[1]
    bounds = _bounds(cu_seqlens, v.shape[0])
    o = np.zeros_like(v)
    states = np.zeros((len(bounds), HV, dk, dv), dtype)
    for n, (bos, eos) in enumerate(bounds):
        S = np.zeros((HV, dk, dv), dtype) if initial_state is None else np.array(initial_state[n], dtype)
        for t0 in range(bos, eos, chunk):
            t1 = min(t0 + chunk, eos)
            # contiguous [HV, C, d] copies: numpy's batched matmul is BLAS only on contiguous operands
            qc = np.ascontiguousarray(np.repeat(q[t0:t1], group, axis=1).transpose(1, 0, 2))
            kc = np.ascontiguousarray(np.repeat(k[t0:t1], group, axis=1).transpose(1, 0, 2))
            kt = np.ascontiguousarray(kc.transpose(0, 2, 1))  # [HV, dk, C]
            vc = np.ascontiguousarray(v[t0:t1].transpose(1, 0, 2))
            bc = beta[t0:t1].T[:, :, None]  # [HV, C, 1]
            G = np.cumsum(g[t0:t1].T, axis=1)  # [HV, C]
            diff = G[:, :, None] - G[:, None, :]
            C = t1 - t0
            lower = np.tril(np.ones((C, C), bool), -1)
            decay = np.exp(np.where(np.tril(np.ones((C, C), bool)), diff, -np.inf))
            A = np.where(lower, bc * (kc @ kt) * decay, 0)
            Tm = np.linalg.inv(np.eye(C, dtype=dtype) + A)
            W = Tm @ (bc * np.exp(G)[:, :, None] * kc)
            U = Tm @ (bc * vc)
            Vn = U - W @ S
            O = np.exp(G)[:, :, None] * (qc @ S) + ((qc @ kt) * decay) @ Vn
            o[t0:t1] = O.transpose(1, 0, 2)
            GL = G[:, -1]
            S = np.exp(GL)[:, None, None] * S + (kt * np.exp(GL[:, None] - G)[:, None, :]) @ Vn
        states[n] = S
    return o, states


def recurrent_flops(T: int, HV: int, dk: int, dv: int) -> int:
    """FLOPs of the recurrence per token and value head: decay (dk dv), read (2 dk dv), update (3 dk dv),
    output (2 dk dv)."""
    return T * HV * 8 * dk * dv


def chunked_flops(T: int, HV: int, dk: int, dv: int, chunk: int = CHUNK) -> int:
    """FLOPs of the chunked form per 64-token chunk and value head: K K^T, the triangular solve, W, U, W S,
    Q S, Q K^T, the masked (Q K^T) V', and the state update; counted at full chunks."""
    C = chunk
    nc = -(-T // C)
    per_chunk = (2 * C * C * dk  # A = K K^T
                 + C * C * C // 3 * 2  # forward substitution for (I + A)^-1
                 + 2 * C * C * dk + 2 * C * C * dv  # W, U
                 + 2 * C * dk * dv  # W S
                 + 2 * C * dk * dv  # Q S
                 + 2 * C * C * dk + 2 * C * C * dv  # Q K^T, (Q K^T . M) V'
                 + 2 * C * dk * dv + dk * dv)  # state update
    return nc * HV * per_chunk


def random_inputs(rng: np.random.Generator, T: int, HK: int, HV: int, dk: int, dv: int, dtype=np.float32) -> dict:
    """Fresh q, k [T, HK, dk], v [T, HV, dv] (dtype) and raw gate inputs a, b [T, HV], A_log, dt_bias [HV] (fp32),
    with decay rates spread from nearly none (state carried across many chunks) to strong (forgotten in a few tokens);
    plus the matching fp32 g, beta."""
    x = {"q": rng.standard_normal((T, HK, dk)) + 0.1, "k": rng.standard_normal((T, HK, dk)) - 0.1,
         "v": rng.standard_normal((T, HV, dv))}
    x = {name: t.astype(dtype) for name, t in x.items()}
    x["a"] = rng.standard_normal((T, HV)).astype(np.float32)
    x["b"] = (rng.standard_normal((T, HV)) * 2).astype(np.float32)
    x["A_log"] = np.log(np.geomspace(1e-3, 16, HV) * rng.uniform(0.8, 1.2, HV)).astype(np.float32)
    x["dt_bias"] = rng.standard_normal(HV).astype(np.float32)
    g, beta = gates_ref(x["a"], x["b"], x["A_log"], x["dt_bias"])
    x["g"], x["beta"] = g.astype(np.float32), beta.astype(np.float32)
    return x
