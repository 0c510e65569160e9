"""transformers' Qwen3.5 as the reference (test-only extra `reference`: torch CPU + transformers).

Builds the transformers model of a Qwen35Config with given fp32 tensors and runs greedy decoding of each prompt
on its own (batch 1, so no padding is involved), returning the new tokens and the fp32 logits that chose them.
"""

from __future__ import annotations

import numpy as np


def hf_model(config, tensors: dict[str, np.ndarray], dtype: str = "float32"):
    import torch
    from transformers import Qwen3_5ForCausalLM, Qwen3_5MoeForCausalLM, Qwen3_5MoeTextConfig, Qwen3_5TextConfig

    raw = config.to_dict()
    raw.pop("architectures"), raw.pop("model_type")
    cls, cfg_cls = ((Qwen3_5MoeForCausalLM, Qwen3_5MoeTextConfig) if config.is_moe
                    else (Qwen3_5ForCausalLM, Qwen3_5TextConfig))
    model = cls(cfg_cls(**raw)).eval()
    state = {name: torch.from_numpy(np.ascontiguousarray(t, np.float32)) for name, t in tensors.items()}
    missing, unexpected = model.load_state_dict(state, strict=False)
    missing = [m for m in missing if not (config.tie_word_embeddings and m == "lm_head.weight")]
    assert not missing and not unexpected, (missing, unexpected)
    if config.tie_word_embeddings:
        model.tie_weights()
    return model.to(getattr(torch, dtype))


def hf_greedy(model, prompt: list[int], max_new_tokens: int) -> tuple[list[int], np.ndarray]:
    import torch

    with torch.no_grad():
        ids = torch.tensor([prompt])  # an explicit mask: generate would take tokens equal to pad_token_id for padding
        out = model.generate(ids, attention_mask=torch.ones_like(ids), max_new_tokens=max_new_tokens, do_sample=False,
                             output_logits=True, return_dict_in_generate=True, pad_token_id=0)
    tokens = out.sequences[0, len(prompt):].tolist()
    return tokens, torch.stack([step[0] for step in out.logits]).float().numpy()


def hf_logits(model, prompt: list[int]) -> np.ndarray:
    """fp32 logits of every position of one prompt (one forward pass)."""
    import torch

    with torch.no_grad():
        return model(torch.tensor([prompt])).logits[0].float().numpy()


def tiny_config(family: str = "moe", **changes):
    """The embedded model's shapes with a small vocab (fast for transformers too), changed by `changes`."""
    from kernels.qwen35.config import TINY_MOE, Qwen35Config

    base = {**TINY_MOE, "vocab_size": 512, "family": family}
    if family == "dense":
        for name in ("moe_intermediate_size", "shared_expert_intermediate_size", "num_experts", "num_experts_per_tok"):
            base.pop(name)
        base["intermediate_size"] = 384
    return Qwen35Config(**{**base, **changes})


def relative_error(a: np.ndarray, b: np.ndarray) -> float:
    """max |a - b| / max |b| (the issue's measure)."""
    return float(np.abs(np.asarray(a, np.float64) - b).max() / np.abs(b).max())
