"""WAVETILE_* settings, read from the environment at every launch (so a test or user can change them at any
time) but cheaply: `os.environ.get` of a missing name raises and catches a KeyError inside, which costs
microseconds, several times per launch. On POSIX, os.environ keeps its contents in a dict of bytes that
`os.environ[...] = ...` and `del` update; reading that dict directly gives the same answer ~20x faster.
"""

from __future__ import annotations

import os

_RAW = getattr(os.environ, "_data", None)
_FAST = isinstance(_RAW, dict) and os.name == "posix"


def get(name: str, default: str = "") -> str:
    """The value of environment variable `name`, or `default` when it is not set."""
    if _FAST:
        value = _RAW.get(_NAMES.get(name) or _encoded(name))
        return default if value is None else os.fsdecode(value)
    return os.environ.get(name, default)


_NAMES: dict[str, bytes] = {}


def _encoded(name: str) -> bytes:
    key = _NAMES[name] = os.fsencode(name)
    return key


def integer(name: str, default: int | None = None, minimum: int | None = None) -> int | None:
    """An integer setting: `default` when unset or empty; a clear error naming the variable otherwise."""
    value = get(name)
    if not value:
        return default
    try:
        number = int(value)
    except ValueError:
        raise ValueError(f"{name}={value!r} is not an integer") from None
    if minimum is not None and number < minimum:
        raise ValueError(f"{name}={value!r}: it must be at least {minimum}")
    return number


_checked_machine = ""


def check_machine() -> None:
    """WAVETILE_MACHINE must name a known machine even when nothing is profiled, or a typo goes unnoticed
    until the first profile. Checked on a launch's general path; a value already checked costs one lookup."""
    global _checked_machine
    value = get("WAVETILE_MACHINE")
    if not value or value == _checked_machine:
        return
    import simulator

    try:
        simulator.get_spec(value)
    except KeyError as e:
        raise ValueError(f"WAVETILE_MACHINE={value!r}: {e.args[0]}") from None
    _checked_machine = value
