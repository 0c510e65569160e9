"""WAVETILE_* settings, read from the environment at every launch (so a test or user can change them at any
time) but cheaply: `os.environ.get` of a missing name raises and catches a KeyError inside, which costs
most of a microsecond, several times per launch.

So values are cached, and the cache follows every change: each write to `os.environ` (setting,
deleting, clearing, pytest's monkeypatch) goes through `os.putenv` / `os.unsetenv`, which raise audit
events of the same names with the name and value, and an audit hook (`sys.addaudithook`) records
them in the cache. A read is then one dict lookup. The price: with a hook installed, CPython calls it
for every audited event of the process; today's launch path raises seven (`id`, ctypes), about 1 us
per launch on the 2-core host.
"""

from __future__ import annotations

import os
import sys

_MISSING = object()
_CACHE: dict[str, str | None] = {}


def get(name: str, default: str = "") -> str:
    """The value of environment variable `name`, or `default` when it is not set."""
    value = _CACHE.get(name, _MISSING)
    if value is _MISSING:
        value = _CACHE[name] = os.environ.get(name)
    return default if value is None else value


def _follow_changes(event: str, args: tuple) -> None:
    # the event comes before os.environ's own dict is updated: storing the new value (rather than
    # forgetting the old) keeps a concurrent read from caching the old one
    if event == "os.putenv":
        _CACHE[os.fsdecode(args[0])] = os.fsdecode(args[1])
    elif event == "os.unsetenv":
        _CACHE[os.fsdecode(args[0])] = None


sys.addaudithook(_follow_changes)


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
