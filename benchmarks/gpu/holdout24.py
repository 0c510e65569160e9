"""The twenty-fourth held-out set (split "holdout24"): the issue's families with the sweep's own kernels and kernels
earlier held-out sets brought, at shapes no set has had — fp16, bf16 and TF32 matmuls, a decode-sized M = 8, causal
attention, softmax, RMSNorm, LayerNorm, a transpose and an add, then a log-softmax, a cross-entropy, RMSNorm's and
softmax's backward, RoPE computing its sin / cos, GroupNorm, grouped-query attention, mean pooling, an int8 KV-cache
dequantize, a W8A16 projection, a depthwise convolution and an argmax over a vocabulary. Chosen after stop 39 made the
modeled time an expectation over the register estimate's spread, before any of it was measured; measured once on
the H200 and scored once with the model frozen, never fitted on.
"""

from __future__ import annotations

from holdout2 import rope_inline_case
from holdout4 import cross_entropy_case, groupnorm_case, softmax_bwd_case
from holdout5 import argmax_case, mean_pool_case
from holdout6 import rmsnorm_bwd_case
from holdout7 import w8a16_case
from holdout8 import kv_dequant_case
from holdout11 import gqa_attention_case, log_softmax_case
from holdout14 import depthwise_conv_case
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

SPLIT = "holdout24"


def holdout24_cases() -> list[Case]:
    s = SPLIT
    return [
        matmul_case("holdout24_matmul_fp16_5120x2048x2560", s, 5120, 2048, 2560, "fp16", MATMUL_CONFIGS),
        matmul_case("holdout24_matmul_bf16_1536x6144x4096", s, 1536, 6144, 4096, "bf16", MATMUL_CONFIGS),
        matmul_case("holdout24_matmul_fp32_3072x1536x1024", s, 3072, 1536, 1024, "fp32", MATMUL_CONFIGS),
        matmul_case("holdout24_matmul_bf16_skinny_m8", s, 8, 6144, 4096, "bf16", SKINNY_CONFIGS),
        attention_case("holdout24_attention_fp16_d128_bh8_s3072", s, 8, 3072, 128, "fp16"),
        softmax_case("holdout24_softmax_bf16_3072x10240", s, 3072, 10240, "bf16"),
        rmsnorm_case("holdout24_rmsnorm_bf16_8192x6144", s, 8192, 6144, "bf16"),
        layernorm_case("holdout24_layernorm_fp32_3000x5000", s, 3000, 5000, "fp32"),
        transpose_case("holdout24_transpose_fp16_4097x3001", s, 4097, 3001, "fp16"),
        add_case("holdout24_add_bf16_30M", s, 30_000_001, "bf16"),
    ] + [in_split(case, s) for case in (  # other sets' kernels
        log_softmax_case("holdout24_log_softmax_bf16_2048x24000", 2048, 24000, "bf16"),
        cross_entropy_case("holdout24_cross_entropy_fp16_2048x32000", 2048, 32000, "fp16"),
        rmsnorm_bwd_case("holdout24_rmsnorm_bwd_bf16_2048x7168", 2048, 7168, "bf16"),
        softmax_bwd_case("holdout24_softmax_bwd_fp16_4096x3000", 4096, 3000, "fp16"),
        rope_inline_case("holdout24_rope_inline_fp16_t5000_h8_d64", 5000, 8, 64, "fp16"),
        groupnorm_case("holdout24_groupnorm_fp16_n8_c320_hw1024_g32", 8, 320, 1024, 32, "fp16"),
        gqa_attention_case("holdout24_gqa_attention_fp16_b1_s4096_h32_kv8_d64", 1, 4096, 32, 8, 64, "fp16"),
        mean_pool_case("holdout24_mean_pool_bf16_b64_s1024_d2048", 64, 1024, 2048, "bf16"),
        kv_dequant_case("holdout24_kv_dequant_fp16_t8000_h8_d128", 8000, 8, 128, "fp16"),
        w8a16_case("holdout24_w8a16_fp16_2048x4096x4096", 2048, 4096, 4096, "fp16"),
        depthwise_conv_case("holdout24_depthwise_conv3x3_bf16_n16_28x28_c256", 16, 28, 28, 256, "bf16"),
        argmax_case("holdout24_argmax_fp16_1024x128256", 1024, 128256, "fp16"),
    )]
