"""The twenty-eighth held-out set (split "holdout28"): blind like holdout26 and holdout27 — the issue's families
with the sweep's own kernels at shapes no set has had (fp16, bf16 with a [N, K] weight and TF32 matmuls, a
decode-sized M = 16, causal attention at D = 64 and D = 128, a paged decode with 5 query heads a KV head, softmax,
RMSNorm, LayerNorm, a transpose, an add, row and column sums), then earlier sets' kernels at new shapes (a GEMV, a
cross-entropy, a log-softmax, LayerNorm's backward for dx, table RoPE). Chosen at stop 43 with the model stop 42
left, its counters modeled before any timing; measured once on the H200 and scored once with that model, never
fitted on.
"""

from __future__ import annotations

from holdout2 import gemv_case
from holdout4 import cross_entropy_case
from holdout11 import log_softmax_case
from holdout12 import layernorm_dx_case
from holdout21 import rope_case
from sweep_cases import (
    MATMUL_CONFIGS,
    SKINNY_CONFIGS,
    Case,
    add_case,
    attention_case,
    colsum_case,
    in_split,
    layernorm_case,
    matmul_case,
    paged_decode_case,
    rmsnorm_case,
    rowsum_case,
    softmax_case,
    transpose_case,
)

SPLIT = "holdout28"


def holdout28_cases() -> list[Case]:
    s = SPLIT
    return [
        matmul_case("holdout28_matmul_fp16_5120x1536x3072", s, 5120, 1536, 3072, "fp16", MATMUL_CONFIGS),
        matmul_case("holdout28_matmul_bf16_wt_1536x6144x2048", s, 1536, 6144, 2048, "bf16", MATMUL_CONFIGS,
                    b_kmajor=True),
        matmul_case("holdout28_matmul_fp32_1792x4096x1024", s, 1792, 4096, 1024, "fp32", MATMUL_CONFIGS),
        matmul_case("holdout28_matmul_bf16_skinny_m16", s, 16, 4096, 6144, "bf16", SKINNY_CONFIGS),
        attention_case("holdout28_attention_fp16_d64_bh20_s2200", s, 20, 2200, 64, "fp16"),
        attention_case("holdout28_attention_bf16_d128_bh24_s1024", s, 24, 1024, 128, "bf16"),
        paged_decode_case("holdout28_decode_fp16_b16_h40_kv8_d128", s, 16, 40, 8, 128, 2500, "fp16"),
        softmax_case("holdout28_softmax_fp16_8192x5000", s, 8192, 5000, "fp16"),
        rmsnorm_case("holdout28_rmsnorm_fp32_4096x6000", s, 4096, 6000, "fp32"),
        layernorm_case("holdout28_layernorm_bf16_3000x7168", s, 3000, 7168, "bf16"),
        transpose_case("holdout28_transpose_fp16_3000x7000", s, 3000, 7000, "fp16"),
        add_case("holdout28_add_bf16_30M", s, 30_000_001, "bf16"),
        rowsum_case("holdout28_rowsum_fp32_6000x6000", s, 6000, 6000, "fp32"),
        colsum_case("holdout28_colsum_bf16_5000x5000", s, 5000, 5000, "bf16"),
    ] + [in_split(case, s) for case in (  # other sets' kernels
        gemv_case("holdout28_gemv_bf16_5120x5120", 5120, 5120, "bf16"),
        cross_entropy_case("holdout28_cross_entropy_bf16_2048x64000", 2048, 64000, "bf16"),
        log_softmax_case("holdout28_log_softmax_fp16_5000x7000", 5000, 7000, "fp16"),
        layernorm_dx_case("holdout28_layernorm_dx_fp16_6000x2048", 6000, 2048, "fp16"),
        rope_case("holdout28_rope_table_bf16_2000x32x128", 2000, 32, 128, "bf16", from_table=True),
    )]
