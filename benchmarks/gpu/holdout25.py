"""The twenty-fifth held-out set (split "holdout25"): the issue's families with the sweep's own kernels and kernels
earlier held-out sets brought, at shapes no set has had — fp16, bf16 (a [N, K] weight) and TF32 matmuls, a decode-sized
M = 24, causal attention, softmax, RMSNorm, LayerNorm, a transpose and an add, then a log-softmax, softmax's,
RMSNorm's and LayerNorm's backward, a softmax down the columns, a cross-entropy, a causally masked softmax, a Welford
LayerNorm, an online softmax, the library's MoE combine and table RoPE, a batched matmul and a GEMV. Chosen after stop
40 charged a cross-warp reduction once per result each thread holds, before any of it was measured; measured once on
the H200 and scored once with the model frozen, never fitted on.
"""

from __future__ import annotations

from holdout2 import bmm_case, gemv_case
from holdout4 import cross_entropy_case, softmax_bwd_case
from holdout6 import rmsnorm_bwd_case
from holdout9 import online_softmax_case
from holdout11 import log_softmax_case
from holdout12 import column_softmax_case, layernorm_dx_case
from holdout14 import causal_softmax_case
from holdout15 import welford_layernorm_case
from holdout21 import moe_combine_case, rope_case
from sweep_cases import (
    MATMUL_CONFIGS,
    SKINNY_CONFIGS,
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

SPLIT = "holdout25"


def holdout25_cases() -> list[Case]:
    s = SPLIT
    return [
        matmul_case("holdout25_matmul_fp16_6144x3072x1024", s, 6144, 3072, 1024, "fp16", MATMUL_CONFIGS),
        matmul_case("holdout25_matmul_bf16_wt_2560x5120x3072", s, 2560, 5120, 3072, "bf16", MATMUL_CONFIGS,
                    b_kmajor=True),
        matmul_case("holdout25_matmul_fp32_2048x3072x1536", s, 2048, 3072, 1536, "fp32", MATMUL_CONFIGS),
        matmul_case("holdout25_matmul_bf16_skinny_m24", s, 24, 7168, 3072, "bf16", SKINNY_CONFIGS),
        attention_case("holdout25_attention_fp16_d64_bh24_s2500", s, 24, 2500, 64, "fp16"),
        softmax_case("holdout25_softmax_fp32_6144x3500", s, 6144, 3500, "fp32"),
        rmsnorm_case("holdout25_rmsnorm_fp16_3000x9000", s, 3000, 9000, "fp16"),
        layernorm_case("holdout25_layernorm_bf16_5000x3072", s, 5000, 3072, "bf16"),
        transpose_case("holdout25_transpose_fp32_6000x2500", s, 6000, 2500, "fp32"),
        add_case("holdout25_add_fp32_25M", s, 25_000_003, "fp32"),
    ] + [in_split(case, s) for case in (  # other sets' kernels
        log_softmax_case("holdout25_log_softmax_fp32_3000x9000", 3000, 9000, "fp32"),
        softmax_bwd_case("holdout25_softmax_bwd_bf16_6000x2048", 6000, 2048, "bf16"),
        rmsnorm_bwd_case("holdout25_rmsnorm_bwd_fp16_3000x5120", 3000, 5120, "fp16"),
        layernorm_dx_case("holdout25_layernorm_dx_bf16_4096x3000", 4096, 3000, "bf16"),
        column_softmax_case("holdout25_column_softmax_fp32_2048x4000", 2048, 4000, "fp32"),
        cross_entropy_case("holdout25_cross_entropy_bf16_4096x50000", 4096, 50000, "bf16"),
        causal_softmax_case("holdout25_causal_masked_softmax_bf16_bh24_s1200", 24, 1200, "bf16"),
        welford_layernorm_case("holdout25_welford_layernorm_fp16_4096x9000", 4096, 9000, "fp16"),
        online_softmax_case("holdout25_online_softmax_fp16_2000x30000", 2000, 30000, "fp16"),
        moe_combine_case("holdout25_moe_combine_bf16_2048x4096_k8", 2048, 4096, 8, "bf16"),
        rope_case("holdout25_rope_table_fp16_3000x16x256", 3000, 16, 256, "fp16", from_table=True),
        bmm_case("holdout25_bmm_fp16_b24_1024x256x512", 24, 1024, 256, 512, "fp16"),
        gemv_case("holdout25_gemv_bf16_6144x6144", 6144, 6144, "bf16"),
    )]
