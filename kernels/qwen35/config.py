"""The text-model configuration of both Qwen3.5 families, read from a Hugging Face config.json.

Every field transformers' Qwen3_5(Moe)TextConfig defines and its modeling code reads is here with the same default;
`from_dict` takes a plain text config or a multimodal one with a nested `text_config`, and rejects values the kernels
cannot honour (another activation, another RoPE type) with the field named.
"""

from __future__ import annotations

import dataclasses
import json
import os
from dataclasses import dataclass, field

DENSE, MOE = "dense", "moe"
_MOE_TYPES = ("qwen3_5_moe", "qwen3_5_moe_text")
_DENSE_TYPES = ("qwen3_5", "qwen3_5_text")
LAYER_KINDS = ("linear_attention", "full_attention")


@dataclass(frozen=True)
class Qwen35Config:
    """Shapes and constants of one Qwen3.5 text model (dense `Qwen3_5ForCausalLM` or MoE `Qwen3_5MoeForCausalLM`)."""

    family: str = MOE
    vocab_size: int = 248320
    hidden_size: int = 2048
    num_hidden_layers: int = 40
    num_attention_heads: int = 16
    num_key_value_heads: int = 2
    head_dim: int = 256
    hidden_act: str = "silu"
    rms_norm_eps: float = 1e-6
    tie_word_embeddings: bool = False
    attention_bias: bool = False
    rope_theta: float = 10000.0
    partial_rotary_factor: float = 0.25
    max_position_embeddings: int = 32768
    linear_conv_kernel_dim: int = 4
    linear_key_head_dim: int = 128
    linear_value_head_dim: int = 128
    linear_num_key_heads: int = 16
    linear_num_value_heads: int = 32
    layer_types: tuple[str, ...] = ()
    intermediate_size: int = 12288  # dense family
    moe_intermediate_size: int = 512  # MoE family
    shared_expert_intermediate_size: int = 512
    num_experts: int = 256
    num_experts_per_tok: int = 8
    eos_token_id: tuple[int, ...] = ()
    pad_token_id: int | None = None
    bos_token_id: int | None = None
    extra: dict = field(default_factory=dict, compare=False, repr=False)

    def __post_init__(self) -> None:
        if not self.layer_types:
            object.__setattr__(self, "layer_types", tuple(
                "full_attention" if (i + 1) % 4 == 0 else "linear_attention" for i in range(self.num_hidden_layers)))
        self.validate()

    # ---------------------------------------------------------------------------------------------- derived sizes
    @property
    def rotary_dim(self) -> int:
        return int(self.head_dim * self.partial_rotary_factor)

    @property
    def key_dim(self) -> int:
        return self.linear_num_key_heads * self.linear_key_head_dim

    @property
    def value_dim(self) -> int:
        return self.linear_num_value_heads * self.linear_value_head_dim

    @property
    def conv_dim(self) -> int:
        return 2 * self.key_dim + self.value_dim

    @property
    def is_moe(self) -> bool:
        return self.family == MOE

    def validate(self) -> None:
        """Raise ValueError naming the first field the model cannot run with."""
        def bad(name, why):
            raise ValueError(f"Qwen3.5 config: {name} {why} (got {getattr(self, name)!r})")

        if self.family not in (DENSE, MOE):
            bad("family", f"must be {DENSE!r} or {MOE!r}")
        if self.hidden_act != "silu":
            bad("hidden_act", "must be 'silu' (the only activation Qwen3.5 uses and the kernels fuse)")
        for name in ("vocab_size", "hidden_size", "num_hidden_layers", "num_attention_heads", "num_key_value_heads",
                     "head_dim", "linear_conv_kernel_dim", "linear_key_head_dim", "linear_value_head_dim",
                     "linear_num_key_heads", "linear_num_value_heads"):
            if not isinstance(getattr(self, name), int) or getattr(self, name) < 1:
                bad(name, "must be a positive integer")
        if self.num_attention_heads % self.num_key_value_heads:
            bad("num_attention_heads", f"must be a multiple of num_key_value_heads={self.num_key_value_heads}")
        if self.linear_num_value_heads % self.linear_num_key_heads:
            bad("linear_num_value_heads", f"must be a multiple of linear_num_key_heads={self.linear_num_key_heads}")
        if self.head_dim > 256:
            bad("head_dim", "must be at most 256 (the attention kernels hold a head in one tile)")
        if self.rotary_dim % 2 or not 0 < self.rotary_dim <= self.head_dim:
            bad("partial_rotary_factor", f"must give an even rotary dim in 2..head_dim, got {self.rotary_dim}")
        if len(self.layer_types) != self.num_hidden_layers:
            bad("layer_types", f"must have num_hidden_layers={self.num_hidden_layers} entries")
        if any(kind not in LAYER_KINDS for kind in self.layer_types):
            bad("layer_types", f"entries must be one of {LAYER_KINDS}")
        if self.is_moe:
            for name in ("moe_intermediate_size", "shared_expert_intermediate_size", "num_experts",
                         "num_experts_per_tok"):
                if getattr(self, name) < 1:
                    bad(name, "must be >= 1")
            if self.num_experts_per_tok > self.num_experts:
                bad("num_experts_per_tok", f"must be <= num_experts={self.num_experts}")
        elif self.intermediate_size < 1:
            bad("intermediate_size", "must be >= 1")

    # ---------------------------------------------------------------------------------------------- reading
    @classmethod
    def from_dict(cls, raw: dict) -> Qwen35Config:
        """From config.json's contents (a `text_config` inside is used when present), with transformers' defaults."""
        top_type = raw.get("model_type", "")
        text = dict(raw.get("text_config") or raw)
        model_type = text.get("model_type", top_type)
        archs = " ".join(raw.get("architectures") or [])
        if model_type in _MOE_TYPES or top_type in _MOE_TYPES or "Moe" in archs:
            family = MOE
        elif model_type in _DENSE_TYPES or top_type in _DENSE_TYPES or "Qwen3_5" in archs:
            family = DENSE
        else:
            raise ValueError(f"config.json: model_type {model_type or top_type!r} is not a Qwen3.5 model "
                             f"(expected one of {_MOE_TYPES + _DENSE_TYPES})")
        defaults = _FAMILY_DEFAULTS[family]
        names = {f.name for f in dataclasses.fields(cls)} - {"family", "extra", "layer_types", "eos_token_id",
                                                               "rope_theta", "partial_rotary_factor"}
        values = {name: text[name] for name in names if text.get(name) is not None}
        if text.get("head_dim") is None:
            values["head_dim"] = int(text.get("hidden_size", defaults["hidden_size"])
                                     // text.get("num_attention_heads", defaults["num_attention_heads"]))
        rope = dict(text.get("rope_parameters") or text.get("rope_scaling") or {})
        rope_type = rope.get("rope_type", rope.get("type", "default"))
        if rope_type not in ("default", "mrope"):
            raise ValueError(f"config.json: rope_parameters.rope_type {rope_type!r} is not supported "
                             "(Qwen3.5 checkpoints use 'default')")
        values["rope_theta"] = float(rope.get("rope_theta", text.get("rope_theta", 10000.0)))
        values["partial_rotary_factor"] = float(rope.get("partial_rotary_factor",
                                                         text.get("partial_rotary_factor", 0.25)))
        layers = values.get("num_hidden_layers", defaults["num_hidden_layers"])
        if text.get("layer_types") is not None:
            values["layer_types"] = tuple(text["layer_types"])
        else:
            interval = int(text.get("full_attention_interval", 4))
            values["layer_types"] = tuple("linear_attention" if (i + 1) % interval else "full_attention"
                                          for i in range(layers))
        eos = text.get("eos_token_id", raw.get("eos_token_id"))
        values["eos_token_id"] = () if eos is None else tuple(eos) if isinstance(eos, (list, tuple)) else (int(eos),)
        if "tie_word_embeddings" not in text and "tie_word_embeddings" in raw:
            values["tie_word_embeddings"] = bool(raw["tie_word_embeddings"])
        return cls(family=family, **{**defaults, **values}, extra={"raw": raw})

    @classmethod
    def from_file(cls, path: str | os.PathLike[str]) -> Qwen35Config:
        try:
            with open(path) as f:
                raw = json.load(f)
        except FileNotFoundError:
            raise FileNotFoundError(f"Qwen3.5 model: {path} is missing (a model directory needs config.json)") from None
        except json.JSONDecodeError as e:
            raise ValueError(f"Qwen3.5 model: {path} is not valid JSON: {e}") from None
        return cls.from_dict(raw)

    def to_dict(self) -> dict:
        """The config.json transformers reads for this model (text part; `architectures` names the class)."""
        out = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)
               if f.name not in ("family", "extra", "rope_theta", "partial_rotary_factor")}
        out["layer_types"] = list(self.layer_types)
        out["eos_token_id"] = list(self.eos_token_id) or None
        out["rope_parameters"] = {"rope_type": "default", "rope_theta": self.rope_theta,
                                  "partial_rotary_factor": self.partial_rotary_factor}
        if self.is_moe:
            out.update(model_type="qwen3_5_moe_text", architectures=["Qwen3_5MoeForCausalLM"])
            del out["intermediate_size"]
        else:
            out.update(model_type="qwen3_5_text", architectures=["Qwen3_5ForCausalLM"])
            for name in ("moe_intermediate_size", "shared_expert_intermediate_size", "num_experts",
                         "num_experts_per_tok"):
                del out[name]
        return out


# transformers' class defaults differ between the families (Qwen3_5TextConfig vs Qwen3_5MoeTextConfig)
_FAMILY_DEFAULTS = {
    MOE: {"hidden_size": 2048, "num_hidden_layers": 40, "num_attention_heads": 16, "num_key_value_heads": 2},
    DENSE: {"hidden_size": 4096, "num_hidden_layers": 32, "num_attention_heads": 16, "num_key_value_heads": 4,
            "intermediate_size": 12288},
}

# The embedded default: a tiny model of the MoE family that runs in seconds (README, `python -m kernels`).
TINY_MOE = dict(family=MOE, vocab_size=2048, hidden_size=256, num_hidden_layers=4, num_attention_heads=4,
                num_key_value_heads=2, head_dim=64, rope_theta=1e7, linear_key_head_dim=64, linear_value_head_dim=64,
                linear_num_key_heads=2, linear_num_value_heads=4, moe_intermediate_size=128,
                shared_expert_intermediate_size=256, num_experts=16, num_experts_per_tok=2,
                max_position_embeddings=4096)
