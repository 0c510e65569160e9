"""Qwen35 without a reference library: prefill then decode equals one longer prefill, batching does not change a
sequence's logits, generation options, input errors and the quantized options."""

import numpy as np
import pytest
from qwen35_reference import relative_error, tiny_config

from kernels.qwen35 import Qwen35
from kernels.qwen35.weights import random_tensors


@pytest.fixture(scope="module")
def moe_model():
    config = tiny_config(family="moe")
    return Qwen35(config, random_tensors(config, seed=7), "float32")


@pytest.mark.parametrize("layer_types", [
    ("linear_attention", "linear_attention", "linear_attention", "full_attention"),  # GDN and attention layers
    ("linear_attention", "linear_attention"),  # GDN layers alone
    ("full_attention", "full_attention"),  # attention layers alone
])
def test_prefill_then_decode_or_prefill_equals_longer_prefill(layer_types):
    config = tiny_config(family="dense", num_hidden_layers=len(layer_types), layer_types=layer_types)
    model = Qwen35(config, random_tensors(config, seed=8), "float32")
    rng = np.random.default_rng(9)
    prompts = [rng.integers(0, config.vocab_size, n).tolist() for n in (70, 13)]  # T = 70 crosses a 64-chunk
    follow = [rng.integers(0, config.vocab_size, 4).tolist() for _ in prompts]
    whole = model.forward([p + f for p, f in zip(prompts, follow)])
    cache = model.new_cache(2, 80)
    last = model.prefill(cache, prompts)
    steps = [np.stack(last)]
    for j in range(3):
        steps.append(model.decode(cache, [f[j] for f in follow]))
    for i, p in enumerate(prompts):
        for j, got in enumerate(steps):
            want = whole[i][len(p) - 1 + j]
            assert relative_error(got[i], want) <= 1e-4, (i, j)
    chunked = model.new_cache(2, 80)  # a second prefill continues the first (states and KV pages)
    model.prefill(chunked, prompts)
    for i, got in enumerate(model.prefill(chunked, follow, all_logits=True)):
        assert relative_error(got, whole[i][len(prompts[i]):]) <= 1e-4


def test_a_sequence_gives_the_same_logits_alone_and_in_a_batch(moe_model):
    rng = np.random.default_rng(10)
    prompts = [rng.integers(0, 512, n).tolist() for n in (1, 9, 41)]
    batched = moe_model.generate(prompts, 4, return_logits=True)
    for i, p in enumerate(prompts):
        alone = moe_model.generate([p], 4, return_logits=True)
        assert alone.tokens[0] == batched.tokens[i]
        assert relative_error(batched.logits[i], alone.logits[0]) <= 1e-5


def test_stop_tokens_end_each_sequence_on_its_own(moe_model):
    prompts = [[5, 6, 7], [100, 3]]
    free = moe_model.generate(prompts, 6)
    stop = free.tokens[0][2]
    out = moe_model.generate(prompts, 6, stop_tokens=[stop], return_logits=True)
    assert out.tokens[0] == free.tokens[0][:3]  # the stop token is kept and ends the sequence
    cut = free.tokens[1].index(stop) + 1 if stop in free.tokens[1] else 6
    assert out.tokens[1] == free.tokens[1][:cut]
    assert [len(x) for x in out.logits] == [len(t) for t in out.tokens]
    assert out.memory["kv_cache"] > 0 and out.memory["gdn_states"] > 0 and out.memory["weights"] > 0


def test_seeded_sampling(moe_model):
    prompts = [[1, 2, 3], [4]]
    a = moe_model.generate(prompts, 6, do_sample=True, temperature=0.8, top_p=0.9, seed=1)
    b = moe_model.generate(prompts, 6, do_sample=True, temperature=0.8, top_p=0.9, seed=1)
    c = moe_model.generate(prompts, 6, do_sample=True, temperature=5.0, seed=2)
    assert a.tokens == b.tokens and a.tokens != c.tokens
    greedy = moe_model.generate(prompts, 6)
    narrow = moe_model.generate(prompts, 6, do_sample=True, top_p=1e-6, seed=3)  # only the top token survives
    assert narrow.tokens == greedy.tokens


@pytest.mark.parametrize("prompts, match", [
    ([[]], "non-empty"), ([[1, 512]], "outside"), ([[-1]], "outside"), ([], "no prompts"), (["text"], "tokenizer"),
])
def test_bad_prompts_are_rejected(moe_model, prompts, match):
    with pytest.raises(ValueError, match=match):
        moe_model.generate(prompts, 2)


def test_bad_options_are_rejected(moe_model):
    with pytest.raises(ValueError, match="max_new_tokens"):
        moe_model.generate([[1]], 0)
    with pytest.raises(ValueError, match="temperature"):
        moe_model.generate([[1]], 2, do_sample=True, temperature=0.0)
    config = tiny_config(family="dense")
    with pytest.raises(ValueError, match="mxfp4"):
        Qwen35(config, random_tensors(config), "bfloat16", quantize="mxfp4")
    with pytest.raises(ValueError, match="w4a16"):
        Qwen35(config, random_tensors(config), "float32", quantize="w4a16")
    with pytest.raises(ValueError, match="dtype"):
        Qwen35(config, random_tensors(config), "int8")


def _dequantized(tensors, quantize):
    """The fp32 tensors that the quantized model holds, so an unquantized model can serve as the reference."""
    from kernels.moe_quant import dequantised_experts
    from kernels.mxfp4_fp8 import MXFP4Experts
    from kernels.quant import Int4Weight

    out = dict(tensors)
    for name, t in tensors.items():
        if name.endswith("experts.gate_up_proj"):
            down = name.replace("gate_up_proj", "down_proj")
            if quantize == "mxfp4":
                w1, w2 = MXFP4Experts.from_float(t), MXFP4Experts.from_float(tensors[down])
            else:
                w1, w2 = ([Int4Weight.from_float(np.ascontiguousarray(w[e].T)) for e in range(len(w))]
                          for w in (t, tensors[down]))
            out[name], out[down] = (np.asarray(w, np.float32) for w in dequantised_experts(w1, w2))
        elif (quantize == "w4a16" and t.ndim == 2 and "proj" in name and "shared_expert" not in name
              and t.shape[1] % 128 == 0 and t.shape[0] % 8 == 0):
            out[name] = np.asarray(Int4Weight.from_float(np.ascontiguousarray(t.T)).dequantize(), np.float32).T
    return out


@pytest.mark.parametrize("quantize", ["w4a16", "mxfp4"])
def test_quantized_models_match_their_dequantized_weights(quantize):
    config = tiny_config(family="moe")
    tensors = random_tensors(config, seed=11)
    prompts = [np.random.default_rng(12).integers(0, 512, 20).tolist()]
    got = Qwen35(config, tensors, "bfloat16", quantize=quantize).forward(prompts)[0]
    want = Qwen35(config, _dequantized(tensors, quantize), "float32").forward(prompts)[0]
    # bf16 activations (and FP8 expert inputs for MXFP4) against fp32 on the same effective weights
    assert relative_error(got, want) <= (8e-2 if quantize == "w4a16" else 1.5e-1)
