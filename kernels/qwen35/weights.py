"""Checkpoint files: read a Hugging Face model directory (one safetensors file or a sharded index) with the
`safetensors` numpy API, write one, and make seeded random weights for a config (the embedded default and tests).

Tensor names are transformers' (`model.layers.N.linear_attn.in_proj_qkv.weight`, ...); multimodal checkpoints'
`model.language_model.` prefix is read as `model.`, and the vision tower and MTP head are skipped. Errors name the
file and the tensor.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import ml_dtypes  # noqa: F401  (registers bfloat16 with numpy, which safetensors' numpy API needs)
import numpy as np

from kernels.qwen35.config import Qwen35Config

SINGLE_FILE = "model.safetensors"
INDEX_FILE = "model.safetensors.index.json"
_SKIPPED_PREFIXES = ("mtp.", "model.visual.", "visual.", "model.vision_tower.")
_PREFIX_ALIASES = (("model.language_model.", "model."), ("language_model.model.", "model."),
                   ("language_model.lm_head.", "lm_head."))


def _canonical(name: str) -> str | None:
    for old, new in _PREFIX_ALIASES:
        if name.startswith(old):
            name = new + name[len(old):]
    return None if name.startswith(_SKIPPED_PREFIXES) else name


def _open_file(path: Path, names: list[str] | None, out: dict[str, np.ndarray]) -> None:
    from safetensors import SafetensorError, safe_open

    if not path.is_file():
        raise FileNotFoundError(f"Qwen3.5 checkpoint: weight file {path} is missing")
    try:
        with safe_open(str(path), framework="np") as f:
            for name in names if names is not None else f.keys():
                key = _canonical(name)
                if key is None:
                    continue
                try:
                    out[key] = f.get_tensor(name)
                except (SafetensorError, TypeError, ValueError) as e:
                    raise ValueError(f"Qwen3.5 checkpoint: tensor {name!r} in {path} cannot be read: {e}") from None
    except SafetensorError as e:
        raise ValueError(f"Qwen3.5 checkpoint: {path} is not a valid safetensors file: {e}") from None
    except OSError as e:
        raise ValueError(f"Qwen3.5 checkpoint: {path} cannot be read: {e}") from None


def read_tensors(directory: str | os.PathLike[str]) -> dict[str, np.ndarray]:
    """All text-model tensors of a model directory: model.safetensors, or the shards its index names."""
    directory = Path(directory)
    index = directory / INDEX_FILE
    out: dict[str, np.ndarray] = {}
    if index.is_file():
        try:
            weight_map = json.loads(index.read_text())["weight_map"]
        except (json.JSONDecodeError, KeyError, TypeError) as e:
            raise ValueError(f"Qwen3.5 checkpoint: {index} is not a safetensors index (needs a weight_map): "
                             f"{e}") from None
        shards: dict[str, list[str]] = {}
        for name, shard in weight_map.items():
            shards.setdefault(shard, []).append(name)
        for shard, names in shards.items():
            _open_file(directory / shard, names, out)
        return out
    single = directory / SINGLE_FILE
    if single.is_file():
        _open_file(single, None, out)
        return out
    raise FileNotFoundError(f"Qwen3.5 checkpoint: {directory} has neither {SINGLE_FILE} nor {INDEX_FILE}")


def write_checkpoint(directory: str | os.PathLike[str], config: Qwen35Config, tensors: dict[str, np.ndarray],
                     shards: int = 1) -> None:
    """config.json plus model.safetensors (or `shards` files and an index), as transformers' save_pretrained."""
    from safetensors.numpy import save_file

    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "config.json").write_text(json.dumps(config.to_dict(), indent=1))
    names = sorted(tensors)
    if shards <= 1:
        save_file({n: np.ascontiguousarray(tensors[n]) for n in names}, str(directory / SINGLE_FILE))
        return
    weight_map = {}
    for i in range(shards):
        part = names[i::shards]
        file = f"model-{i + 1:05d}-of-{shards:05d}.safetensors"
        save_file({n: np.ascontiguousarray(tensors[n]) for n in part}, str(directory / file))
        weight_map.update(dict.fromkeys(part, file))
    (directory / INDEX_FILE).write_text(json.dumps({"metadata": {}, "weight_map": weight_map}, indent=1))


def expected_shapes(config: Qwen35Config) -> dict[str, tuple[int, ...]]:
    """Every tensor the text model reads, by transformers' name, with its shape."""
    c = config
    shapes: dict[str, tuple[int, ...]] = {"model.embed_tokens.weight": (c.vocab_size, c.hidden_size),
                                          "model.norm.weight": (c.hidden_size,)}
    if not c.tie_word_embeddings:
        shapes["lm_head.weight"] = (c.vocab_size, c.hidden_size)
    for i, kind in enumerate(c.layer_types):
        p = f"model.layers.{i}."
        shapes[p + "input_layernorm.weight"] = (c.hidden_size,)
        shapes[p + "post_attention_layernorm.weight"] = (c.hidden_size,)
        if kind == "linear_attention":
            a = p + "linear_attn."
            shapes.update({a + "in_proj_qkv.weight": (c.conv_dim, c.hidden_size),
                           a + "in_proj_z.weight": (c.value_dim, c.hidden_size),
                           a + "in_proj_b.weight": (c.linear_num_value_heads, c.hidden_size),
                           a + "in_proj_a.weight": (c.linear_num_value_heads, c.hidden_size),
                           a + "conv1d.weight": (c.conv_dim, 1, c.linear_conv_kernel_dim),
                           a + "dt_bias": (c.linear_num_value_heads,), a + "A_log": (c.linear_num_value_heads,),
                           a + "norm.weight": (c.linear_value_head_dim,),
                           a + "out_proj.weight": (c.hidden_size, c.value_dim)})
        else:
            a = p + "self_attn."
            hd = c.head_dim
            q_out, kv_out = c.num_attention_heads * hd * 2, c.num_key_value_heads * hd
            shapes.update({a + "q_proj.weight": (q_out, c.hidden_size), a + "k_proj.weight": (kv_out, c.hidden_size),
                           a + "v_proj.weight": (kv_out, c.hidden_size),
                           a + "o_proj.weight": (c.hidden_size, c.num_attention_heads * hd),
                           a + "q_norm.weight": (hd,), a + "k_norm.weight": (hd,)})
            if c.attention_bias:
                shapes.update({a + "q_proj.bias": (q_out,), a + "k_proj.bias": (kv_out,),
                               a + "v_proj.bias": (kv_out,), a + "o_proj.bias": (c.hidden_size,)})
        m = p + "mlp."
        if c.is_moe:
            E, inter, shared = c.num_experts, c.moe_intermediate_size, c.shared_expert_intermediate_size
            shapes.update({m + "gate.weight": (E, c.hidden_size),
                           m + "experts.gate_up_proj": (E, 2 * inter, c.hidden_size),
                           m + "experts.down_proj": (E, c.hidden_size, inter),
                           m + "shared_expert.gate_proj.weight": (shared, c.hidden_size),
                           m + "shared_expert.up_proj.weight": (shared, c.hidden_size),
                           m + "shared_expert.down_proj.weight": (c.hidden_size, shared),
                           m + "shared_expert_gate.weight": (1, c.hidden_size)})
        else:
            shapes.update({m + "gate_proj.weight": (c.intermediate_size, c.hidden_size),
                           m + "up_proj.weight": (c.intermediate_size, c.hidden_size),
                           m + "down_proj.weight": (c.hidden_size, c.intermediate_size)})
    return shapes


def check_tensors(tensors: dict[str, np.ndarray], config: Qwen35Config, where: str) -> None:
    """Every expected tensor present with its shape (per-expert checkpoints are not a Qwen3.5 format)."""
    for name, shape in expected_shapes(config).items():
        if name not in tensors:
            raise ValueError(f"Qwen3.5 checkpoint {where}: tensor {name!r} is missing")
        if tuple(tensors[name].shape) != shape:
            raise ValueError(f"Qwen3.5 checkpoint {where}: tensor {name!r} has shape {tuple(tensors[name].shape)}, "
                             f"the config needs {shape}")


def random_tensors(config: Qwen35Config, seed: int = 0) -> dict[str, np.ndarray]:
    """Seeded random fp32 weights at scales that keep activations O(1) and logits spread (not transformers' init,
    whose zero norms and 0.02 weights make every logit nearly equal)."""
    rng = np.random.default_rng(seed)
    out = {}
    for name, shape in expected_shapes(config).items():
        if name.endswith("A_log"):
            value = np.log(rng.uniform(1.0, 16.0, shape))
        elif name.endswith("dt_bias"):
            value = 1.0 + 0.1 * rng.standard_normal(shape)
        elif name.endswith("linear_attn.norm.weight"):
            value = 1.0 + 0.1 * rng.standard_normal(shape)
        elif name.endswith(("layernorm.weight", "norm.weight")):
            value = 0.1 * rng.standard_normal(shape)  # zero-centred norms: the scale is 1 + w
        elif name.endswith("conv1d.weight"):
            value = rng.standard_normal(shape) / np.sqrt(shape[-1])
        elif name.endswith(".bias"):
            value = 0.1 * rng.standard_normal(shape)
        elif name == "model.embed_tokens.weight":
            value = rng.standard_normal(shape)
        else:
            value = rng.standard_normal(shape) / np.sqrt(shape[-1])
        out[name] = value.astype(np.float32)
    return out
