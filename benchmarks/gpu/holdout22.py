"""The twenty-second held-out set (split "holdout22"): the families the issue named, with the sweep's own kernels, at
shapes no set has had — fp16, bf16 and TF32 matmuls (square, tall and K-heavy, a [N, K] weight, decode-sized M = 32),
causal flash attention at D = 64 and 128, softmax in fp32 and fp16, RMSNorm, LayerNorm, a vector add and a transpose.
Chosen after the model counted integer division as the GPU expands it (stop 38), measured once on the H200 and scored
once with the model frozen, never fitted on: how the model carries over to ordinary kernels at new shapes.
"""

from __future__ import annotations

from sweep_cases import (
    MATMUL_CONFIGS,
    SKINNY_CONFIGS,
    add_case,
    attention_case,
    layernorm_case,
    matmul_case,
    rmsnorm_case,
    softmax_case,
    transpose_case,
)

SPLIT = "holdout22"


def holdout22_cases() -> list:
    s = SPLIT
    return [
        matmul_case("holdout22_matmul_fp16_3584x3584x3584", s, 3584, 3584, 3584, "fp16", MATMUL_CONFIGS),
        matmul_case("holdout22_matmul_bf16_12288x1024x1536", s, 12288, 1024, 1536, "bf16", MATMUL_CONFIGS),
        matmul_case("holdout22_matmul_fp16_1024x1024x12288", s, 1024, 1024, 12288, "fp16", MATMUL_CONFIGS),
        matmul_case("holdout22_matmul_fp32_2048x2560x1536", s, 2048, 2560, 1536, "fp32", MATMUL_CONFIGS),
        matmul_case("holdout22_matmul_bf16_wt_2048x5120x1536", s, 2048, 5120, 1536, "bf16", MATMUL_CONFIGS,
                    b_kmajor=True),
        matmul_case("holdout22_matmul_bf16_skinny_m32", s, 32, 8192, 2560, "bf16", SKINNY_CONFIGS),
        attention_case("holdout22_attention_bf16_d64_bh32_s2560", s, 32, 2560, 64, "bf16"),
        attention_case("holdout22_attention_fp16_d128_bh12_s2304", s, 12, 2304, 128, "fp16"),
        softmax_case("holdout22_softmax_fp32_6144x2500", s, 6144, 2500, "fp32"),
        softmax_case("holdout22_softmax_fp16_2048x20000", s, 2048, 20000, "fp16"),
        rmsnorm_case("holdout22_rmsnorm_fp16_12288x2560", s, 12288, 2560, "fp16"),
        layernorm_case("holdout22_layernorm_bf16_4096x3584", s, 4096, 3584, "bf16"),
        add_case("holdout22_add_fp16_50M", s, 50_000_003, "fp16"),
        transpose_case("holdout22_transpose_fp32_5120x2304", s, 5120, 2304, "fp32"),
    ]
