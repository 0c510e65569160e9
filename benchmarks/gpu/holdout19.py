"""The nineteenth held-out set (split "holdout19"): kernels the model has met, at shapes never measured — the
sweep's matmul with its columns wrapped at an N that is not a multiple of 16 (1,000 and 4,100) and at a round one,
a linear layer's A @ B^T, causal attention at D = 128 over 1,000 positions, softmax, log-softmax, LayerNorm, RMSNorm,
GELU, an add, a cross-entropy and a transpose, most at odd widths. Chosen after stop 35's layout and L1-bank change,
measured once on the H200 and scored once with the model frozen, never fitted on: it asks how that change and the
rest carry over to shapes nobody looked at.
"""

from __future__ import annotations

from holdout1 import gelu_case
from holdout4 import cross_entropy_case
from holdout11 import log_softmax_case, matmul_abt_case
from sweep_cases import (
    MATMUL_CONFIGS,
    Case,
    add_case,
    attention_case,
    in_split,
    layernorm_case,
    matmul_case,
    rmsnorm_case,
    softmax_case,
    transpose_case,
)

SPLIT = "holdout19"


def holdout19_cases() -> list[Case]:
    s = SPLIT
    return [
        matmul_case("holdout19_matmul_fp16_3000x1000x2000", s, 3000, 1000, 2000, "fp16", MATMUL_CONFIGS),
        matmul_case("holdout19_matmul_bf16_2048x4100x1536", s, 2048, 4100, 1536, "bf16", MATMUL_CONFIGS),
        matmul_case("holdout19_matmul_fp16_1536x1536x1536", s, 1536, 1536, 1536, "fp16", MATMUL_CONFIGS),
        in_split(matmul_abt_case("holdout19_matmul_abt_bf16_1000x3000x2000", 1000, 3000, 2000, "bf16"), s),
        attention_case("holdout19_attention_bf16_d128_bh8_s1000", s, 8, 1000, 128, "bf16"),
        softmax_case("holdout19_softmax_bf16_10000x1000", s, 10000, 1000, "bf16"),
        in_split(log_softmax_case("holdout19_log_softmax_fp32_8192x5000", 8192, 5000, "fp32"), s),
        layernorm_case("holdout19_layernorm_bf16_7000x2049", s, 7000, 2049, "bf16"),
        rmsnorm_case("holdout19_rmsnorm_fp16_3000x1536", s, 3000, 1536, "fp16"),
        in_split(gelu_case("holdout19_gelu_bf16_25M", 25_000_001, "bf16"), s),
        add_case("holdout19_add_bf16_30M", s, 30_000_001, "bf16"),
        in_split(cross_entropy_case("holdout19_cross_entropy_fp16_2048x50257", 2048, 50257, "fp16"), s),
        transpose_case("holdout19_transpose_fp16_2000x3001", s, 2000, 3001, "fp16"),
    ]
