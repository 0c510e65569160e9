"""Qwen3.5 text model (dense `Qwen3_5ForCausalLM` and MoE `Qwen3_5MoeForCausalLM`) on the kernel library:
embedding, decoder layers (pre-norm, fused residual adds), final norm and LM head, over a batch of sequences that
share one cache (paged KV for attention layers, conv and recurrent states for Gated DeltaNet layers)."""

from __future__ import annotations

import os
from dataclasses import dataclass

import numpy as np

from jit import cdiv
from kernels._common import BF16
from kernels.gemm import gemm
from kernels.norm import rmsnorm
from kernels.qwen35 import weights as ckpt
from kernels.qwen35.config import TINY_MOE, Qwen35Config
from kernels.qwen35.families import family
from kernels.qwen35.layers import DenseMlp, GatedAttention, GatedDeltaNet, SparseMoe, Step, cast_weight
from kernels.rows import gather_rows

DTYPES = {"float32": np.dtype(np.float32), "float16": np.dtype(np.float16), "bfloat16": BF16}
QUANTIZE = (None, "w4a16", "mxfp4")


@dataclass
class Cache:
    """Per-sequence state of a batch: tokens seen, and each layer's KV pages or GDN states (row i = sequence i)."""

    lengths: np.ndarray  # int32 [N] tokens in the cache per sequence
    pages: int  # KV pages per sequence
    layers: list[dict[str, np.ndarray]]

    @property
    def capacity(self) -> int:
        return self.pages * GatedAttention.BLOCK_SIZE

    @property
    def kv_bytes(self) -> int:
        return sum(layer["kv"].nbytes for layer in self.layers if "kv" in layer)

    @property
    def state_bytes(self) -> int:
        """Gated DeltaNet conv and recurrent states."""
        return sum(a.nbytes for layer in self.layers for name, a in layer.items() if name != "kv")

    def block_table(self, rows: np.ndarray) -> np.ndarray:
        return (rows[:, None] * self.pages + np.arange(self.pages)[None, :]).astype(np.int32)


class Decoder:
    """One decoder layer: input norm, token mixer, post-attention norm, MoE or MLP."""

    def __init__(self, c: Qwen35Config, t: dict, i: int, dtype, quantize: str | None):
        p = f"model.layers.{i}."
        self.kind = c.layer_types[i]
        w4a16 = quantize == "w4a16"
        if self.kind == "linear_attention":
            self.mixer = GatedDeltaNet(c, t, p + "linear_attn.", dtype, w4a16)
        else:
            self.mixer = GatedAttention(c, t, p + "self_attn.", dtype, w4a16)
        self.mlp = (SparseMoe(c, t, p + "mlp.", dtype, quantize) if c.is_moe
                    else DenseMlp(c, t, p + "mlp.", dtype, w4a16))
        self.input_norm = cast_weight(t[p + "input_layernorm.weight"], dtype)
        self.post_norm = cast_weight(t[p + "post_attention_layernorm.weight"], dtype)

    @property
    def nbytes(self) -> int:
        return self.mixer.nbytes + self.mlp.nbytes + self.input_norm.nbytes + self.post_norm.nbytes


class Qwen35:
    """A Qwen3.5 model whose every arithmetic step is a kernel launch on the emulated GPU."""

    def __init__(self, config: Qwen35Config, tensors: dict[str, np.ndarray], dtype: str = "float32",
                 quantize: str | None = None, tokenizer=None, layer_indices: list[int] | None = None):
        """`layer_indices` builds only those decoder layers (the projection models one layer of each kind)."""
        if dtype not in DTYPES:
            raise ValueError(f"Qwen35: dtype must be one of {sorted(DTYPES)}, got {dtype!r}")
        if quantize not in QUANTIZE:
            raise ValueError(f"Qwen35: quantize must be one of {QUANTIZE}, got {quantize!r}")
        if quantize == "w4a16" and dtype == "float32":
            raise ValueError("Qwen35: quantize='w4a16' needs dtype 'float16' or 'bfloat16' (INT4 weights, 16-bit "
                             "activations)")
        if quantize == "mxfp4" and not config.is_moe:
            raise ValueError("Qwen35: quantize='mxfp4' quantizes MoE experts; this is a dense model")
        self.config, self.dtype, self.quantize, self.tokenizer = config, DTYPES[dtype], quantize, tokenizer
        c, dt = config, self.dtype
        self.embed = cast_weight(tensors["model.embed_tokens.weight"], dt)
        # [hidden, vocab] for the GEMM; tied embeddings share the table (a transposed view), as transformers ties
        self.lm_head = self.embed.T if c.tie_word_embeddings else cast_weight(tensors["lm_head.weight"].T, dt)
        self.final_norm = cast_weight(tensors["model.norm.weight"], dt)
        self.layer_indices = list(range(c.num_hidden_layers)) if layer_indices is None else list(layer_indices)
        self.layers = [Decoder(c, tensors, i, dt, quantize) for i in self.layer_indices]

    # ---------------------------------------------------------------------------------------------------- loading
    @classmethod
    def from_pretrained(cls, path: str | os.PathLike[str] | None = None, dtype: str = "float32", *,
                        quantize: str | None = None, seed: int = 0) -> Qwen35:
        """Load a Hugging Face model directory (config.json + model.safetensors or a sharded index); `path=None`
        builds the embedded tiny MoE model with seeded random weights. quantize: None, 'w4a16' (INT4 group-128
        projections, 16-bit activations) or 'mxfp4' (MoE experts in MXFP4 through the FP8 expert GEMM)."""
        if path is None:
            config = Qwen35Config(**TINY_MOE)
            return cls(config, ckpt.random_tensors(config, seed), dtype, quantize)
        directory = os.fspath(path)
        if not os.path.isdir(directory):
            raise FileNotFoundError(f"Qwen3.5 model: {directory} is not a directory")
        config = Qwen35Config.from_file(os.path.join(directory, "config.json"))
        tensors = ckpt.read_tensors(directory)
        ckpt.check_tensors(tensors, config, directory)
        return cls(config, tensors, dtype, quantize, _tokenizer(directory))

    @property
    def weight_bytes(self) -> int:
        return (self.embed.nbytes + self.final_norm.nbytes + sum(layer.nbytes for layer in self.layers)
                + (0 if self.config.tie_word_embeddings else self.lm_head.nbytes))

    # ---------------------------------------------------------------------------------------------------- running
    def new_cache(self, batch: int, max_tokens: int) -> Cache:
        """Empty caches for `batch` sequences of up to `max_tokens` tokens each."""
        pages = max(1, cdiv(max_tokens, GatedAttention.BLOCK_SIZE))
        layers = [layer.mixer.new_state(batch, self.dtype) if layer.kind == "linear_attention"
                  else layer.mixer.new_state(batch, pages, self.dtype) for layer in self.layers]
        return Cache(np.zeros(batch, np.int32), pages, layers)

    def prefill(self, cache: Cache, prompts: list[list[int]], all_logits: bool = False) -> list[np.ndarray]:
        """Append each prompt to its sequence (prompt i to row i; every row gets at least one token). Returns per
        sequence the fp32 logits of its last token [vocab], or of every new token [len, vocab] with all_logits."""
        n = len(cache.lengths)
        if len(prompts) != n:
            raise ValueError(f"Qwen35.prefill: {len(prompts)} prompts for a cache of {n} sequences")
        ids = [self._check_tokens(p, f"prompt {i}") for i, p in enumerate(prompts)]
        lens = np.array([len(p) for p in ids], np.int32)
        if (cache.lengths + lens).max() > cache.capacity:
            raise ValueError(f"Qwen35.prefill: sequences would exceed the cache's {cache.capacity} tokens")
        cu = np.concatenate([[0], np.cumsum(lens)]).astype(np.int32)
        rows = np.arange(n, dtype=np.int32)
        positions = np.concatenate([cache.lengths[i] + np.arange(lens[i]) for i in range(n)]).astype(np.int32)
        seq_of_token = np.repeat(rows, lens)
        step = Step(positions=positions, rows=rows, seq_lens=cache.lengths + lens,
                    slot_mapping=(seq_of_token * cache.capacity + positions).astype(np.int32),
                    block_table=cache.block_table(rows), cu_seqlens=cu, first_prefill=not cache.lengths.any())
        hidden = self._forward(np.concatenate(ids).astype(np.int32), step, cache)
        cache.lengths += lens
        if all_logits:
            logits = self._logits(hidden)
            return [logits[cu[i]:cu[i + 1]] for i in range(n)]
        with family("embed"):
            last = gather_rows(hidden, cu[1:] - 1)
        return list(self._logits(last))

    def decode(self, cache: Cache, tokens, rows=None) -> np.ndarray:
        """One token for each of `rows` (default all sequences): fp32 logits [len(rows), vocab]."""
        rows = np.arange(len(cache.lengths), dtype=np.int32) if rows is None else np.asarray(rows, np.int32)
        tokens = self._check_tokens(tokens, "decode tokens")
        if len(tokens) != len(rows) or len(set(rows.tolist())) != len(rows):
            raise ValueError(f"Qwen35.decode: {len(tokens)} tokens for rows {rows.tolist()} (one per distinct row)")
        positions = cache.lengths[rows].astype(np.int32)
        if (positions + 1).max() > cache.capacity:
            raise ValueError(f"Qwen35.decode: a sequence would exceed the cache's {cache.capacity} tokens")
        step = Step(positions=positions, rows=rows, seq_lens=positions + 1,
                    slot_mapping=(rows * cache.capacity + positions).astype(np.int32),
                    block_table=cache.block_table(rows))
        hidden = self._forward(tokens, step, cache)
        cache.lengths[rows] += 1
        return self._logits(hidden)

    def forward(self, prompts: list[list[int]]) -> list[np.ndarray]:
        """fp32 logits of every position of each prompt [len, vocab], from empty caches (one prefill)."""
        cache = self.new_cache(len(prompts), max(len(p) for p in prompts))
        return self.prefill(cache, prompts, all_logits=True)

    def generate(self, prompts, max_new_tokens: int = 16, **options):
        """Prefill then decode; see kernels.qwen35.generation.generate for the options."""
        from kernels.qwen35.generation import generate

        return generate(self, prompts, max_new_tokens, **options)

    # ---------------------------------------------------------------------------------------------------- inside
    def _check_tokens(self, tokens, what: str) -> np.ndarray:
        ids = np.asarray(tokens)
        if ids.ndim != 1 or ids.size == 0 or not np.issubdtype(ids.dtype, np.integer):
            raise ValueError(f"Qwen35: {what} must be a non-empty list of token ids, got {tokens!r:.80}")
        if ids.min() < 0 or ids.max() >= self.config.vocab_size:
            raise ValueError(f"Qwen35: {what} has token ids outside [0, {self.config.vocab_size})")
        return ids.astype(np.int32)

    def _forward(self, tokens: np.ndarray, step: Step, cache: Cache) -> np.ndarray:
        eps = self.config.rms_norm_eps
        with family("embed"):
            h = gather_rows(self.embed, tokens)
        residual = None
        for layer, state in zip(self.layers, cache.layers):
            with family("gdn" if layer.kind == "linear_attention" else "attn"):
                with family("norm"):
                    if residual is None:
                        x, residual = rmsnorm(h, layer.input_norm, eps, zero_centered=True), h
                    else:
                        x, residual = rmsnorm(h, layer.input_norm, eps, residual=residual, zero_centered=True)
                mixed = layer.mixer(x, step, state)
                with family("norm"):
                    x, residual = rmsnorm(mixed, layer.post_norm, eps, residual=residual, zero_centered=True)
                h = layer.mlp(x)
        with family("norm"):
            out, _ = rmsnorm(h, self.final_norm, eps, residual=residual, zero_centered=True)
        return out

    def _logits(self, hidden: np.ndarray) -> np.ndarray:
        with family("lm_head"):
            return gemm(hidden, self.lm_head, out_dtype=np.float32)


def _tokenizer(directory: str):
    """The directory's tokenizer.json through the optional `tokenizers` package, else None (token ids only)."""
    path = os.path.join(directory, "tokenizer.json")
    if not os.path.isfile(path):
        return None
    try:
        from tokenizers import Tokenizer
    except ImportError:
        return None
    return Tokenizer.from_file(path)
