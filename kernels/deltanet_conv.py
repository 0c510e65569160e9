"""Causal depthwise conv1d + SiLU over the concatenated q|k|v channels (research/qwen35.md §1.5 step 1).

`y[t, c] = silu(sum_j w[c, j] * x[t - K + 1 + j, c])`, with inputs before a sequence's start taken from its
conv state (the last K - 1 inputs seen, oldest first) or zero. Prefill runs over packed sequences
(`cu_seqlens`) and returns the state each sequence leaves; decode takes one token per sequence and
shifts the cached state in place.
"""

from __future__ import annotations

import numpy as np

import dsl as tl
from jit import Config, autotune, cdiv, jit, next_power_of_2
from kernels._common import FLOAT_DTYPES
from kernels.deltanet_common import check_activation, check_state_indices, configured, normalise_cu_seqlens

# Tokens x channels per program (the first of each list is the default).
AUTOTUNE_CONFIGS: list[Config] = [
    Config({"BT": 32, "BD": 128}, num_warps=4),
    Config({"BT": 16, "BD": 128}, num_warps=4),
    Config({"BT": 32, "BD": 256}, num_warps=4),
    Config({"BT": 64, "BD": 128}, num_warps=8),
]
UPDATE_AUTOTUNE_CONFIGS: list[Config] = [Config({"BD": 256}, num_warps=2), Config({"BD": 1024}, num_warps=4),
                                         Config({"BD": 128}, num_warps=1)]


@jit(do_not_specialize=["D", "x_st", "y_st"])
def conv1d_kernel(x_ptr, w_ptr, s0_ptr, y_ptr, st_ptr, cu_ptr, D, x_st, y_st, has_s0, KW: tl.constexpr,
                  BT: tl.constexpr, BD: tl.constexpr):
    i_d = tl.program_id(0)
    i_n = tl.program_id(1)
    i_t = tl.program_id(2)
    bos = tl.load(cu_ptr + i_n).to(tl.int64)  # 64-bit token offsets: T x row stride passes 2^31 in long prompts
    L = tl.load(cu_ptr + i_n + 1) - bos
    rd = i_d * BD + tl.arange(0, BD)
    md = rd < D
    if i_t * BT < L:
        rt = i_t * BT + tl.arange(0, BT)
        mt = rt < L
        acc = tl.zeros((BT, BD), dtype=tl.float32)
        for j in tl.static_range(KW):
            p = rt - (KW - 1) + j  # position of the tap relative to the sequence start
            m = (mt & (p >= 0))[:, None] & md[None, :]
            xv = tl.load(x_ptr + (bos + p)[:, None] * x_st + rd[None, :], mask=m, other=0.0).to(tl.float32)
            if i_t == 0:  # only the first block reaches back before the sequence
                ms = (mt & (p < 0) & has_s0)[:, None] & md[None, :]
                xv += tl.load(s0_ptr + (i_n * D + rd[None, :]) * (KW - 1) + (KW - 1 + p)[:, None], mask=ms,
                              other=0.0).to(tl.float32)
            acc += xv * tl.load(w_ptr + rd * KW + j, mask=md, other=0.0).to(tl.float32)[None, :]
        y = acc * tl.sigmoid(acc)
        tl.store(y_ptr + (bos + rt)[:, None] * y_st + rd[None, :], y.to(y_ptr.dtype.element_ty),
                 mask=mt[:, None] & md[None, :])
    if i_t == 0:
        # The state this sequence leaves: its last K - 1 inputs, reaching back into the incoming state if short.
        for i in tl.static_range(KW - 1):
            p = L - (KW - 1) + i
            xv = tl.load(x_ptr + (bos + p) * x_st + rd, mask=md & (p >= 0), other=0.0)
            xv += tl.load(s0_ptr + (i_n * D + rd) * (KW - 1) + (KW - 1 + p), mask=md & (p < 0) & has_s0, other=0.0)
            tl.store(st_ptr + (i_n * D + rd) * (KW - 1) + i, xv, mask=md)


@jit(do_not_specialize=["D", "x_sn", "y_sn"])
def conv1d_update_kernel(x_ptr, w_ptr, state_ptr, idx_ptr, y_ptr, D, x_sn, y_sn, has_idx, KW: tl.constexpr,
                         BW: tl.constexpr, BD: tl.constexpr):
    i_d = tl.program_id(0)
    i_n = tl.program_id(1)
    slot = tl.where(has_idx, tl.load(idx_ptr + i_n * has_idx), i_n).to(tl.int64)
    rd = i_d * BD + tl.arange(0, BD)
    md = rd < D
    rj = tl.arange(0, BW)
    base = state_ptr + (slot * D + rd[:, None]) * (KW - 1)
    xv = tl.load(x_ptr + i_n * x_sn + rd, mask=md, other=0.0)
    window = tl.load(base + rj[None, :], mask=md[:, None] & (rj < KW - 1)[None, :], other=0.0)
    window = tl.where(rj[None, :] == KW - 1, xv[:, None], window)
    w = tl.load(w_ptr + rd[:, None] * KW + rj[None, :], mask=md[:, None] & (rj < KW)[None, :], other=0.0)
    acc = tl.sum(window.to(tl.float32) * w.to(tl.float32), axis=1)
    tl.store(y_ptr + i_n * y_sn + rd, (acc * tl.sigmoid(acc)).to(y_ptr.dtype.element_ty), mask=md)
    shifted = tl.load(base + rj[None, :] + 1, mask=md[:, None] & (rj < KW - 2)[None, :], other=0.0)
    shifted = tl.where(rj[None, :] == KW - 2, xv[:, None], shifted)
    tl.store(base + rj[None, :], shifted, mask=md[:, None] & (rj < KW - 1)[None, :])


conv1d_tuned = autotune(configs=AUTOTUNE_CONFIGS, key=["D"])(conv1d_kernel)
# Tuning runs every config on the same call, so the cache it shifts in place is restored between trials.
conv1d_update_tuned = autotune(configs=UPDATE_AUTOTUNE_CONFIGS, key=["D"], restore_value=["state_ptr"])(
    conv1d_update_kernel)


def _check_weight(weight, D: int) -> np.ndarray:
    if not isinstance(weight, np.ndarray) or weight.dtype not in FLOAT_DTYPES:
        raise ValueError(f"weight must be a float numpy array [{D}, K] or [{D}, 1, K], got {type(weight).__name__}")
    if weight.ndim == 3 and weight.shape[1] == 1:
        weight = weight[:, 0, :]
    if weight.ndim != 2 or weight.shape[0] != D or weight.shape[1] < 2:
        raise ValueError(f"weight must have shape [{D}, K] or [{D}, 1, K] with K >= 2, got {weight.shape}")
    check_activation("weight", weight, 2)
    return np.ascontiguousarray(weight)


def _check_conv_state(state, N: int, D: int, K: int, dtype, name: str) -> None:
    if not isinstance(state, np.ndarray) or state.dtype != dtype or state.ndim != 3 or state.shape[1:] != (D, K - 1):
        raise ValueError(f"{name} must be a {np.dtype(dtype).name} array [{N}, {D}, {K - 1}], "
                         f"got {getattr(state, 'dtype', type(state).__name__)} {getattr(state, 'shape', '')}")
    if state.shape[0] != N or not state.flags.c_contiguous:
        raise ValueError(f"{name} must be C-contiguous with {N} rows, got {state.shape}")


def causal_conv1d(x: np.ndarray, weight: np.ndarray, cu_seqlens: np.ndarray | None = None,
                  initial_state: np.ndarray | None = None, config: Config | str | None = None
                  ) -> tuple[np.ndarray, np.ndarray]:
    """Prefill conv + SiLU over packed sequences: y [T, D] (x's dtype) and the final states [N, D, K - 1].

    x [T, D] (fp32/fp16/bf16, row-strided views allowed); weight [D, K] or [D, 1, K]; initial_state
    [N, D, K - 1] in x's dtype (the K - 1 inputs before each sequence, oldest first) or None for zeros.
    config: one of AUTOTUNE_CONFIGS (None: the config table's pick, else the first) or "auto" to tune on first use.
    """
    check_activation("x", x, 2)
    T, D = x.shape
    w = _check_weight(weight, D)
    K = w.shape[1]
    cu, N = normalise_cu_seqlens(cu_seqlens, T)
    if initial_state is not None:
        _check_conv_state(initial_state, N, D, K, x.dtype, "initial_state")
    launcher = configured(config, conv1d_kernel, conv1d_tuned, AUTOTUNE_CONFIGS)
    y = np.empty((T, D), dtype=x.dtype)
    final = np.empty((N, D, K - 1), dtype=x.dtype)
    max_len = int(np.max(np.diff(cu)))
    if D:
        grid = lambda m: (cdiv(D, m["BD"]), N, max(1, cdiv(max_len, m["BT"])))  # noqa: E731
        launcher[grid](
            x, w, final if initial_state is None else initial_state, y, final, cu, D, x.strides[0] // x.itemsize, D,
            initial_state is not None, KW=K)
    return y, final


def causal_conv1d_update(x: np.ndarray, weight: np.ndarray, conv_state: np.ndarray,
                         state_indices: np.ndarray | None = None, config: Config | str | None = None) -> np.ndarray:
    """Decode conv + SiLU: one token per sequence, x [N, D] -> y [N, D]; `conv_state` [slots, D, K - 1] (x's
    dtype) is shifted in place; row n uses slot `state_indices[n]` (default n; distinct slots).
    config: one of UPDATE_AUTOTUNE_CONFIGS (None: the config table's pick, else the first) or "auto" to tune on
    first use."""
    check_activation("x", x, 2)
    N, D = x.shape
    w = _check_weight(weight, D)
    K = w.shape[1]
    if not isinstance(conv_state, np.ndarray) or conv_state.ndim != 3:
        raise ValueError(f"conv_state must be an array [slots, {D}, {K - 1}], got {type(conv_state).__name__}")
    _check_conv_state(conv_state, conv_state.shape[0], D, K, x.dtype, "conv_state")
    idx = check_state_indices(state_indices, N, conv_state.shape[0])
    launcher = configured(config, conv1d_update_kernel, conv1d_update_tuned, UPDATE_AUTOTUNE_CONFIGS)
    y = np.empty((N, D), dtype=x.dtype)
    if N and D:
        launcher[lambda m: (cdiv(D, m["BD"]), N)](
            x, w, conv_state, idx, y, D, x.strides[0] // x.itemsize, D, state_indices is not None, KW=K,
            BW=next_power_of_2(K))
    return y
