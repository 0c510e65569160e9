"""The twenty-third held-out set (split "holdout23"): kernels earlier held-out sets brought, at shapes never measured
— a cross-entropy over Qwen's 151,936-token vocabulary, GroupNorm, a row log-softmax, A @ B^T, causal grouped-query
attention, a batched matmul, a GEMV, RoPE computing its sin / cos, per-head q / k RMSNorm, RMSNorm's and softmax's
backward, a W8A16 projection, an int8 KV-cache dequantize. Chosen after stop 38's integer-division change, measured
once on the H200 and scored once with the model frozen, never fitted on: how far the families the model was
corrected on carry over to new shapes.
"""

from __future__ import annotations

from holdout2 import bmm_case, gemv_case, rope_inline_case
from holdout4 import cross_entropy_case, groupnorm_case, softmax_bwd_case
from holdout6 import qk_norm_case, rmsnorm_bwd_case
from holdout7 import w8a16_case
from holdout8 import kv_dequant_case
from holdout11 import gqa_attention_case, log_softmax_case, matmul_abt_case
from sweep_cases import Case, in_split

SPLIT = "holdout23"


def holdout23_cases() -> list[Case]:
    return [in_split(case, SPLIT) for case in (
        cross_entropy_case("holdout23_cross_entropy_bf16_1024x151936", 1024, 151936, "bf16"),
        groupnorm_case("holdout23_groupnorm_bf16_n4_c640_hw4096_g32", 4, 640, 4096, 32, "bf16"),
        log_softmax_case("holdout23_log_softmax_fp16_6000x7168", 6000, 7168, "fp16"),
        matmul_abt_case("holdout23_matmul_abt_fp16_2048x2816x1536", 2048, 2816, 1536, "fp16"),
        gqa_attention_case("holdout23_gqa_attention_bf16_b2_s1792_h16_kv4_d128", 2, 1792, 16, 4, 128, "bf16"),
        bmm_case("holdout23_bmm_fp16_b24_640x640x128", 24, 640, 640, 128, "fp16"),
        gemv_case("holdout23_gemv_fp16_12288x4096", 12288, 4096, "fp16"),
        rope_inline_case("holdout23_rope_inline_bf16_t3000_h24_d128", 3000, 24, 128, "bf16"),
        qk_norm_case("holdout23_qk_norm_bf16_t6000_h8_d128", 6000, 8, 128, "bf16"),
        rmsnorm_bwd_case("holdout23_rmsnorm_bwd_fp16_6144x3072", 6144, 3072, "fp16"),
        softmax_bwd_case("holdout23_softmax_bwd_bf16_3000x6000", 3000, 6000, "bf16"),
        w8a16_case("holdout23_w8a16_bf16_1024x6144x2048", 1024, 6144, 2048, "bf16"),
        kv_dequant_case("holdout23_kv_dequant_bf16_t12000_h4_d128", 12000, 4, 128, "bf16"),
    )]
