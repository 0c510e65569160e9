"""Real Qwen3.5 sizes, modeled: one layer of each kind (Gated DeltaNet, gated attention; each with its MoE or MLP) at
the published shapes, run as modeled launches (`jit.launcher.model_only`: only the measured programs execute) on
synthetic bf16 weights, never allocating the whole model. Scaled by the layer counts, plus the embedding, final norm
and LM head, this gives prefill of 4k tokens and decode at batch 1 and 8 on one card, the share of each kernel family
in the layer time, and the memory budget (weights bf16 / INT4 / MXFP4, KV cache, GDN states) against the card.

Synthetic weights are zeros (untouched pages cost no memory; the modeled time does not depend on values), except
the router and the embedding rows of the prompt, which are random so that tokens spread over the experts as they
would; the router reads those rows (`SparseMoe.router_input`) since the modeled layer computes no activations.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

import simulator
from jit.launcher import model_only
from kernels._common import BF16
from kernels.qwen35.config import DENSE, MOE, Qwen35Config
from kernels.qwen35.families import labelled
from kernels.qwen35.model import Qwen35
from kernels.qwen35.summary import human_bytes, per_family, table
from kernels.qwen35.weights import expected_shapes

# Published configs (research/qwen35_sizes.md; the text part of each checkpoint's config.json).
_COMMON = dict(vocab_size=248320, head_dim=256, rope_theta=1e7, partial_rotary_factor=0.25, linear_key_head_dim=128,
               linear_value_head_dim=128, linear_num_key_heads=16, linear_conv_kernel_dim=4,
               max_position_embeddings=262144, rms_norm_eps=1e-6)
PRESETS = {
    "qwen3.5-0.8b": dict(_COMMON, family=DENSE, hidden_size=1024, num_hidden_layers=24, num_attention_heads=8,
                         num_key_value_heads=2, intermediate_size=3584, linear_num_value_heads=16,
                         tie_word_embeddings=True),
    "qwen3.5-35b-a3b": dict(_COMMON, family=MOE, hidden_size=2048, num_hidden_layers=40, num_attention_heads=16,
                            num_key_value_heads=2, linear_num_value_heads=32, num_experts=256, num_experts_per_tok=8,
                            moe_intermediate_size=512, shared_expert_intermediate_size=512),
    "qwen3.5-397b-a17b": dict(_COMMON, family=MOE, hidden_size=4096, num_hidden_layers=60, num_attention_heads=32,
                              num_key_value_heads=2, linear_num_value_heads=64, num_experts=512,
                              num_experts_per_tok=10, moe_intermediate_size=1024,
                              shared_expert_intermediate_size=1024),
}
ALIASES = {"0.8b": "qwen3.5-0.8b", "35b-a3b": "qwen3.5-35b-a3b", "397b-a17b": "qwen3.5-397b-a17b"}
# Card memory (research/qwen35_sizes.md: MTT S5000 80 GB, S4000 48 GB; H200 141 GB HBM3e).
CARD_BYTES = {"mtt-s5000": 80e9, "mtt-s4000": 48e9, "h200": 141e9}
MACHINES = ("mtt-s5000", "h200")
PREFILL_TOKENS, CONTEXT, DECODE_BATCHES = 4096, 4096, (1, 8)
# Kernels whose outputs steer later launches (routing, expert grouping): they run every program.
RUN_FULLY = ("_router_kernel", "_count_kernel", "_offsets_kernel", "_scatter_kernel", "_rmsnorm_kernel",
             "_gather_rows_kernel")
# At decode the grouped expert GEMMs' grids (sized for every expert's worst-case padding) have a few working
# programs among many that exit at once; a sample scaled to the grid overstates them (about tenfold at batch 1,
# 2.4x at batch 8 for 35B-A3B), so at batch 1 they are measured on every program. Larger batches would need
# gigabytes of trace that way: their expert GEMM times are upper bounds (NOTE below). At prefill every block works.
DECODE_MEASURED_FULLY = ("_grouped_swiglu_kernel", "_grouped_down_kernel")
NOTE = ("note: at decode batch > 1 the MoE expert GEMMs are modeled from a sample scaled to their padded grid, "
        "which overstates them (2.4x for 35B-A3B at batch 8)")


def preset(name: str) -> Qwen35Config:
    name = ALIASES.get(name, name)
    if name not in PRESETS:
        raise ValueError(f"unknown model {name!r}; choose one of {sorted(PRESETS)}")
    return Qwen35Config(**PRESETS[name])


# ------------------------------------------------------------------------------------------------ memory budget
def parameter_counts(config: Qwen35Config) -> dict[str, int]:
    """Parameters by how they quantize: 'experts' (routed MoE experts), 'linear' (other projection weights with a
    K that 128-groups divide), 'other' (embedding, LM head, norms, router, conv, gates: kept in bf16)."""
    counts = {"experts": 0, "linear": 0, "other": 0}
    for name, shape in expected_shapes(config).items():
        n = math.prod(shape)
        if "experts." in name and "shared" not in name:
            counts["experts"] += n
        elif len(shape) == 2 and "proj" in name and shape[1] % 128 == 0:
            counts["linear"] += n
        else:
            counts["other"] += n
    return counts


def weight_bytes(config: Qwen35Config) -> dict[str, float]:
    """Weight bytes in bf16; INT4 W4A16 (4-bit codes + fp16 scale and 4-bit zero per 128) for every projection and
    expert; MXFP4 experts (4-bit codes + one E8M0 scale per 32) with the rest in bf16."""
    n = parameter_counts(config)
    int4 = 0.5 + 2 / 128 + 0.5 / 128
    mxfp4 = 0.5 + 1 / 32
    return {"bf16": 2.0 * sum(n.values()),
            "int4": int4 * (n["experts"] + n["linear"]) + 2.0 * n["other"],
            "mxfp4": mxfp4 * n["experts"] + 2.0 * (n["linear"] + n["other"])}


def cache_bytes(config: Qwen35Config, batch: int, tokens: int) -> dict[str, int]:
    """bf16 KV cache of the attention layers and the GDN conv (bf16) and recurrent (fp32) states."""
    attn = config.layer_types.count("full_attention")
    gdn = config.num_hidden_layers - attn
    kv = attn * 2 * config.num_key_value_heads * config.head_dim * 2 * tokens * batch
    state = gdn * batch * (config.linear_num_value_heads * config.linear_key_head_dim * config.linear_value_head_dim
                           * 4 + config.conv_dim * (config.linear_conv_kernel_dim - 1) * 2)
    return {"kv_cache": kv, "gdn_states": state}


# ------------------------------------------------------------------------------------------------ modeled run
def synthetic_tensors(config: Qwen35Config, layers: list[int], seed: int = 0) -> dict[str, np.ndarray]:
    """bf16 tensors of `layers` (plus embedding, final norm, LM head): zeros, Linear weights in the order whose
    transpose the GEMMs read without a copy; random router and prompt embedding rows."""
    rng = np.random.default_rng(seed)
    wanted = {"model.embed_tokens.weight", "model.norm.weight", "lm_head.weight"}
    out = {}
    for name, shape in expected_shapes(config).items():
        if name not in wanted and not any(name.startswith(f"model.layers.{i}.") for i in layers):
            continue
        if name.endswith("mlp.gate.weight"):
            out[name] = (rng.standard_normal(shape) / math.sqrt(shape[1])).astype(BF16)
        elif len(shape) == 2 and name != "model.embed_tokens.weight":
            out[name] = np.zeros(shape, BF16, order="F")
        else:
            out[name] = np.zeros(shape, BF16)
    embed = out["model.embed_tokens.weight"]
    embed[:PREFILL_TOKENS] = rng.standard_normal((PREFILL_TOKENS, config.hidden_size)).astype(BF16)
    return out


@dataclass
class Scenario:
    name: str
    batch: int
    tokens_per_sequence: int  # new tokens per sequence in the step
    launches: list
    labels: list[str]

    def seconds(self, config: Qwen35Config, kinds: dict[str, int]) -> float:
        """Whole-model modeled time: each modeled layer times its kind's count, plus the once-per-step ops."""
        total = 0.0
        for record, label in zip(self.launches, self.labels):
            layer = label.split("/")[0]
            total += record.modeled_seconds * (kinds[layer] if layer in kinds else 1)
        return total


def router_stand_in(model: Qwen35, tokens: int) -> None:
    rows = model.embed[:tokens]
    for layer in model.layers:
        if hasattr(layer.mlp, "router_input"):
            layer.mlp.router_input = rows


def model_scenarios(config: Qwen35Config, machine: str) -> tuple[list[Scenario], dict[str, int]]:
    gdn = config.layer_types.index("linear_attention")
    attn = config.layer_types.index("full_attention")
    model = Qwen35(config, synthetic_tensors(config, [gdn, attn]), "bfloat16", layer_indices=sorted([gdn, attn]))
    kinds = {"gdn": config.num_hidden_layers - config.layer_types.count("full_attention"),
             "attn": config.layer_types.count("full_attention")}
    scenarios = []
    runs = [(f"prefill {PREFILL_TOKENS} tokens, batch 1", 1, PREFILL_TOKENS)]
    runs += [(f"decode batch {b}, context {CONTEXT}", b, 1) for b in DECODE_BATCHES]
    for name, batch, tokens in runs:
        cache = model.new_cache(batch, CONTEXT + 1)
        router_stand_in(model, batch * tokens)
        exact = DECODE_MEASURED_FULLY if batch * tokens == 1 else ()
        with simulator.machine(machine), simulator.profile() as prof, labelled(prof) as labels, \
                model_only(RUN_FULLY, exact):
            if tokens > 1:
                model.prefill(cache, [list(range(tokens))])
            else:
                cache.lengths[:] = CONTEXT  # decode after a full context (cache contents do not change the model)
                model.decode(cache, list(range(batch)))
        scenarios.append(Scenario(name, batch, tokens, list(prof.launches), labels))
    return scenarios, kinds


def report(name: str, machines=MACHINES) -> str:
    config = preset(name)
    lines = [f"{ALIASES.get(name, name)}: {config.family}, {config.num_hidden_layers} layers "
             f"({config.layer_types.count('full_attention')} attention), hidden {config.hidden_size}, "
             f"vocab {config.vocab_size}; one layer of each kind modeled at its real shapes, bf16"]
    for machine in machines:
        spec = simulator.current_spec(machine)
        scenarios, kinds = model_scenarios(config, machine)
        lines.append(f"\n== {spec.name}")
        for s in scenarios:
            total = s.seconds(config, kinds)
            rate = (f"{s.batch / total:.1f} tokens/s ({total * 1e3:.2f} ms per step)" if s.tokens_per_sequence == 1
                    else f"time to first token {total * 1e3:.1f} ms")
            lines.append(f"\n{s.name}: {rate}")
            for kind in ("gdn", "attn"):
                picked = [(r, lab) for r, lab in zip(s.launches, s.labels) if lab.split("/")[0] == kind]
                rows = per_family([r for r, _ in picked], [lab for _, lab in picked])
                lines.append(f"one {'Gated DeltaNet' if kind == 'gdn' else 'attention'} layer (x{kinds[kind]}):")
                lines.append(table(rows, spec.name))
        lines.append(_memory(config, machine))
    if config.is_moe:
        lines.append("\n" + NOTE)
    return "\n".join(lines)


def _memory(config: Qwen35Config, machine: str) -> str:
    card = CARD_BYTES.get(machine)
    weights = weight_bytes(config)
    lines = [f"\nmemory on {machine} ({human_bytes(card) if card else 'capacity unknown'}):"]
    for batch in DECODE_BATCHES:
        caches = cache_bytes(config, batch, CONTEXT)
        extra = caches["kv_cache"] + caches["gdn_states"]
        fits = ", ".join(f"{fmt} {human_bytes(w + extra)} {'fits' if card and w + extra <= card else 'DOES NOT FIT'}"
                         for fmt, w in weights.items())
        lines.append(f"  batch {batch} x {CONTEXT} tokens: KV cache {human_bytes(caches['kv_cache'])}, GDN states "
                     f"{human_bytes(caches['gdn_states'])}; weights + caches: {fits}")
    return "\n".join(lines)


def main(name: str, machine: str | None = None) -> int:
    print(report(name, (machine,) if machine else MACHINES))
    return 0
