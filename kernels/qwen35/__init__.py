"""Qwen3.5 end to end on the kernel library: `Qwen35.from_pretrained(path, dtype=...)` and `.generate(...)`."""

from kernels.qwen35.config import Qwen35Config
from kernels.qwen35.generation import GenerationOutput
from kernels.qwen35.model import Qwen35

__all__ = ["GenerationOutput", "Qwen35", "Qwen35Config"]
