"""The sixteenth held-out set (split "holdout16"): the families issue 12 names (matmul in fp16, bf16 and TF32, square,
skinny and with a [N, K] weight; causal flash attention at D = 64 and 128; softmax; RMSNorm; LayerNorm; vector add;
transpose) at shapes no earlier set measured, chosen after the L2 and register changes of stop 32, measured once on
the H200 and scored once with the model frozen, never fitted on. The kernels are the sweep's own (sweep_kernels):
this set asks whether the validation figures carry over to new shapes, where the other held-out sets ask it of new
kernels.
"""

from __future__ import annotations

from sweep_cases import (
    MATMUL_CONFIGS,
    SKINNY_CONFIGS,
    Case,
    add_case,
    attention_case,
    layernorm_case,
    matmul_case,
    rmsnorm_case,
    softmax_case,
    transpose_case,
)


def holdout16_cases() -> list[Case]:
    s = "holdout16"
    return [
        matmul_case("holdout16_matmul_fp16_2560x2560x2560", s, 2560, 2560, 2560, "fp16", MATMUL_CONFIGS),
        matmul_case("holdout16_matmul_bf16_6144x1024x3072", s, 6144, 1024, 3072, "bf16", MATMUL_CONFIGS),
        matmul_case("holdout16_matmul_fp32_3072x1536x1024", s, 3072, 1536, 1024, "fp32", MATMUL_CONFIGS),
        matmul_case("holdout16_matmul_bf16_wt_1024x8192x2048", s, 1024, 8192, 2048, "bf16", MATMUL_CONFIGS,
                    b_kmajor=True),
        matmul_case("holdout16_matmul_fp16_skinny_m8", s, 8, 6144, 4096, "fp16", SKINNY_CONFIGS),
        attention_case("holdout16_attention_fp16_d64_bh24_s3072", s, 24, 3072, 64, "fp16"),
        attention_case("holdout16_attention_bf16_d128_bh16_s1536", s, 16, 1536, 128, "bf16"),
        softmax_case("holdout16_softmax_fp16_8192x3000", s, 8192, 3000, "fp16"),
        softmax_case("holdout16_softmax_fp32_4096x6144", s, 4096, 6144, "fp32"),
        rmsnorm_case("holdout16_rmsnorm_bf16_8192x3072", s, 8192, 3072, "bf16"),
        layernorm_case("holdout16_layernorm_fp16_6000x5120", s, 6000, 5120, "fp16"),
        add_case("holdout16_add_bf16_30M", s, 30_000_000, "bf16"),
        transpose_case("holdout16_transpose_bf16_6144x3072", s, 6144, 3072, "bf16"),
    ]
