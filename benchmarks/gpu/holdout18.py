"""The eighteenth held-out set (split "holdout18"): the families issue 12 names, with the sweep's own kernels, at odd
shapes — bounds and row widths that are not multiples of 16 (Triton then moves one element an access), matmul
dimensions that are not multiples of any block, a causal attention over an odd sequence length. Chosen after stop
34's split-store change, measured once on the H200 and scored once with the model frozen, never fitted on: it asks
whether the validation figures carry over to the shapes users bring, where holdout16 asked it of round ones.
"""

from __future__ import annotations

from sweep_cases import (
    MATMUL_CONFIGS,
    SKINNY_CONFIGS,
    Case,
    add_case,
    attention_case,
    layernorm_case,
    matmul_case,
    rmsnorm_case,
    softmax_case,
    transpose_case,
)


def holdout18_cases() -> list[Case]:
    s = "holdout18"
    return [
        matmul_case("holdout18_matmul_fp16_1999x3001x1001", s, 1999, 3001, 1001, "fp16", MATMUL_CONFIGS),
        matmul_case("holdout18_matmul_bf16_wt_777x5003x2049", s, 777, 5003, 2049, "bf16", MATMUL_CONFIGS,
                    b_kmajor=True),
        matmul_case("holdout18_matmul_fp16_skinny_m5", s, 5, 4099, 3001, "fp16", SKINNY_CONFIGS),
        attention_case("holdout18_attention_fp16_d64_bh16_s2999", s, 16, 2999, 64, "fp16"),
        softmax_case("holdout18_softmax_fp16_6000x3001", s, 6000, 3001, "fp16"),
        softmax_case("holdout18_softmax_fp32_3000x7001", s, 3000, 7001, "fp32"),
        rmsnorm_case("holdout18_rmsnorm_bf16_5000x4099", s, 5000, 4099, "bf16"),
        layernorm_case("holdout18_layernorm_fp32_4001x3003", s, 4001, 3003, "fp32"),
        add_case("holdout18_add_fp32_40M", s, 40_000_003, "fp32"),
        add_case("holdout18_add_fp16_20M", s, 20_000_001, "fp16"),
        transpose_case("holdout18_transpose_fp32_3001x4099", s, 3001, 4099, "fp32"),
    ]
