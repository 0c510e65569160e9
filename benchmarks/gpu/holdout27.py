"""The twenty-seventh held-out set (split "holdout27"): the issue's families again, blind, with the sweep's own kernels
and the library's Qwen3.5 kernels at shapes no set has had — fp16, bf16 (a [N, K] weight) and TF32 matmuls,
decode-sized M = 4 and M = 48, causal attention at D = 64 and D = 128, two paged decodes (8 query heads a KV head),
softmax, RMSNorm, LayerNorm, the library's RMSNorm, gated RMSNorm and fused SwiGLU, an add, a transpose, row and
column sums. Chosen at stop 43 after holdout26 was scored, with the model stop 42 left; measured once on the H200 and
scored once with that model, never fitted on.
"""

from __future__ import annotations

from sweep_cases import (
    MATMUL_CONFIGS,
    SKINNY_CONFIGS,
    Case,
    add_case,
    attention_case,
    colsum_case,
    layernorm_case,
    lib_gated_rmsnorm_case,
    lib_rmsnorm_case,
    lib_swiglu_case,
    matmul_case,
    paged_decode_case,
    rmsnorm_case,
    rowsum_case,
    softmax_case,
    transpose_case,
)

SPLIT = "holdout27"


def holdout27_cases() -> list[Case]:
    s = SPLIT
    return [
        matmul_case("holdout27_matmul_fp16_4608x2304x2048", s, 4608, 2304, 2048, "fp16", MATMUL_CONFIGS),
        matmul_case("holdout27_matmul_bf16_wt_3000x4096x2560", s, 3000, 4096, 2560, "bf16", MATMUL_CONFIGS,
                    b_kmajor=True),
        matmul_case("holdout27_matmul_fp32_3072x1536x2560", s, 3072, 1536, 2560, "fp32", MATMUL_CONFIGS),
        matmul_case("holdout27_matmul_fp16_skinny_m4", s, 4, 10240, 2560, "fp16", SKINNY_CONFIGS),
        matmul_case("holdout27_matmul_bf16_skinny_m48", s, 48, 5120, 5120, "bf16", SKINNY_CONFIGS),
        attention_case("holdout27_attention_bf16_d64_bh48_s1536", s, 48, 1536, 64, "bf16"),
        attention_case("holdout27_attention_fp16_d128_bh12_s3500", s, 12, 3500, 128, "fp16"),
        paged_decode_case("holdout27_decode_fp16_b24_h32_kv4_d128", s, 24, 32, 4, 128, 3000, "fp16"),
        paged_decode_case("holdout27_decode_bf16_b96_h16_kv2_d64", s, 96, 16, 2, 64, 700, "bf16"),
        softmax_case("holdout27_softmax_bf16_10000x2500", s, 10000, 2500, "bf16"),
        softmax_case("holdout27_softmax_fp32_2048x14000", s, 2048, 14000, "fp32"),
        rmsnorm_case("holdout27_rmsnorm_bf16_12000x2560", s, 12000, 2560, "bf16"),
        layernorm_case("holdout27_layernorm_fp16_7000x5000", s, 7000, 5000, "fp16"),
        lib_rmsnorm_case("holdout27_lib_rmsnorm_bf16_8192x3584", s, 8192, 3584, "bf16"),
        lib_gated_rmsnorm_case("holdout27_lib_gated_rmsnorm_bf16_98304x128", s, 98304, 128, "bf16"),
        lib_swiglu_case("holdout27_lib_swiglu_bf16_512x5120x2560", s, 512, 5120, 2560, "bf16"),
        add_case("holdout27_add_fp16_45M", s, 45_000_001, "fp16"),
        transpose_case("holdout27_transpose_bf16_7000x3500", s, 7000, 3500, "bf16"),
        rowsum_case("holdout27_rowsum_bf16_12000x3000", s, 12000, 3000, "bf16"),
        colsum_case("holdout27_colsum_fp32_3000x7000", s, 3000, 7000, "fp32"),
    ]
