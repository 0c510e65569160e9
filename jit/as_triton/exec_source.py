"""Source text for kernels made by `exec(string)`, so `@jit` can read them.

Under TRITON_INTERPRET=1 Triton's tests build kernel variants by editing a kernel's text and passing
it to `exec` (`patch_kernel` in test_core.py). Triton's interpreter runs the function object and never
needs its text; wavetile compiles from the text. While `jit.as_triton` is active, `exec` of a string
compiles it under a file name of its own and registers the text with `linecache`, where `inspect`
(and so `@jit`) finds it. Code objects and other arguments pass through unchanged.
"""

from __future__ import annotations

import builtins
import itertools
import linecache

_plain_exec = builtins.exec
_counter = itertools.count()


def exec_with_source(source, globals=None, locals=None, /, **kwargs):
    if isinstance(source, str):
        name = f"<jit.as_triton exec {next(_counter)}>"
        linecache.cache[name] = (len(source), None, source.splitlines(True), name)
        source = compile(source, name, "exec")
    return _plain_exec(source, globals, locals, **kwargs)


def install() -> None:
    builtins.exec = exec_with_source
