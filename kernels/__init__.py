"""The Qwen3.5 kernel library, written in the DSL; each family module registers its cases on import."""

import importlib
import pkgutil

for _module in pkgutil.iter_modules(__path__):
    if _module.name not in ("registry", "bench", "check", "qwen35") and not _module.name.startswith("_"):
        importlib.import_module(f"kernels.{_module.name}")
