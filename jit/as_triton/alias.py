"""The meta-path alias: `import triton...` resolves to wavetile's own modules, not to copies of them.

`triton.language` *is* `dsl`, `triton.language.math` is `dsl.math`, and so on; `triton`,
`triton.runtime`, `triton.testing` and `triton._internal_testing` are small modules of this package
that re-export wavetile's names under Triton's spelling. Any other `triton.*` module imports as a
placeholder whose names fail when used (not when imported), with a message naming them.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import sys
import types

from jit.as_triton.unsupported import language_module, placeholder_module

# Python sets each imported child module as an attribute of its parent, so a child maps onto a module
# of the same name under the parent's target (or onto a module of this package): mapping
# `triton.language.core` onto `dsl` itself would overwrite `dsl.core`.
ALIASES = {
    "triton": "jit.as_triton.api",
    "triton.language": "dsl",
    "triton.language.core": "dsl.core",
    "triton.language.math": "dsl.math",
    "triton.language.random": "dsl.random",
    "triton.language.standard": "dsl.standard",
    "triton.language.extra": "dsl.extra",
    "triton.language.extra.libdevice": "dsl.libdevice",
    "triton.language.extra.cuda.libdevice": "dsl.libdevice",
    "triton.language.extra.hip.libdevice": "dsl.libdevice",
    "triton.runtime": "jit.as_triton.runtime",
    "triton.runtime.jit": "jit.as_triton.runtime",
    "triton.runtime.errors": "jit.as_triton.runtime",
    "triton.runtime.autotuner": "jit.as_triton.runtime",
    "triton.runtime.interpreter": "jit.as_triton.runtime",
    "triton.runtime.driver": "jit.as_triton.driver",
    "triton.testing": "jit.as_triton.testing",
    "triton._internal_testing": "jit.as_triton.internal_testing",
    "triton.tools": "jit.as_triton.tools",
    "triton.tools.tensor_descriptor": "jit.as_triton.tools",
}


class _AliasLoader(importlib.abc.Loader):
    """Hands back an existing wavetile module (or a placeholder) as the `triton.*` module asked for."""

    def __init__(self, target: str | None):
        self.target = target

    def create_module(self, spec):
        if self.target is None:
            if spec.name.startswith("triton.language."):
                return language_module(spec.name)  # standard, semantic, extra.cuda, ...: the language's names
            return placeholder_module(spec.name)
        return importlib.import_module(self.target)

    def exec_module(self, module) -> None:
        """Nothing to run: the target module was imported (and ran) under its own name."""


class TritonAliasFinder(importlib.abc.MetaPathFinder):
    """Finds every `triton` and `triton.*` module; it sits first on sys.meta_path, so a real Triton is never loaded."""

    def find_spec(self, fullname, path=None, target=None):
        if fullname != "triton" and not fullname.startswith("triton."):
            return None
        spec = importlib.machinery.ModuleSpec(fullname, _AliasLoader(ALIASES.get(fullname)),
                                              is_package=True)
        spec.submodule_search_locations = []
        return spec


_FINDER = TritonAliasFinder()


def install() -> None:
    """Make `import triton` mean wavetile for the rest of the process (idempotent)."""
    if _FINDER not in sys.meta_path:
        for name in [n for n in sys.modules if n == "triton" or n.startswith("triton.")]:
            del sys.modules[name]  # a real Triton imported earlier would shadow the alias
        sys.meta_path.insert(0, _FINDER)


def uninstall() -> None:
    """Undo `install` (for tests): drop the finder and the `triton` modules it created."""
    if _FINDER in sys.meta_path:
        sys.meta_path.remove(_FINDER)
    for name in [n for n in sys.modules if n == "triton" or n.startswith("triton.")]:
        if isinstance(sys.modules[name], types.ModuleType):
            del sys.modules[name]
