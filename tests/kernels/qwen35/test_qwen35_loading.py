"""Loading Hugging Face model directories: single file and sharded index, bf16 files, multimodal prefixes, and
clear errors naming the bad or missing file or tensor."""

import json

import numpy as np
import pytest
from qwen35_reference import tiny_config

from kernels._common import BF16
from kernels.qwen35 import Qwen35, Qwen35Config
from kernels.qwen35.weights import random_tensors, write_checkpoint

PROMPTS = [[3, 1, 4, 1, 5], [9, 2, 6]]


@pytest.fixture(scope="module")
def reference():
    config = tiny_config(family="moe", num_hidden_layers=2, layer_types=("linear_attention", "full_attention"))
    tensors = random_tensors(config, seed=13)
    return config, tensors, Qwen35(config, tensors, "float32").forward(PROMPTS)


@pytest.mark.parametrize("shards", [1, 3])
def test_checkpoint_round_trip(tmp_path, reference, shards):
    config, tensors, want = reference
    write_checkpoint(tmp_path, config, tensors, shards=shards)
    model = Qwen35.from_pretrained(tmp_path, dtype="float32")
    assert model.config == config
    for got, w in zip(model.forward(PROMPTS), want):
        np.testing.assert_array_equal(got, w)


def test_bf16_file_and_multimodal_names(tmp_path, reference):
    config, tensors, _ = reference
    want = Qwen35(config, tensors, "bfloat16").forward(PROMPTS)
    renamed = {name.replace("model.", "model.language_model.", 1): t.astype(BF16) for name, t in tensors.items()}
    renamed["model.visual.blocks.0.weight"] = np.ones((2, 2), np.float32)  # the vision tower is skipped
    renamed["mtp.fc.weight"] = np.ones((2, 2), np.float32)
    write_checkpoint(tmp_path, config, renamed)
    raw = json.loads((tmp_path / "config.json").read_text())
    (tmp_path / "config.json").write_text(json.dumps({"model_type": "qwen3_5_moe", "text_config": raw,
                                                      "architectures": ["Qwen3_5MoeForConditionalGeneration"]}))
    model = Qwen35.from_pretrained(tmp_path, dtype="bfloat16")
    for got, w in zip(model.forward(PROMPTS), want):  # the same bf16 weights, read from the file
        np.testing.assert_array_equal(got, w)


def test_missing_shard_names_the_file(tmp_path, reference):
    config, tensors, _ = reference
    write_checkpoint(tmp_path, config, tensors, shards=2)
    (tmp_path / "model-00002-of-00002.safetensors").unlink()
    with pytest.raises(FileNotFoundError, match="model-00002-of-00002.safetensors"):
        Qwen35.from_pretrained(tmp_path)


def test_corrupt_file_names_the_file(tmp_path, reference):
    config, tensors, _ = reference
    write_checkpoint(tmp_path, config, tensors)
    (tmp_path / "model.safetensors").write_bytes(b"\x10\x00\x00\x00\x00\x00\x00\x00{not json}")
    with pytest.raises(ValueError, match="model.safetensors"):
        Qwen35.from_pretrained(tmp_path)


def test_missing_and_misshapen_tensors_are_named(tmp_path, reference):
    config, tensors, _ = reference
    name = "model.layers.1.self_attn.k_norm.weight"
    write_checkpoint(tmp_path, config, {n: t for n, t in tensors.items() if n != name})
    with pytest.raises(ValueError, match=name.replace(".", r"\.") + "' is missing"):
        Qwen35.from_pretrained(tmp_path)
    write_checkpoint(tmp_path, config, {**tensors, name: np.zeros(3, np.float32)})
    with pytest.raises(ValueError, match="k_norm.weight' has shape"):
        Qwen35.from_pretrained(tmp_path)


def test_missing_or_bad_config(tmp_path):
    with pytest.raises(FileNotFoundError, match="not a directory"):
        Qwen35.from_pretrained(tmp_path / "nowhere")
    with pytest.raises(FileNotFoundError, match="config.json"):
        Qwen35.from_pretrained(tmp_path)
    (tmp_path / "config.json").write_text("{")
    with pytest.raises(ValueError, match="config.json is not valid JSON"):
        Qwen35.from_pretrained(tmp_path)
    (tmp_path / "config.json").write_text(json.dumps({"model_type": "llama"}))
    with pytest.raises(ValueError, match="not a Qwen3.5 model"):
        Qwen35.from_pretrained(tmp_path)
    (tmp_path / "config.json").write_text(json.dumps({"model_type": "qwen3_5_text"}))
    with pytest.raises(FileNotFoundError, match="neither model.safetensors nor"):
        Qwen35.from_pretrained(tmp_path)


def test_config_reads_transformers_fields():
    dense = Qwen35Config.from_dict({"model_type": "qwen3_5_text", "num_hidden_layers": 6, "full_attention_interval": 3,
                                    "rope_parameters": {"rope_type": "default", "rope_theta": 1e6,
                                                        "partial_rotary_factor": 0.5}, "eos_token_id": 7})
    assert dense.family == "dense" and dense.hidden_size == 4096 and dense.intermediate_size == 12288
    assert dense.layer_types == ("linear_attention", "linear_attention", "full_attention") * 2
    assert dense.rope_theta == 1e6 and dense.rotary_dim == 128 and dense.eos_token_id == (7,)
    moe = Qwen35Config.from_dict({"architectures": ["Qwen3_5MoeForCausalLM"], "head_dim": None})
    assert moe.family == "moe" and moe.num_experts == 256 and moe.head_dim == 2048 // 16
    with pytest.raises(ValueError, match="rope_type 'yarn'"):
        Qwen35Config.from_dict({"model_type": "qwen3_5_text", "rope_parameters": {"rope_type": "yarn"}})
    with pytest.raises(ValueError, match="hidden_act"):
        Qwen35Config.from_dict({"model_type": "qwen3_5_text", "hidden_act": "gelu"})
    with pytest.raises(ValueError, match="num_attention_heads"):
        Qwen35Config.from_dict({"model_type": "qwen3_5_text", "num_attention_heads": 5})


def test_text_in_and_out_with_the_directory_tokenizer(tmp_path, reference):
    tokenizers = pytest.importorskip("tokenizers")
    config, tensors, _ = reference
    write_checkpoint(tmp_path, config, tensors)
    vocab = {f"w{i}": i for i in range(config.vocab_size)}
    tok = tokenizers.Tokenizer(tokenizers.models.WordLevel(vocab, unk_token="w0"))
    tok.pre_tokenizer = tokenizers.pre_tokenizers.Whitespace()
    tok.save(str(tmp_path / "tokenizer.json"))
    model = Qwen35.from_pretrained(tmp_path)
    text = model.generate(["w3 w1 w4", "w9 w2"], 3)
    ids = model.generate([[3, 1, 4], [9, 2]], 3)
    assert text.tokens == ids.tokens
    assert text.text == [tok.decode(t) for t in ids.tokens] and all(s.startswith("w") for s in text.text)
