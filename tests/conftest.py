"""Test-wide setup: a private compile cache per test session, so runs never share stale entries."""

import os
import tempfile

os.environ.setdefault("WAVETILE_CACHE_DIR", tempfile.mkdtemp(prefix="wavetile-test-cache-"))


import gc  # noqa: E402

import pytest  # noqa: E402

_checked: set[int] = set()


@pytest.fixture(autouse=True, scope="module")
def ir_text_round_trips():
    """After each test module: the IR of every kernel it compiled prints -> parses -> prints identically."""
    yield
    from dsl.ir import parse_function, print_function
    from jit.kernel import JITFunction

    for obj in gc.get_objects():
        if not isinstance(obj, JITFunction):
            continue
        for kernel in list(obj.compiled.values()):
            text = kernel.asm.get("ir", "")
            if id(kernel) in _checked or not text:
                continue
            _checked.add(id(kernel))
            assert print_function(parse_function(text)) == text, f"IR text of {obj.__name__} does not round-trip"
