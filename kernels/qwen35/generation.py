"""Batched generation: one prefill of every prompt, then decode steps for the sequences still running; greedy
(argmax kernel) or seeded temperature / top-p sampling (softmax kernel, then the top-p kernel with a seeded
uniform per row), stop tokens, `max_new_tokens`; text in and out when the model has a tokenizer."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from kernels.qwen35.families import family
from kernels.rows import argmax_rows, softmax_rows, top_p_sample


@dataclass
class GenerationOutput:
    tokens: list[list[int]]  # the new tokens of each prompt (a stop token that ended it included)
    logits: list[np.ndarray] | None = None  # per prompt fp32 [n_new, vocab]: the logits that chose each new token
    text: list[str] | None = None  # decoded new tokens when the model has a tokenizer
    prompt_tokens: list[list[int]] = field(default_factory=list)
    memory: dict[str, int] = field(default_factory=dict)  # bytes of weights, KV cache and GDN states


def choose(logits: np.ndarray, do_sample: bool, temperature: float, top_p: float,
           rng: np.random.Generator | None) -> np.ndarray:
    """Next token of each row of fp32 logits [N, vocab]."""
    with family("sampling"):
        if not do_sample:
            return argmax_rows(logits)
        probs = softmax_rows(logits, temperature)
        return top_p_sample(probs, top_p, rng.random(probs.shape[0]))  # the host only draws the uniforms


def generate(model, prompts, max_new_tokens: int = 16, *, do_sample: bool = False, temperature: float = 1.0,
             top_p: float = 1.0, seed: int | None = None, stop_tokens=None, return_logits: bool = False,
             progress: Callable[[str, int, int], None] | None = None) -> GenerationOutput:
    """Generate up to `max_new_tokens` for each prompt (token-id lists of any lengths, or strings when the model has
    a tokenizer), as one batch. stop_tokens: ids that end a sequence (default the config's eos_token_id).
    progress(stage, i, n) is called with ('prefill', 0, 1) and ('decode', i, n)."""
    if isinstance(prompts, str):
        prompts = [prompts]
    texts = prompts and isinstance(prompts[0], str)
    if texts:
        if model.tokenizer is None:
            raise ValueError("generate: text prompts need a model directory with tokenizer.json (and the "
                             "`tokenizers` package); pass token ids otherwise")
        prompts = [model.tokenizer.encode(p).ids for p in prompts]
    prompts = [list(map(int, p)) for p in prompts]
    if not prompts:
        raise ValueError("generate: no prompts")
    if max_new_tokens < 1:
        raise ValueError(f"generate: max_new_tokens must be >= 1, got {max_new_tokens}")
    if do_sample and not (temperature > 0 and 0 < top_p <= 1):
        raise ValueError(f"generate: sampling needs temperature > 0 and 0 < top_p <= 1, got {temperature}, {top_p}")
    stops = set(model.config.eos_token_id if stop_tokens is None else stop_tokens)
    rng = np.random.default_rng(seed) if do_sample else None
    n = len(prompts)
    cache = model.new_cache(n, max(len(p) for p in prompts) + max_new_tokens)
    if progress:
        progress("prefill", 0, 1)
    logits = np.stack(model.prefill(cache, prompts))
    tokens: list[list[int]] = [[] for _ in range(n)]
    kept: list[list[np.ndarray]] = [[] for _ in range(n)]
    active = np.arange(n, dtype=np.int32)
    for i in range(max_new_tokens):
        chosen = choose(logits, do_sample, temperature, top_p, rng)
        still = []
        for j, row in enumerate(active):
            tokens[row].append(int(chosen[j]))
            if return_logits:
                kept[row].append(logits[j])
            if int(chosen[j]) not in stops:
                still.append(j)
        if not still or i == max_new_tokens - 1:
            break
        if progress:
            progress("decode", i + 1, max_new_tokens - 1)
        active, chosen = active[still], chosen[still]
        logits = model.decode(cache, chosen, active)
    out = GenerationOutput(tokens, prompt_tokens=prompts, memory={
        "weights": model.weight_bytes, "kv_cache": cache.kv_bytes, "gdn_states": cache.state_bytes})
    if return_logits:
        out.logits = [np.stack(k).astype(np.float32) for k in kept]
    if model.tokenizer is not None:
        out.text = [model.tokenizer.decode(t) for t in tokens]
    return out
