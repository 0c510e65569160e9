"""kernels.tuning: every tuned wrapper of the FFN / quantisation kernels searches exactly its AUTOTUNE_CONFIGS."""

import pytest

from jit import Config
from kernels import ffn, gemm, int4_softmax, mxfp4_fp8, quant_gemm
from kernels.tuning import as_configs


def test_as_configs_splits_launch_options():
    (cfg,) = as_configs([{"BLOCK": 64, "num_warps": 8, "num_stages": 2}])
    assert isinstance(cfg, Config) and cfg.kwargs == {"BLOCK": 64} and cfg.num_warps == 8 and cfg.num_stages == 2


@pytest.mark.parametrize("module, wrapper", [
    (gemm, "gemm_kernel_tuned"), (ffn, "swiglu_kernel_tuned"), (quant_gemm, "w4a16_kernel_tuned"),
    (int4_softmax, "int4_softmax_kernel_tuned"), (mxfp4_fp8, "fp8_grouped_gemm_kernel_tuned"),
])
def test_tuned_wrappers_mirror_autotune_configs(module, wrapper):
    tuned = getattr(module, wrapper)
    configs = module.AUTOTUNE_CONFIGS
    assert [c.kwargs for c in tuned.configs] == [{k: v for k, v in d.items() if k != "num_warps"} for d in configs]
    assert [c.num_warps for c in tuned.configs] == [d["num_warps"] for d in configs]
