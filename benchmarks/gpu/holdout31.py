"""The thirty-first held-out set (split "holdout31"): blind — chosen at stop 49, after that stop's change (a program's
memory instructions on its own path, a loop past the compiler's register target waiting twice a body for its loads),
which was chosen looking at every earlier set. The issue's families with the sweep's own kernels and the library's at
shapes no set has had (fp16, bf16 with a [N, K] weight and TF32 matmuls, decode-sized M = 16 and M = 48, causal
attention at D = 64 and D = 128, paged decodes with 4 and 6 query heads a KV head, softmax, RMSNorm, LayerNorm, the
library's RMSNorm and fused SwiGLU, an add, a transpose, a row sum and column sums), then the earlier kernels that
change moved most (a Welford LayerNorm, a softmax down the columns, the MoE combine, a depthwise convolution, masked
mean pooling, a GEMV, a cross-entropy). Its counters modeled before any timing; measured once on the H200 and scored
once, never fitted on.
"""

from __future__ import annotations

from holdout2 import gemv_case
from holdout4 import cross_entropy_case
from holdout5 import mean_pool_case
from holdout12 import column_softmax_case
from holdout14 import depthwise_conv_case
from holdout15 import welford_layernorm_case
from holdout21 import moe_combine_case
from sweep_cases import (
    MATMUL_CONFIGS,
    SKINNY_CONFIGS,
    Case,
    add_case,
    attention_case,
    colsum_case,
    in_split,
    layernorm_case,
    lib_rmsnorm_case,
    lib_swiglu_case,
    matmul_case,
    paged_decode_case,
    rmsnorm_case,
    rowsum_case,
    softmax_case,
    transpose_case,
)

SPLIT = "holdout31"


def holdout31_cases() -> list[Case]:
    s = SPLIT
    return [
        matmul_case("holdout31_matmul_fp16_3584x2560x2048", s, 3584, 2560, 2048, "fp16", MATMUL_CONFIGS),
        matmul_case("holdout31_matmul_bf16_wt_2048x4608x3584", s, 2048, 4608, 3584, "bf16", MATMUL_CONFIGS,
                    b_kmajor=True),
        matmul_case("holdout31_matmul_fp32_1792x2560x2048", s, 1792, 2560, 2048, "fp32", MATMUL_CONFIGS),
        matmul_case("holdout31_matmul_fp16_skinny_m16", s, 16, 6144, 4096, "fp16", SKINNY_CONFIGS),
        matmul_case("holdout31_matmul_bf16_skinny_m48", s, 48, 5120, 6144, "bf16", SKINNY_CONFIGS),
        attention_case("holdout31_attention_bf16_d64_bh20_s2200", s, 20, 2200, 64, "bf16"),
        attention_case("holdout31_attention_fp16_d128_bh10_s3500", s, 10, 3500, 128, "fp16"),
        paged_decode_case("holdout31_decode_bf16_b32_h24_kv4_d128", s, 32, 24, 4, 128, 2200, "bf16"),
        paged_decode_case("holdout31_decode_fp16_b80_h24_kv6_d64", s, 80, 24, 6, 64, 1200, "fp16"),
        softmax_case("holdout31_softmax_bf16_9000x4500", s, 9000, 4500, "bf16"),
        rmsnorm_case("holdout31_rmsnorm_fp16_6000x6144", s, 6000, 6144, "fp16"),
        layernorm_case("holdout31_layernorm_bf16_3000x7000", s, 3000, 7000, "bf16"),
        lib_rmsnorm_case("holdout31_lib_rmsnorm_bf16_12000x2048", s, 12000, 2048, "bf16"),
        lib_swiglu_case("holdout31_lib_swiglu_fp16_384x4096x2560", s, 384, 4096, 2560, "fp16"),
        add_case("holdout31_add_bf16_30M", s, 30_000_001, "bf16"),
        transpose_case("holdout31_transpose_fp16_6000x3500", s, 6000, 3500, "fp16"),
        rowsum_case("holdout31_rowsum_fp32_4000x7000", s, 4000, 7000, "fp32"),
        colsum_case("holdout31_colsum_fp32_6000x3072", s, 6000, 3072, "fp32"),
    ] + [in_split(case, s) for case in (  # other sets' kernels
        welford_layernorm_case("holdout31_welford_layernorm_bf16_3000x12000", 3000, 12000, "bf16"),
        column_softmax_case("holdout31_column_softmax_fp16_1536x6000", 1536, 6000, "fp16"),
        moe_combine_case("holdout31_moe_combine_fp16_3000x3072_k6", 3000, 3072, 6, "fp16"),
        depthwise_conv_case("holdout31_depthwise_conv3x3_fp16_n24_40x40_c192", 24, 40, 40, 192, "fp16"),
        mean_pool_case("holdout31_mean_pool_fp16_b48_s1500_d2048", 48, 1500, 2048, "fp16"),
        gemv_case("holdout31_gemv_bf16_9216x4096", 9216, 4096, "bf16"),
        cross_entropy_case("holdout31_cross_entropy_bf16_3072x40000", 3072, 40000, "bf16"),
    )]
