"""The projection of real sizes: parameter counts match the published model sizes, the memory budget adds up,
and modeled scenarios of a small config scale by the layer counts."""

import math

import numpy as np
import pytest
from qwen35_reference import tiny_config

from kernels.qwen35 import projection
from kernels.qwen35.weights import expected_shapes


@pytest.mark.parametrize("name, billions", [("0.8b", 0.8), ("35b-a3b", 35), ("397b-a17b", 397)])
def test_parameter_counts_match_the_published_sizes(name, billions):
    config = projection.preset(name)
    total = sum(projection.parameter_counts(config).values())
    assert abs(total / 1e9 - billions) / billions < 0.1, total  # names round the count (the 0.8B's is 0.75B)
    assert total == sum(math.prod(s) for s in expected_shapes(config).values())


def test_memory_budget():
    config = projection.preset("397b-a17b")
    w = projection.weight_bytes(config)
    assert w["bf16"] > 700e9 and w["int4"] < w["bf16"] / 3.5 and w["int4"] < w["mxfp4"] < w["bf16"]
    c = projection.cache_bytes(config, batch=8, tokens=4096)
    assert c["kv_cache"] == 15 * 2 * 2 * 256 * 2 * 4096 * 8  # layers x K,V x Hkv x D x bf16 x tokens x batch
    assert c["gdn_states"] == 45 * 8 * (64 * 128 * 128 * 4 + (2 * 2048 + 8192) * 3 * 2)
    text = projection._memory(config, "h200")
    assert "bf16" in text and "DOES NOT FIT" in text and "int4" in text


def test_modeled_scenarios_scale_by_layer_counts(monkeypatch):
    config = tiny_config(family="moe", num_hidden_layers=8)  # 6 GDN + 2 attention layers
    monkeypatch.setattr(projection, "PREFILL_TOKENS", 96)
    monkeypatch.setattr(projection, "CONTEXT", 128)
    scenarios, kinds = projection.model_scenarios(config, "mtt-s5000")
    assert kinds == {"gdn": 6, "attn": 2}
    prefill, decode1, decode8 = scenarios
    for s in scenarios:
        layers = {label.split("/")[0] for label in s.labels}
        assert {"gdn", "attn", "lm_head", "embed"} <= layers
        per_layer = {k: sum(r.modeled_seconds for r, lab in zip(s.launches, s.labels) if lab.startswith(k + "/"))
                     for k in kinds}
        once = sum(r.modeled_seconds for r, lab in zip(s.launches, s.labels) if lab.split("/")[0] not in kinds)
        assert np.isclose(s.seconds(config, kinds), 6 * per_layer["gdn"] + 2 * per_layer["attn"] + once)
        assert all(v > 0 for v in per_layer.values())
    assert decode8.seconds(config, kinds) > decode1.seconds(config, kinds)
    assert prefill.seconds(config, kinds) > decode1.seconds(config, kinds)
