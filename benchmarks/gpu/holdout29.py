"""The twenty-ninth held-out set (split "holdout29"): blind — the issue's families with the sweep's own kernels and
the library's Qwen3.5 kernels at shapes no set has had (fp16, bf16 with a [N, K] weight and TF32 matmuls, decode-sized
M = 8 and M = 32, causal attention at D = 64 and D = 128, paged decodes with 7 and 4 query heads a KV head, softmax,
RMSNorm, LayerNorm, the library's RMSNorm, gated RMSNorm and fused SwiGLU, an add, a transpose, a row sum and column
sums over an aligned and an unaligned width), then earlier sets' kernels at new shapes (a GEMV, a cross-entropy, a
log-softmax). Chosen at stop 45, after loads were counted in a loop body's size for unrolling; its counters modeled
before any timing, measured once on the H200 and scored once, never fitted on.
"""

from __future__ import annotations

from holdout2 import gemv_case
from holdout4 import cross_entropy_case
from holdout11 import log_softmax_case
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

SPLIT = "holdout29"


def holdout29_cases() -> list[Case]:
    s = SPLIT
    return [
        matmul_case("holdout29_matmul_fp16_3584x3072x1536", s, 3584, 3072, 1536, "fp16", MATMUL_CONFIGS),
        matmul_case("holdout29_matmul_bf16_wt_2560x7168x1792", s, 2560, 7168, 1792, "bf16", MATMUL_CONFIGS,
                    b_kmajor=True),
        matmul_case("holdout29_matmul_fp32_2048x2560x1536", s, 2048, 2560, 1536, "fp32", MATMUL_CONFIGS),
        matmul_case("holdout29_matmul_fp16_skinny_m8", s, 8, 6144, 4096, "fp16", SKINNY_CONFIGS),
        matmul_case("holdout29_matmul_bf16_skinny_m32", s, 32, 7168, 3584, "bf16", SKINNY_CONFIGS),
        attention_case("holdout29_attention_fp16_d128_bh16_s2800", s, 16, 2800, 128, "fp16"),
        attention_case("holdout29_attention_bf16_d64_bh40_s1280", s, 40, 1280, 64, "bf16"),
        paged_decode_case("holdout29_decode_bf16_b40_h28_kv4_d128", s, 40, 28, 4, 128, 1800, "bf16"),
        paged_decode_case("holdout29_decode_fp16_b64_h32_kv8_d64", s, 64, 32, 8, 64, 1200, "fp16"),
        softmax_case("holdout29_softmax_bf16_6000x6000", s, 6000, 6000, "bf16"),
        rmsnorm_case("holdout29_rmsnorm_fp16_9000x4100", s, 9000, 4100, "fp16"),
        layernorm_case("holdout29_layernorm_fp32_3500x6144", s, 3500, 6144, "fp32"),
        lib_rmsnorm_case("holdout29_lib_rmsnorm_bf16_6000x5120", s, 6000, 5120, "bf16"),
        lib_gated_rmsnorm_case("holdout29_lib_gated_rmsnorm_bf16_65536x256", s, 65536, 256, "bf16"),
        lib_swiglu_case("holdout29_lib_swiglu_bf16_256x6144x4096", s, 256, 6144, 4096, "bf16"),
        add_case("holdout29_add_fp32_25M", s, 25_000_003, "fp32"),
        transpose_case("holdout29_transpose_bf16_5000x3000", s, 5000, 3000, "bf16"),
        rowsum_case("holdout29_rowsum_fp16_9000x5000", s, 9000, 5000, "fp16"),
        colsum_case("holdout29_colsum_fp16_7000x3000", s, 7000, 3000, "fp16"),
        colsum_case("holdout29_colsum_fp32_4000x6000", s, 4000, 6000, "fp32"),
    ] + [in_split(case, s) for case in (  # other sets' kernels
        gemv_case("holdout29_gemv_fp16_7168x3584", 7168, 3584, "fp16"),
        cross_entropy_case("holdout29_cross_entropy_fp16_4096x50000", 4096, 50000, "fp16"),
        log_softmax_case("holdout29_log_softmax_bf16_3000x9000", 3000, 9000, "bf16"),
    )]
