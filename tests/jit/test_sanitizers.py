"""WAVETILE_SANITIZE=all: every buggy kernel of the corpus is reported with its class and source line;
the correct kernels run without a report and give the right results."""

import inspect

import numpy as np
import pytest
from sanitizer_corpus import BUGGY, CORRECT

import simulator
from dsl.errors import OutOfBoundsError
from jit.sanitize import SanitizerError, selected, warp_of


def _bug_line(kernel) -> int:
    lines, first = inspect.getsourcelines(kernel.fn)
    return first + next(i for i, line in enumerate(lines) if "# BUG" in line)


@pytest.fixture(autouse=True)
def _sanitize(monkeypatch):
    monkeypatch.setenv("WAVETILE_SANITIZE", "all")


@pytest.mark.parametrize("kernel,make,grid,kind,meta", BUGGY, ids=[b[0].__name__ for b in BUGGY])
def test_buggy_kernel_is_reported_with_class_and_line(kernel, make, grid, kind, meta):
    args = make(np.random.default_rng(0))
    with pytest.raises(OutOfBoundsError) as info:
        kernel[grid](*args, **meta)
    error = info.value
    line = _bug_line(kernel)
    if kind == "out-of-bounds":
        assert not isinstance(error, SanitizerError) and "out-of-bounds" in str(error)
        assert f"line {line}" in str(error) and "tile element" in str(error)
    else:
        assert isinstance(error, SanitizerError) and error.kind == kind, str(error)
        assert line in error.lines, (line, str(error))


def test_corpus_is_large_enough():
    assert len(BUGGY) >= 30 and len({b[3] for b in BUGGY}) == 5


@pytest.mark.parametrize("kernel,make,grid,meta", CORRECT, ids=[c[0].__name__ for c in CORRECT])
def test_correct_kernel_has_no_report(kernel, make, grid, meta, monkeypatch):
    rng = np.random.default_rng(1)
    args = make(rng)
    kernel[grid](*args, **meta)  # raises on any report
    monkeypatch.setenv("WAVETILE_SANITIZE", "0")
    reference = [a.copy() if isinstance(a, np.ndarray) else a for a in make(np.random.default_rng(1))]
    kernel[grid](*reference, **meta, interpret=True)  # the sanitizers change no result
    for got, want in zip(args, reference):
        if isinstance(got, np.ndarray):
            np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def test_race_report_names_both_programs_and_lines():
    kernel, make, grid, _, meta = next(b for b in BUGGY if b[0].__name__ == "missing_atomic")
    with pytest.raises(SanitizerError) as info:
        kernel[grid](*make(np.random.default_rng(0)), **meta)
    assert len(info.value.pids) == 2 and info.value.pids[0] != info.value.pids[1]
    assert "program (0, 0, 0)" in str(info.value) or "program (1, 0, 0)" in str(info.value)


def test_blocked_layout_rule_and_selection():
    """Warps own elements as jit.layout's blocked layout says, with the warp width of the machine."""
    assert warp_of((512,), 4, 32, vector=4).tolist() == [e // 4 // 32 for e in range(512)]
    assert warp_of((512,), 4, 32).tolist() == [e // 32 % 4 for e in range(512)]
    assert warp_of((512,), 4, 128).tolist() == [e // 128 for e in range(512)]  # MTT S4000's 128-lane warps
    assert warp_of((8,), 4, 32).tolist() == [0] * 8
    with simulator.machine("mtt-s4000"):
        assert warp_of((512,), 4).tolist() == [e // 128 for e in range(512)]
    assert selected({}) == ("bounds", "uninit", "race", "nan", "overflow")
    with pytest.raises(ValueError, match="unknown sanitizer"):
        selected({"sanitize": "bogus"})


@pytest.mark.parametrize("name", ["missing_atomic", "read_scratch_before_write", "divide_by_zero"])
def test_sanitizers_also_run_in_eager_mode(name):
    kernel, make, grid, kind, meta = next(b for b in BUGGY if b[0].__name__ == name)
    with pytest.raises(SanitizerError) as info:
        kernel[grid](*make(np.random.default_rng(0)), **meta, interpret="eager")
    assert info.value.kind == kind and _bug_line(kernel) in info.value.lines
