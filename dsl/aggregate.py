"""Triton's aggregates (`@tl.core._aggregate` classes): user classes whose annotated fields are tensors,
constexprs or other aggregates, with @jit methods, built and passed around inside kernels.

An aggregate is a plain Python object at compile time (the frontend inlines every @jit call, so a
Python object of tensors needs no IR type); what the compiler needs from it is how to carry it through
run-time control flow, which `flatten` gives (its tensor parts, and how to rebuild it from new ones),
and @jit methods that bind `self` (`BoundJitMethod`, which the frontend inlines like any @jit call).
"""

from __future__ import annotations

import inspect
from collections.abc import Callable

from dsl.core import ACTIVE_SEMANTIC, constexpr, tensor


class BoundJitMethod:
    """`instance.method` for a @jit method of an aggregate: calls the function with `instance` first."""

    def __init__(self, function, instance):
        self.function, self.instance = function, instance
        self.__name__ = getattr(function, "__name__", "method")

    def __call__(self, *args, **kwargs):  # eager mode (and host code) call it as Python
        return self.function(self.instance, *args, **kwargs)


class _JitMethod:
    """Descriptor that binds a @jit function defined in an aggregate class to the instance."""

    def __init__(self, function):
        self.function = function

    def __get__(self, instance, owner=None):
        return self.function if instance is None else BoundJitMethod(self.function, instance)


def aggregate(cls: type) -> type:
    """Make `cls` an aggregate: its constructor must set every annotated field and nothing else."""
    annotations = inspect.get_annotations(cls)
    fields = tuple(annotations)
    tensor_fields = frozenset(name for name, a in annotations.items()
                              if a is tensor or (isinstance(a, str) and a.split(".")[-1] == "tensor"))
    user_init = cls.__dict__.get("__init__")
    if getattr(user_init, "is_wavetile_jit", False):
        raise ValueError(f"{cls.__name__}.__init__ cannot be a @jit function")
    namespace: dict = {"__wavetile_aggregate__": True, "__aggregate_fields__": fields, "__doc__": cls.__doc__,
                       "__module__": cls.__module__, "__qualname__": cls.__qualname__,
                       "__aggregate_init__": staticmethod(user_init) if user_init is not None else None}
    for name, member in cls.__dict__.items():
        if name in ("__dict__", "__weakref__", "__init__", "__annotations__") or name in namespace:
            continue
        namespace[name] = _JitMethod(member) if getattr(member, "is_wavetile_jit", False) else member

    def __init__(self, *args, **kwargs):
        object.__setattr__(self, "_home", _current_block())
        if user_init is not None:
            if "_semantic" in inspect.signature(user_init).parameters:
                kwargs.setdefault("_semantic", None)
            user_init(self, *args, **kwargs)
        for name in fields:
            if name not in self.__dict__:
                raise AttributeError(f"constructor for {cls.__name__} did not initialize attribute '{name}'")

    def __setattr__(self, name, value):
        if name not in fields:
            raise AttributeError(f"{cls.__name__} has no attribute '{name}'")
        if name in tensor_fields and isinstance(value, (bool, int, float)):
            semantic = ACTIVE_SEMANTIC.get(None)  # a literal in a tl.tensor field becomes a scalar tensor
            value = semantic.to_tensor(value) if semantic is not None else value
        object.__setattr__(self, name, value)

    def __repr__(self) -> str:
        return f"{cls.__name__}(" + ", ".join(f"{n}={self.__dict__.get(n)!r}" for n in fields) + ")"

    def __eq__(self, other):  # by identity: fields may be tensors, whose == builds a comparison
        return self is other

    __hash__ = object.__hash__

    for name, default in (("__repr__", __repr__), ("__eq__", __eq__), ("__hash__", __hash__)):
        if cls.__dict__.get(name) is None:  # the class's own operators (Triton 3.9 allows them) win
            namespace[name] = default
    namespace.update(__init__=__init__, __setattr__=__setattr__, flatten=_flatten)
    return type(cls.__name__, tuple(b for b in cls.__bases__ if b is not object) or (object,), namespace)


def aggregate_replace(instance, **changes):
    """A copy of the aggregate with some fields replaced (Triton's dataclasses.replace of aggregates)."""
    if not is_aggregate(instance):
        raise TypeError(f"aggregate_replace needs an aggregate, got {type(instance).__name__}")
    fields = type(instance).__aggregate_fields__
    unknown = [name for name in changes if name not in fields]
    if unknown:
        raise AttributeError(f"{type(instance).__name__} has no attribute '{unknown[0]}'")
    return _rebuilt(type(instance), {name: changes.get(name, instance.__dict__[name]) for name in fields})


def is_aggregate(value) -> bool:
    return getattr(type(value), "__wavetile_aggregate__", False)


def home_block(instance):
    """The IR block the aggregate was made in (None on the host): assigning its fields from inside run-time
    control flow nested in that block would change it on every path, so the frontend refuses that."""
    return instance.__dict__.get("_home")


def _current_block():
    semantic = ACTIVE_SEMANTIC.get(None)
    return getattr(getattr(semantic, "builder", None), "block", None)


def _flatten(self) -> tuple[list[tensor], Callable[[list[tensor]], object]]:
    """Tensor parts in field order (nested aggregates and block pointers by their own parts); the other
    fields (constexprs, dtypes, ...) stay as they are in the rebuilt copy."""
    cls = type(self)
    parts: list[tensor] = []
    plan: list[tuple[str, int, Callable | None]] = []
    for name in cls.__aggregate_fields__:
        value = self.__dict__[name]
        if isinstance(value, tensor):
            plan.append((name, 1, None))
            parts.append(value)
        elif hasattr(value, "flatten") and not isinstance(value, constexpr):
            inner, rebuild = value.flatten()
            plan.append((name, len(inner), rebuild))
            parts.extend(inner)
        else:
            plan.append((name, 0, None))
    static = {name: self.__dict__[name] for name, count, _ in plan if count == 0}

    def rebuild(new_parts: list[tensor]) -> object:
        values, i = dict(static), 0
        for name, count, inner in plan:
            if count == 0:
                continue
            chunk = new_parts[i:i + count]
            values[name] = inner(chunk) if inner is not None else chunk[0]
            i += count
        return _rebuilt(cls, values)

    return parts, rebuild


def _rebuilt(cls: type, values: dict) -> object:
    instance = object.__new__(cls)
    object.__setattr__(instance, "_home", _current_block())
    for name in cls.__aggregate_fields__:
        object.__setattr__(instance, name, values[name])
    return instance
