"""The thirty-second held-out set (split "holdout32"): blind — chosen at stop 50 with stop 49's model unchanged (no
parameter moved since holdout31 was scored). The issue's families with the sweep's own kernels and the library's at
shapes no set has had (fp16, bf16 with a [N, K] weight and TF32 matmuls, decode-sized M = 12 and M = 40, causal
attention at D = 64 and D = 128, paged decodes with 4 query heads a KV head at D = 128 and D = 64, softmax, RMSNorm,
LayerNorm, the library's RMSNorm, gated RMSNorm and fused SwiGLU, an add, a transpose, a row sum and column sums), then
earlier sets' kernels at new shapes (a log-softmax, softmax's and RMSNorm's backward, Qwen3.5's partial RoPE, per-head
q / k RMSNorm, an int8 KV-cache dequantize, a W8A16 projection, a batched matmul, an online softmax, greedy decoding's
row argmax, RMSNorm fused with the residual add). Its counters modeled before any timing; measured once on the H200
and scored once, never fitted on.
"""

from __future__ import annotations

from holdout2 import bmm_case
from holdout4 import softmax_bwd_case
from holdout6 import qk_norm_case, rmsnorm_bwd_case
from holdout7 import w8a16_case
from holdout8 import kv_dequant_case
from holdout9 import online_softmax_case
from holdout11 import log_softmax_case
from holdout20 import argmax_rows_case, rmsnorm_residual_case
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

SPLIT = "holdout32"


def holdout32_cases() -> list[Case]:
    s = SPLIT
    return [
        matmul_case("holdout32_matmul_fp16_2560x3584x3072", s, 2560, 3584, 3072, "fp16", MATMUL_CONFIGS),
        matmul_case("holdout32_matmul_bf16_wt_4096x2560x2048", s, 4096, 2560, 2048, "bf16", MATMUL_CONFIGS,
                    b_kmajor=True),
        matmul_case("holdout32_matmul_fp32_2048x1536x3072", s, 2048, 1536, 3072, "fp32", MATMUL_CONFIGS),
        matmul_case("holdout32_matmul_fp16_skinny_m12", s, 12, 4608, 3072, "fp16", SKINNY_CONFIGS),
        matmul_case("holdout32_matmul_bf16_skinny_m40", s, 40, 3584, 5120, "bf16", SKINNY_CONFIGS),
        attention_case("holdout32_attention_fp16_d64_bh24_s2600", s, 24, 2600, 64, "fp16"),
        attention_case("holdout32_attention_bf16_d128_bh16_s1800", s, 16, 1800, 128, "bf16"),
        paged_decode_case("holdout32_decode_bf16_b40_h32_kv8_d128", s, 40, 32, 8, 128, 1800, "bf16"),
        paged_decode_case("holdout32_decode_fp16_b64_h16_kv4_d64", s, 64, 16, 4, 64, 1500, "fp16"),
        softmax_case("holdout32_softmax_fp16_6000x7500", s, 6000, 7500, "fp16"),
        rmsnorm_case("holdout32_rmsnorm_bf16_9000x3584", s, 9000, 3584, "bf16"),
        layernorm_case("holdout32_layernorm_fp16_4500x5120", s, 4500, 5120, "fp16"),
        lib_rmsnorm_case("holdout32_lib_rmsnorm_bf16_7000x3584", s, 7000, 3584, "bf16"),
        lib_gated_rmsnorm_case("holdout32_lib_gated_rmsnorm_fp16_30000x256", s, 30000, 256, "fp16"),
        lib_swiglu_case("holdout32_lib_swiglu_bf16_256x5120x3072", s, 256, 5120, 3072, "bf16"),
        add_case("holdout32_add_fp32_25M", s, 25_000_011, "fp32"),
        transpose_case("holdout32_transpose_bf16_5000x3000", s, 5000, 3000, "bf16"),
        rowsum_case("holdout32_rowsum_fp16_3500x11000", s, 3500, 11000, "fp16"),
        colsum_case("holdout32_colsum_bf16_7000x3500", s, 7000, 3500, "bf16"),
    ] + [in_split(case, s) for case in (  # other sets' kernels
        log_softmax_case("holdout32_log_softmax_fp16_5000x9000", 5000, 9000, "fp16"),
        softmax_bwd_case("holdout32_softmax_bwd_bf16_4000x6000", 4000, 6000, "bf16"),
        rmsnorm_bwd_case("holdout32_rmsnorm_bwd_fp16_6000x3072", 6000, 3072, "fp16"),
        rope_case("holdout32_rope_bf16_3000x24x256", 3000, 24, 256, "bf16"),
        qk_norm_case("holdout32_qk_norm_bf16_t6000_h24_d128", 6000, 24, 128, "bf16"),
        kv_dequant_case("holdout32_kv_dequant_fp16_t12000_h8_d128", 12000, 8, 128, "fp16"),
        w8a16_case("holdout32_w8a16_bf16_96x6144x4096", 96, 6144, 4096, "bf16"),
        bmm_case("holdout32_bmm_fp16_b24_384x512x768", 24, 384, 512, 768, "fp16"),
        online_softmax_case("holdout32_online_softmax_fp32_2500x24000", 2500, 24000, "fp32"),
        argmax_rows_case("holdout32_argmax_rows_bf16_512x100000", 512, 100000, "bf16"),
        rmsnorm_residual_case("holdout32_rmsnorm_residual_bf16_10000x2560", 10000, 2560, "bf16"),
    )]
