"""Write the Qwen3.5 golden files: transformers' greedy tokens and fp32 logits for tiny seeded random models of
both families, so the default test suite checks a checkpoint against transformers without torch.

    pip install -e ".[reference]" && python scripts/make_qwen35_golden.py

The weights are not stored: `kernels.qwen35.weights.random_tensors(config, seed)` regenerates them.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
GOLDEN = ROOT / "tests" / "kernels" / "qwen35" / "golden"
sys.path.insert(0, str(GOLDEN.parent))

from qwen35_reference import hf_greedy, hf_model, tiny_config  # noqa: E402

from kernels.qwen35.weights import random_tensors  # noqa: E402

SEED, NEW_TOKENS, PROMPT_LENGTHS = 21, 4, (1, 9, 41)


def main() -> None:
    GOLDEN.mkdir(exist_ok=True)
    for family in ("moe", "dense"):
        config = tiny_config(family=family)
        tensors = random_tensors(config, SEED)
        model = hf_model(config, tensors)
        rng = np.random.default_rng(SEED)
        prompts = [rng.integers(0, config.vocab_size, n).tolist() for n in PROMPT_LENGTHS]
        runs = [hf_greedy(model, p, NEW_TOKENS) for p in prompts]
        path = GOLDEN / f"qwen35_{family}.npz"
        np.savez_compressed(path, config=json.dumps(config.to_dict()), seed=SEED,
                            prompts=json.dumps(prompts), tokens=np.array([r[0] for r in runs], np.int32),
                            logits=np.stack([r[1] for r in runs]).astype(np.float32))
        print(f"wrote {path.relative_to(ROOT)} ({path.stat().st_size} bytes)")


if __name__ == "__main__":
    main()
