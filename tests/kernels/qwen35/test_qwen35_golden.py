"""A checkpoint against transformers' logits without torch: the golden files of scripts/make_qwen35_golden.py hold
transformers' greedy tokens and fp32 logits for seeded tiny models of both families; the weights are regenerated
from the seed, written as a checkpoint and loaded."""

import json
from pathlib import Path

import numpy as np
import pytest
from qwen35_reference import relative_error

from kernels.qwen35 import Qwen35, Qwen35Config
from kernels.qwen35.weights import random_tensors, write_checkpoint

GOLDEN = Path(__file__).parent / "golden"


@pytest.mark.parametrize("family", ["moe", "dense"])
def test_checkpoint_matches_transformers_golden_logits(tmp_path, family):
    golden = np.load(GOLDEN / f"qwen35_{family}.npz")
    config = Qwen35Config.from_dict(json.loads(str(golden["config"])))
    write_checkpoint(tmp_path, config, random_tensors(config, int(golden["seed"])), shards=2)
    model = Qwen35.from_pretrained(tmp_path, dtype="float32")
    prompts = json.loads(str(golden["prompts"]))
    out = model.generate(prompts, golden["tokens"].shape[1], return_logits=True)
    for i in range(len(prompts)):
        assert out.tokens[i] == golden["tokens"][i].tolist()
        assert relative_error(out.logits[i], golden["logits"][i]) <= 1e-3
