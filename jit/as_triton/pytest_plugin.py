"""pytest plugin loaded by `python -m jit.as_triton -m pytest`: the `device` fixture Triton's tests take.

Triton's conftest gives `device` from `--device` (default "cuda"); here it defaults to "cpu", the
device whose tensors wavetile kernels read. A project's own conftest fixture of that name wins.
"""

from __future__ import annotations

import pytest

from jit.as_triton import install

install()  # pytest-xdist workers load this plugin in fresh processes: they need the alias too


def pytest_addoption(parser) -> None:
    try:
        parser.addoption("--device", action="store", default="cpu")
    except ValueError:
        pass  # the project's conftest defines it


def pytest_configure(config) -> None:
    for marker in ("interpreter", "enable_warmup", "cpu"):
        config.addinivalue_line("markers", f"{marker}: a marker of Triton's tests")


@pytest.fixture
def device(request) -> str:
    return request.config.getoption("--device")


@pytest.fixture
def with_allocator():
    """Triton's fixture that installs a device allocator; wavetile allocates its own scratch memory."""
    yield
