"""The thirtieth held-out set (split "holdout30"): blind — the issue's families with the sweep's own kernels and
the library's Qwen3.5 kernels at shapes no set has had (fp16, bf16 with a [N, K] weight and TF32 matmuls, decode-sized
M = 24 and M = 64, causal attention at D = 64 and D = 128, paged decodes with 8 query heads a KV head, softmax,
RMSNorm, LayerNorm, the library's RMSNorm, gated RMSNorm and fused SwiGLU, an add, a transpose, a row sum and column
sums over an unaligned and an aligned width), then earlier sets' kernels at new shapes (tanh GELU, a logsumexp, GQA
attention, a matmul against a transposed weight). Chosen at stop 47 with the model stop 46 left; its counters modeled
before any timing, measured once on the H200 and scored once, never fitted on.
"""

from __future__ import annotations

from holdout1 import gelu_case, logsumexp_case
from holdout11 import gqa_attention_case, matmul_abt_case
from sweep_cases import (
    MATMUL_CONFIGS,
    SKINNY_CONFIGS,
    Case,
    add_case,
    attention_case,
    colsum_case,
    in_split,
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

SPLIT = "holdout30"


def holdout30_cases() -> list[Case]:
    s = SPLIT
    return [
        matmul_case("holdout30_matmul_fp16_4608x2048x2560", s, 4608, 2048, 2560, "fp16", MATMUL_CONFIGS),
        matmul_case("holdout30_matmul_bf16_wt_3072x5120x2304", s, 3072, 5120, 2304, "bf16", MATMUL_CONFIGS,
                    b_kmajor=True),
        matmul_case("holdout30_matmul_fp32_2304x3072x1280", s, 2304, 3072, 1280, "fp32", MATMUL_CONFIGS),
        matmul_case("holdout30_matmul_fp16_skinny_m24", s, 24, 5120, 5120, "fp16", SKINNY_CONFIGS),
        matmul_case("holdout30_matmul_bf16_skinny_m64", s, 64, 4096, 7168, "bf16", SKINNY_CONFIGS),
        attention_case("holdout30_attention_fp16_d64_bh32_s1700", s, 32, 1700, 64, "fp16"),
        attention_case("holdout30_attention_bf16_d128_bh12_s3000", s, 12, 3000, 128, "bf16"),
        paged_decode_case("holdout30_decode_fp16_b24_h64_kv8_d128", s, 24, 64, 8, 128, 3000, "fp16"),
        paged_decode_case("holdout30_decode_bf16_b96_h16_kv2_d64", s, 96, 16, 2, 64, 900, "bf16"),
        softmax_case("holdout30_softmax_fp16_12000x3000", s, 12000, 3000, "fp16"),
        rmsnorm_case("holdout30_rmsnorm_bf16_5000x8192", s, 5000, 8192, "bf16"),
        layernorm_case("holdout30_layernorm_fp16_7000x3000", s, 7000, 3000, "fp16"),
        lib_rmsnorm_case("holdout30_lib_rmsnorm_fp16_8000x2560", s, 8000, 2560, "fp16"),
        lib_gated_rmsnorm_case("holdout30_lib_gated_rmsnorm_bf16_40000x128", s, 40000, 128, "bf16"),
        lib_swiglu_case("holdout30_lib_swiglu_bf16_512x3072x2048", s, 512, 3072, 2048, "bf16"),
        add_case("holdout30_add_fp16_40M", s, 40_000_007, "fp16"),
        transpose_case("holdout30_transpose_fp32_4000x4500", s, 4000, 4500, "fp32"),
        rowsum_case("holdout30_rowsum_bf16_5000x9000", s, 5000, 9000, "bf16"),
        colsum_case("holdout30_colsum_bf16_9000x2500", s, 9000, 2500, "bf16"),
        colsum_case("holdout30_colsum_fp16_4000x4096", s, 4000, 4096, "fp16"),
    ] + [in_split(case, s) for case in (  # other sets' kernels
        gelu_case("holdout30_gelu_bf16_20M", 20_000_003, "bf16"),
        logsumexp_case("holdout30_lse_fp32_3000x12000", 3000, 12000, "fp32"),
        gqa_attention_case("holdout30_gqa_attention_bf16_b2_s2500_h24_kv4_d128", 2, 2500, 24, 4, 128, "bf16"),
        matmul_abt_case("holdout30_matmul_abt_fp16_1536x4096x2048", 1536, 4096, 2048, "fp16"),
    )]
