"""The Qwen3.5 kernel library, written in the DSL; each family module registers its cases on import."""

import importlib
import pkgutil

_TOOLS = ("registry", "bench", "check", "qwen35", "tune", "tune_shapes", "tune_check")  # not kernel families

for _module in pkgutil.iter_modules(__path__):
    if _module.name not in _TOOLS and not _module.name.startswith("_"):
        importlib.import_module(f"kernels.{_module.name}")
