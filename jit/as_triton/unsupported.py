"""Names of Triton that mean nothing on wavetile: they import, and fail with a clear message when used.

Triton programs import far more than their kernels use (`triton.compiler`, `triton.knobs`,
`triton.backends`, ...). Failing at import would stop programs whose kernels would run fine, so such
a name is a `NoMeaning` object that raises `NotImplementedError`, naming itself, when it is called,
iterated, compared or asked for a value; reading an attribute of it gives another such object.
"""

from __future__ import annotations

import types

# attributes wavetile itself probes objects for (`getattr(v, name, default)`): never stand-ins
_WAVETILE_PROBES = frozenset({"is_wavetile_jit", "flatten"})


def stands_in_for(name: str) -> bool:
    """Whether a missing attribute `name` gets a NoMeaning (public Triton-style names) or an AttributeError."""
    return not name.startswith("_") and name not in _WAVETILE_PROBES


class NoMeaning:
    """Stands for the Triton name `path`; any real use of it raises NotImplementedError."""

    def __init__(self, path: str, why: str = ""):
        object.__setattr__(self, "_path", path)
        object.__setattr__(self, "_why", why)

    def _refuse(self, *args, **kwargs):
        why = self._why or "it has no meaning on wavetile, which runs kernels on the CPU against an emulated GPU"
        raise NotImplementedError(f"{self._path} is not available under jit.as_triton: {why}")

    def __getattr__(self, name: str):
        if not stands_in_for(name):
            raise AttributeError(name)
        return NoMeaning(f"{self._path}.{name}", self._why)

    __call__ = __iter__ = __len__ = __bool__ = __int__ = __float__ = __index__ = __getitem__ = _refuse
    __setattr__ = __enter__ = _refuse

    def __repr__(self) -> str:
        return f"<{self._path}: not available under jit.as_triton>"


class _PlaceholderModule(types.ModuleType):
    """A `triton.*` module with no wavetile counterpart: every public name is a NoMeaning."""

    def __getattr__(self, name: str):
        if not stands_in_for(name):
            raise AttributeError(f"module {self.__name__!r} has no attribute {name!r}")
        return NoMeaning(f"{self.__name__}.{name}")


class _LanguageModule(types.ModuleType):
    """A submodule of `triton.language` that wavetile keeps in one namespace (`standard`, `semantic`,
    `extra.cuda`, ...): its names are the language's."""

    def __getattr__(self, name: str):
        import dsl

        try:
            return getattr(dsl, name)
        except AttributeError:
            if not stands_in_for(name):
                raise
            return NoMeaning(f"{self.__name__}.{name}")


def placeholder_module(name: str) -> types.ModuleType:
    return _PlaceholderModule(name, f"placeholder for {name}, which has no wavetile counterpart")


def language_module(name: str) -> types.ModuleType:
    return _LanguageModule(name, f"{name}: the names of triton.language (wavetile's dsl)")
