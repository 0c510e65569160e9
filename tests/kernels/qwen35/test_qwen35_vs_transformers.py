"""Qwen35 against transformers' Qwen3_5ForCausalLM / Qwen3_5MoeForCausalLM on tiny random models (needs the
`reference` extra: torch CPU + transformers; skipped without it).

fp32: identical greedy tokens and per-step logits within 1e-3 relative error (max|a-b| / max|b|), for a batch of
prompts of lengths 1, 9 and 41 run together here and one by one in transformers. bf16 weights: first-step logits
within 8e-2 of transformers' fp32 run and the same greedy tokens up to the first near-tie.
"""

import numpy as np
import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")

from qwen35_reference import hf_greedy, hf_model, relative_error, tiny_config  # noqa: E402

from kernels.qwen35 import Qwen35  # noqa: E402
from kernels.qwen35.weights import random_tensors  # noqa: E402

NEW_TOKENS = 5
PROMPT_LENGTHS = (1, 9, 41)

CONFIGS = {
    "moe": dict(family="moe"),
    "dense": dict(family="dense"),
    # different head counts and dims, full attention every 3rd layer, tied embeddings, attention biases
    "moe-heads-every3-tied": dict(family="moe", num_hidden_layers=3, num_attention_heads=6, num_key_value_heads=3,
                                  head_dim=32, linear_num_key_heads=1, linear_num_value_heads=3,
                                  linear_key_head_dim=32, linear_value_head_dim=48, tie_word_embeddings=True,
                                  layer_types=("linear_attention", "linear_attention", "full_attention"),
                                  num_experts=6, num_experts_per_tok=3, rope_theta=1e4),
    "dense-bias-conv3-mha": dict(family="dense", num_hidden_layers=2, num_attention_heads=2, num_key_value_heads=2,
                                 attention_bias=True, linear_conv_kernel_dim=3, partial_rotary_factor=0.5,
                                 layer_types=("full_attention", "linear_attention"), rms_norm_eps=1e-5),
}


def _prompts(config, seed=0):
    rng = np.random.default_rng(seed)
    return [rng.integers(0, config.vocab_size, n).tolist() for n in PROMPT_LENGTHS]


@pytest.mark.parametrize("name", list(CONFIGS))
def test_fp32_greedy_tokens_and_logits_match(name):
    config = tiny_config(**CONFIGS[name])
    tensors = random_tensors(config, seed=3)
    prompts = _prompts(config)
    out = Qwen35(config, tensors, "float32").generate(prompts, NEW_TOKENS, return_logits=True)
    reference = hf_model(config, tensors)
    for prompt, tokens, logits in zip(prompts, out.tokens, out.logits):
        want_tokens, want_logits = hf_greedy(reference, prompt, NEW_TOKENS)
        assert tokens == want_tokens, f"{name}, prompt of {len(prompt)}"
        assert logits.shape == want_logits.shape and logits.dtype == np.float32
        assert relative_error(logits, want_logits) <= 1e-3, f"{name}, prompt of {len(prompt)}"


@pytest.mark.parametrize("family", ["moe", "dense"])
def test_bf16_close_to_transformers_fp32(family):
    config = tiny_config(family=family)
    tensors = random_tensors(config, seed=4)
    prompts = _prompts(config, seed=1)
    out = Qwen35(config, tensors, "bfloat16").generate(prompts, NEW_TOKENS, return_logits=True)
    reference = hf_model(config, tensors)
    for prompt, tokens, logits in zip(prompts, out.tokens, out.logits):
        want_tokens, want_logits = hf_greedy(reference, prompt, NEW_TOKENS)
        scale = np.abs(want_logits[0]).max()
        assert relative_error(logits[0], want_logits[0]) <= 8e-2
        for step, (got, want) in enumerate(zip(tokens, want_tokens)):
            if got != want:  # allowed only where transformers' fp32 logits nearly tie between the two
                gap = abs(want_logits[step][want] - want_logits[step][got])
                assert gap <= 2 * 8e-2 * scale, f"step {step}: {got} vs {want}, gap {gap:.3g}"
                break
