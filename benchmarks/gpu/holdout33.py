"""The thirty-third held-out set (split "holdout33"): blind — chosen at stop 50 after that stop's change (a squeezed
loop that gathers through indices it loads waits as Triton's machine code does), which was chosen looking at every
earlier set. Small, to fit the device time left: the issue's families with the sweep's own kernels at shapes no set
has had (fp16 and bf16 [N, K] matmuls, M = 20, causal attention at D = 64 and D = 128, four paged decodes — 8, 6, 5
and 2 query heads a KV head at D = 128 and 64 — softmax, RMSNorm, LayerNorm, an add, a transpose), then the MoE
combine the change moved. Its counters modeled before any timing; measured once on the H200 and scored once, never
fitted on.
"""

from __future__ import annotations

from holdout21 import moe_combine_case
from sweep_cases import (
    MATMUL_CONFIGS,
    SKINNY_CONFIGS,
    Case,
    add_case,
    attention_case,
    in_split,
    layernorm_case,
    matmul_case,
    paged_decode_case,
    rmsnorm_case,
    softmax_case,
    transpose_case,
)

SPLIT = "holdout33"


def holdout33_cases() -> list[Case]:
    s = SPLIT
    return [
        paged_decode_case("holdout33_decode_fp16_b28_h64_kv8_d128", s, 28, 64, 8, 128, 2600, "fp16"),
        paged_decode_case("holdout33_decode_bf16_b56_h24_kv4_d64", s, 56, 24, 4, 64, 1700, "bf16"),
        paged_decode_case("holdout33_decode_bf16_b20_h40_kv8_d128", s, 20, 40, 8, 128, 3400, "bf16"),
        paged_decode_case("holdout33_decode_fp16_b72_h16_kv8_d64", s, 72, 16, 8, 64, 1100, "fp16"),
        matmul_case("holdout33_matmul_fp16_3072x3072x1536", s, 3072, 3072, 1536, "fp16", MATMUL_CONFIGS),
        matmul_case("holdout33_matmul_bf16_wt_2560x3584x2560", s, 2560, 3584, 2560, "bf16", MATMUL_CONFIGS,
                    b_kmajor=True),
        matmul_case("holdout33_matmul_fp16_skinny_m20", s, 20, 3584, 4608, "fp16", SKINNY_CONFIGS),
        attention_case("holdout33_attention_bf16_d64_bh28_s1900", s, 28, 1900, 64, "bf16"),
        attention_case("holdout33_attention_fp16_d128_bh14_s2300", s, 14, 2300, 128, "fp16"),
        softmax_case("holdout33_softmax_fp32_7000x3500", s, 7000, 3500, "fp32"),
        rmsnorm_case("holdout33_rmsnorm_fp16_7500x5120", s, 7500, 5120, "fp16"),
        layernorm_case("holdout33_layernorm_bf16_6000x2560", s, 6000, 2560, "bf16"),
        add_case("holdout33_add_bf16_35M", s, 35_000_017, "bf16"),
        transpose_case("holdout33_transpose_fp16_3500x5000", s, 3500, 5000, "fp16"),
    ] + [in_split(case, s) for case in (  # another set's kernel
        moe_combine_case("holdout33_moe_combine_bf16_2500x3584_k8", 2500, 3584, 8, "bf16"),
    )]
