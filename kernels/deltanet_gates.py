"""Gated DeltaNet gates: g = -exp(A_log) * softplus(a + dt_bias) (log-decay <= 0) and beta = sigmoid(b), in fp32.

`load_gates` is what the delta-rule kernels call, so with raw projections the gates cost no extra pass
over memory; `gdn_gates` is the standalone op (FLA's `fused_gdn_gating`) for callers that want g, beta.
"""

from __future__ import annotations

import numpy as np

import dsl as tl
from jit import Config, autotune, cdiv, jit
from kernels.deltanet_common import check_gates, configured

AUTOTUNE_CONFIGS: list[Config] = [Config({"BLOCK": 1024}, num_warps=4), Config({"BLOCK": 256}, num_warps=2),
                                  Config({"BLOCK": 4096}, num_warps=8)]


@jit
def log1p(u):
    """log(1 + u) for u >= 0 to full relative precision: log(w) * u / (w - 1) with w = 1 + u corrects the
    rounding of w (Goldberg's trick); plain log(1 + u) loses every digit of a small u."""
    w = 1.0 + u
    return tl.where(w == 1.0, u, tl.log(w) * (u / (w - 1.0)))


@jit
def softplus(x):
    """log(1 + e^x) without overflow and accurate far to the left: max(x, 0) + log1p(e^-|x|)."""
    return tl.maximum(x, 0.0) + log1p(tl.exp(-tl.abs(x)))


@jit
def load_gates(g_ptr, beta_ptr, a_ptr, b_ptr, alog_ptr, dtb_ptr, offs, i_h, mask, raw_gates):
    """(g, beta) in fp32 at `offs`, 0 where masked (a no-op token): loaded, or, when `raw_gates`, computed from
    the raw projections as g = -exp(A_log) * softplus(a + dt_bias), beta = sigmoid(b).

    `raw_gates` is a run-time flag rather than a constexpr so both forms share one compiled kernel.
    """
    if raw_gates:
        a = tl.load(a_ptr + offs, mask=mask, other=0.0).to(tl.float32)
        b = tl.load(b_ptr + offs, mask=mask, other=0.0).to(tl.float32)
        decay_rate = tl.exp(tl.load(alog_ptr + i_h).to(tl.float32))
        g = tl.where(mask, -decay_rate * softplus(a + tl.load(dtb_ptr + i_h).to(tl.float32)), 0.0)
        beta = tl.where(mask, tl.sigmoid(b), 0.0)
    else:
        g = tl.load(g_ptr + offs, mask=mask, other=0.0).to(tl.float32)
        beta = tl.load(beta_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    return g, beta


@jit(do_not_specialize=["n", "HV"])
def gdn_gates_kernel(a_ptr, b_ptr, alog_ptr, dtb_ptr, g_ptr, beta_ptr, n, HV, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    g, beta = load_gates(g_ptr, beta_ptr, a_ptr, b_ptr, alog_ptr, dtb_ptr, offs, offs % HV, mask, True)
    tl.store(g_ptr + offs, g, mask=mask)
    tl.store(beta_ptr + offs, beta, mask=mask)


gdn_gates_tuned = autotune(configs=AUTOTUNE_CONFIGS, key=["HV"])(gdn_gates_kernel)


def gdn_gates(a: np.ndarray, b: np.ndarray, A_log: np.ndarray, dt_bias: np.ndarray,
              config: Config | str | None = None) -> tuple[np.ndarray, np.ndarray]:
    """(g, beta), fp32 [T, HV], from the a and b projections [T, HV] and the per-head A_log, dt_bias [HV].

    config: one of AUTOTUNE_CONFIGS (None: the config table's pick, else the first) or "auto" to tune on first use.
    """
    if not isinstance(a, np.ndarray) or a.ndim != 2:
        raise ValueError(f"a must be a 2-D array [T, HV], got {getattr(a, 'shape', type(a).__name__)}")
    T, HV = a.shape
    (_, _, a, b, A_log, dt_bias), _ = check_gates(T, HV, None, None, a, b, A_log, dt_bias)
    launcher = configured(config, gdn_gates_kernel, gdn_gates_tuned, AUTOTUNE_CONFIGS)
    g = np.empty((T, HV), np.float32)
    beta = np.empty((T, HV), np.float32)
    if T * HV:
        launcher[lambda m: (cdiv(T * HV, m["BLOCK"]),)](
            a, b, A_log, dt_bias, g, beta, T * HV, HV)
    return g, beta
