"""The layers of Qwen3.5 as compositions of library kernel launches (research/qwen35.md §1; transformers'
Qwen3_5(Moe)GatedDeltaNet, Qwen3_5(Moe)Attention, Qwen3_5(Moe)SparseMoeBlock and Qwen3_5(Moe)MLP).

Weights arrive with transformers' names and layouts ([out, in] Linear weights) and are laid out once for the kernels
([in, out] for the GEMMs; the attention q|gate, k, v projections concatenated so one GEMM yields the gated prologue's
input). Numpy here only allocates, views and concatenates weights at load; every arithmetic step is a launch.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from kernels.attention import attention
from kernels.deltanet_chunk import chunk_gated_delta_rule
from kernels.deltanet_conv import causal_conv1d, causal_conv1d_update
from kernels.deltanet_decode import gated_delta_decode
from kernels.ffn import swiglu_ffn
from kernels.gemm import gemm
from kernels.moe import moe_forward
from kernels.moe_quant import _silu_mul, moe_forward_quantized
from kernels.mxfp4_fp8 import MXFP4Experts
from kernels.norm import gated_rmsnorm
from kernels.paged import paged_decode
from kernels.qkv import qkv_prologue
from kernels.quant import Int4Weight
from kernels.quant_gemm import w4a16_gemm
from kernels.qwen35.config import Qwen35Config
from kernels.qwen35.families import family
from kernels.rows import add_bias

W4A16_GROUP = 128


@dataclass
class Step:
    """Where this forward step's tokens go: packed prefill (cu_seqlens) or one token per active sequence."""

    positions: np.ndarray  # int32 [T], each token's position in its sequence
    rows: np.ndarray  # int32 [N], the cache row (slot) of each sequence of the step
    seq_lens: np.ndarray  # int32 [N], keys per sequence after this step
    slot_mapping: np.ndarray  # int32 [T], paged KV slot of each token
    block_table: np.ndarray  # int32 [N, pages]
    cu_seqlens: np.ndarray | None = None  # int32 [N + 1] for prefill; None for decode
    first_prefill: bool = True  # prefill from empty caches (no incoming states)

    @property
    def decode(self) -> bool:
        return self.cu_seqlens is None


class Linear:
    """y = x @ W^T (+ b) with W stored [in, out] for the GEMM, or as INT4 (W4A16, group 128) when quantised."""

    def __init__(self, weight: np.ndarray, bias: np.ndarray | None, dtype, quantize: bool = False):
        w = np.asarray(weight).T
        self.in_features, self.out_features = w.shape
        if quantize and self.in_features % W4A16_GROUP == 0 and self.out_features % 8 == 0:
            self.weight = Int4Weight.from_float(np.ascontiguousarray(w, np.float32), W4A16_GROUP, "awq")
        else:
            self.weight = cast_weight(w, dtype)  # no copy when the file's layout and dtype already fit
        self.bias = None if bias is None else cast_weight(bias, dtype)

    @property
    def nbytes(self) -> int:
        w = self.weight
        parts = [w.qweight, w.qzeros, w.scales] if isinstance(w, Int4Weight) else [w]
        return sum(p.nbytes for p in parts) + (0 if self.bias is None else self.bias.nbytes)

    def __call__(self, x: np.ndarray) -> np.ndarray:
        y = w4a16_gemm(x, self.weight) if isinstance(self.weight, Int4Weight) else gemm(x, self.weight)
        return y if self.bias is None else add_bias(y, self.bias)


def cast_weight(t: np.ndarray, dtype) -> np.ndarray:
    """A C-contiguous copy in `dtype`, or `t` itself when it already is one (synthetic projection weights)."""
    return np.ascontiguousarray(np.asarray(t).astype(dtype, copy=False))


class GatedDeltaNet:
    """Gated DeltaNet token mixer: in-projections, causal conv1d with state, chunked rule (prefill) or recurrence
    (decode), gated RMSNorm, out-projection."""

    def __init__(self, c: Qwen35Config, t: dict[str, np.ndarray], p: str, dtype, w4a16: bool):
        self.c = c
        self.in_qkv = Linear(t[p + "in_proj_qkv.weight"], None, dtype, w4a16)
        self.in_z = Linear(t[p + "in_proj_z.weight"], None, dtype, w4a16)
        self.in_b = Linear(t[p + "in_proj_b.weight"], None, dtype, w4a16)
        self.in_a = Linear(t[p + "in_proj_a.weight"], None, dtype, w4a16)
        self.out = Linear(t[p + "out_proj.weight"], None, dtype, w4a16)
        self.conv_weight = cast_weight(t[p + "conv1d.weight"], dtype).reshape(c.conv_dim, c.linear_conv_kernel_dim)
        # transformers computes the gates from A_log.float() and dt_bias promoted to fp32: the model-dtype values
        self.A_log = cast_weight(t[p + "A_log"], dtype).astype(np.float32)
        self.dt_bias = cast_weight(t[p + "dt_bias"], dtype).astype(np.float32)
        self.norm_weight = cast_weight(t[p + "norm.weight"], dtype)

    @property
    def nbytes(self) -> int:
        return (sum(m.nbytes for m in (self.in_qkv, self.in_z, self.in_b, self.in_a, self.out))
                + self.conv_weight.nbytes + self.A_log.nbytes + self.dt_bias.nbytes + self.norm_weight.nbytes)

    def new_state(self, slots: int, dtype) -> dict[str, np.ndarray]:
        c = self.c
        return {"conv": np.zeros((slots, c.conv_dim, c.linear_conv_kernel_dim - 1), dtype),
                "recurrent": np.zeros((slots, c.linear_num_value_heads, c.linear_key_head_dim,
                                       c.linear_value_head_dim), np.float32)}

    def __call__(self, x: np.ndarray, step: Step, state: dict[str, np.ndarray]) -> np.ndarray:
        c = self.c
        T = x.shape[0]
        HK, HV = c.linear_num_key_heads, c.linear_num_value_heads
        dk, dv = c.linear_key_head_dim, c.linear_value_head_dim
        with family("in_proj"):
            mixed, z, b, a = self.in_qkv(x), self.in_z(x), self.in_b(x), self.in_a(x)
        with family("conv1d"):
            if step.decode:
                y = causal_conv1d_update(mixed, self.conv_weight, state["conv"], step.rows)
            else:
                y, state["conv"] = causal_conv1d(mixed, self.conv_weight, step.cu_seqlens,
                                                 None if step.first_prefill else state["conv"])
        q = y[:, :c.key_dim].reshape(T, HK, dk)
        k = y[:, c.key_dim:2 * c.key_dim].reshape(T, HK, dk)
        v = y[:, 2 * c.key_dim:].reshape(T, HV, dv)
        gates = dict(a=a, b=b, A_log=self.A_log, dt_bias=self.dt_bias)
        with family("delta_rule"):
            if step.decode:
                o = gated_delta_decode(q, k, v, state["recurrent"], **gates, state_indices=step.rows)
            else:
                o, state["recurrent"] = chunk_gated_delta_rule(
                    q, k, v, **gates, cu_seqlens=step.cu_seqlens,
                    initial_state=None if step.first_prefill else state["recurrent"])
        with family("gated_norm"):
            o = gated_rmsnorm(o, z.reshape(T, HV, dv), self.norm_weight, c.rms_norm_eps)
        with family("out_proj"):
            return self.out(o.reshape(T, HV * dv))


class GatedAttention:
    """Gated full attention: one q|gate,k,v GEMM, the fused prologue (q/k (1+w) RMSNorm, partial RoPE, paged KV
    write), flash attention over each prompt (prefill) or split-KV paged decode, sigmoid output gate, o_proj."""

    BLOCK_SIZE = 16  # tokens per KV page

    def __init__(self, c: Qwen35Config, t: dict[str, np.ndarray], p: str, dtype, w4a16: bool):
        self.c = c
        names = ("q_proj", "k_proj", "v_proj")
        weight = np.concatenate([t[p + n + ".weight"] for n in names])
        bias = np.concatenate([t[p + n + ".bias"] for n in names]) if c.attention_bias else None
        self.qkv = Linear(weight, bias, dtype, w4a16)
        self.out = Linear(t[p + "o_proj.weight"], t.get(p + "o_proj.bias") if c.attention_bias else None, dtype,
                          w4a16)
        self.q_norm = cast_weight(t[p + "q_norm.weight"], dtype)
        self.k_norm = cast_weight(t[p + "k_norm.weight"], dtype)

    @property
    def nbytes(self) -> int:
        return self.qkv.nbytes + self.out.nbytes + self.q_norm.nbytes + self.k_norm.nbytes

    def new_state(self, slots: int, pages: int, dtype) -> dict[str, np.ndarray]:
        c = self.c
        return {"kv": np.zeros((2, slots * pages, self.BLOCK_SIZE, c.num_key_value_heads, c.head_dim), dtype)}

    def __call__(self, x: np.ndarray, step: Step, state: dict[str, np.ndarray]) -> np.ndarray:
        c = self.c
        T, H, Hkv, D = x.shape[0], c.num_attention_heads, c.num_key_value_heads, c.head_dim
        kv = state["kv"]
        with family("qkv_proj"):
            qkv = self.qkv(x)
        with family("qk_norm_rope_kv"):
            q, gate = qkv_prologue(qkv, self.q_norm, self.k_norm, step.positions, kv, step.slot_mapping,
                                   c.rotary_dim, theta=c.rope_theta, eps=c.rms_norm_eps)
        with family("attention"):
            if step.decode:
                o = paged_decode(q, kv[0], kv[1], step.block_table, step.seq_lens, gate)
            else:
                o = np.empty_like(q)
                pages = step.block_table.shape[1]
                keys = kv.reshape(2, -1, pages * self.BLOCK_SIZE, Hkv, D)  # one row of pages per cache slot
                for i, row in enumerate(step.rows):
                    s, e, n = step.cu_seqlens[i], step.cu_seqlens[i + 1], step.seq_lens[i]
                    attention(q[None, s:e], keys[0, row, None, :n], keys[1, row, None, :n], gate[None, s:e],
                              causal=True, scale=D ** -0.5, out=o[None, s:e])
        with family("o_proj"):
            return self.out(o.reshape(T, H * D))


class SparseMoe:
    """Router softmax top-k (renormalised), grouped SwiGLU experts, shared expert scaled by its sigmoid gate."""

    def __init__(self, c: Qwen35Config, t: dict[str, np.ndarray], p: str, dtype, quantize: str | None):
        self.k = c.num_experts_per_tok
        self.router = cast_weight(t[p + "gate.weight"], dtype)
        gate_up, down = t[p + "experts.gate_up_proj"], t[p + "experts.down_proj"]
        if quantize == "mxfp4":
            self.w1, self.w2 = (MXFP4Experts.from_float(np.asarray(w, np.float32)) for w in (gate_up, down))
        elif quantize == "w4a16" and c.hidden_size % W4A16_GROUP == 0 and c.moe_intermediate_size % W4A16_GROUP == 0:
            self.w1, self.w2 = ([Int4Weight.from_float(np.ascontiguousarray(np.asarray(w[e], np.float32).T),
                                                       W4A16_GROUP, "awq") for e in range(w.shape[0])]
                                for w in (gate_up, down))
        else:
            self.w1, self.w2 = cast_weight(gate_up, dtype), cast_weight(down, dtype)
        s = p + "shared_expert."
        self.shared_w1 = cast_weight(np.concatenate([t[s + "gate_proj.weight"], t[s + "up_proj.weight"]]), dtype)
        self.shared_w2 = cast_weight(t[s + "down_proj.weight"], dtype)
        self.shared_gate = cast_weight(t[p + "shared_expert_gate.weight"], dtype).reshape(-1)
        self.router_input: np.ndarray | None = None  # modeling: activations routed instead of uncomputed ones

    @property
    def nbytes(self) -> int:
        def size(w):
            if isinstance(w, MXFP4Experts):
                return w.blocks.nbytes + w.scales.nbytes
            return sum(q.qweight.nbytes + q.qzeros.nbytes + q.scales.nbytes for q in w) if isinstance(w, list) \
                else w.nbytes
        return (size(self.w1) + size(self.w2) + self.router.nbytes + self.shared_w1.nbytes + self.shared_w2.nbytes
                + self.shared_gate.nbytes)

    def __call__(self, x: np.ndarray) -> np.ndarray:
        shared = dict(shared_w1=self.shared_w1, shared_w2=self.shared_w2, w_shared_gate=self.shared_gate)
        with family("moe"):
            if not isinstance(self.w1, np.ndarray):
                return moe_forward_quantized(x, self.router, self.w1, self.w2, self.k, **shared)
            routed = None if self.router_input is None else self.router_input[:x.shape[0]]
            return moe_forward(x, self.router, self.w1, self.w2, self.k, **shared, router_input=routed)


class DenseMlp:
    """SwiGLU MLP: the fused gate/up kernel, then the down GEMM; with W4A16 one INT4 GEMM of the stacked gate|up
    weight in fp32, the SiLU-and-multiply kernel, then the INT4 down GEMM."""

    def __init__(self, c: Qwen35Config, t: dict[str, np.ndarray], p: str, dtype, w4a16: bool):
        gate, up = (t[p + n + ".weight"] for n in ("gate_proj", "up_proj"))
        self.down = Linear(t[p + "down_proj.weight"], None, dtype, w4a16)
        self.quantized = isinstance(self.down.weight, Int4Weight)
        if self.quantized:
            self.gate_up = Linear(np.concatenate([gate, up]), None, dtype, True)
        else:
            self.gate_up = None
            self.gate, self.up = (Linear(w, None, dtype) for w in (gate, up))

    @property
    def nbytes(self) -> int:
        first = self.gate_up.nbytes if self.quantized else self.gate.nbytes + self.up.nbytes
        return first + self.down.nbytes

    def __call__(self, x: np.ndarray) -> np.ndarray:
        with family("mlp"):
            if self.quantized:
                h = _silu_mul(w4a16_gemm(x, self.gate_up.weight, out_dtype=np.float32), x.dtype)
                return self.down(h)
            return swiglu_ffn(x, self.gate.weight, self.up.weight, self.down.weight)
