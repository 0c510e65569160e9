"""Test-wide setup: a private compile cache per test session, so runs never share stale entries, and the
`rng` fixture: a numpy Generator with a fresh seed per test, reported with any failure (rerun a failure
with the same inputs by setting WAVETILE_TEST_SEED to that seed)."""

import os
import secrets
import tempfile

os.environ.setdefault("WAVETILE_CACHE_DIR", tempfile.mkdtemp(prefix="wavetile-test-cache-"))


import gc  # noqa: E402

import numpy as np  # noqa: E402
import pytest  # noqa: E402

_checked: set[int] = set()
_SEED = pytest.StashKey[int]()


def _seeded(node) -> np.random.Generator:
    seed = int(os.environ.get("WAVETILE_TEST_SEED") or secrets.randbits(32))
    node.stash[_SEED] = seed
    return np.random.default_rng(seed)


@pytest.fixture
def rng(request) -> np.random.Generator:
    """A Generator seeded for this test: WAVETILE_TEST_SEED if set, else a fresh random seed."""
    return _seeded(request.node)


@pytest.fixture(scope="module")
def module_rng(request) -> np.random.Generator:
    """The same for module-scoped fixtures (one seed per test module, reported with its tests' failures)."""
    return _seeded(request.node)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    seeds = [node.stash[_SEED] for node in (item, item.getparent(pytest.Module)) if node and _SEED in node.stash]
    if report.failed and seeds:
        report.sections.append(("random seed", ", ".join(f"rng seed {s}" for s in seeds)
                                + f": rerun with WAVETILE_TEST_SEED={seeds[0]}"))


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
