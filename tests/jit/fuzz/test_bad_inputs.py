"""Issue 14's bad inputs and faults (jit.fuzz.bad_inputs), each run in a subprocess: every case must end in a
clear error or a correct result, never a crash, a hang, a silently wrong result or an unclear error."""

import pytest

from jit.fuzz.bad_inputs import CASES, FAILURES, Case, classify, run_group, units

UNITS = units(CASES)


def _needs_torch(unit) -> bool:
    return any("import torch" in case.code for case in unit)


@pytest.mark.parametrize("unit", UNITS, ids=[u[0].name if len(u) == 1 else f"group-{u[0].item}" for u in UNITS])
def test_bad_input_cases(unit):
    if _needs_torch(unit):
        pytest.importorskip("torch", reason="torch tensors as arguments: the test extra `reference` installs torch")
    results = run_group(unit)
    failed = [f"{r.case.name} (item {r.case.item}): {r.outcome}: {r.observed}" for r in results
              if r.outcome in FAILURES]
    assert not failed, "\n".join(failed)


def test_every_issue_item_has_a_case():
    items = {c.item for c in CASES}
    assert {str(i) for i in range(1, 13)} | {"unclear errors", "sanitizers"} <= items
    assert len({c.name for c in CASES}) == len(CASES)


def test_the_probe_tells_outcomes_apart():
    """The classifier itself: a signal is a crash, a run of a bad input is silently wrong, an error that
    does not name what it must is unclear."""
    bad = Case("x", "t", "error", "", mentions=("kern", "arg"))
    good = Case("y", "t", "ok", "")
    assert classify(bad, -11, "", "")[0] == "crash"
    assert classify(bad, 0, "@@RETURNED\n", "")[0] == "silently wrong"
    assert classify(bad, 1, "@@RAISED ValueError\nkern: bad\n", "")[0] == "unclear error"
    assert classify(bad, 1, "@@RAISED ValueError\nkern: arg bad\n", "")[0] == "clear error"
    assert classify(good, 1, "@@RAISED AssertionError\nmismatch\n", "")[0] == "silently wrong"
    assert classify(good, 0, "@@RETURNED\n", "")[0] == "correct"
    assert classify(good, 1, "", "Fatal Python error")[0] == "crash"


def test_an_error_that_should_not_happen_names_where_it_happened():
    """A case that must run but raises reports the frames it raised in, so a rare failure (a race) can be traced
    from one report; an expected error's mentions are checked against its message alone."""
    fails = Case("fails", "t", "ok", "def deep():\n    return {}[98]\ndeep()\n")
    (result,) = run_group([fails])
    assert result.outcome == "unexpected error" and result.observed.startswith("KeyError: 98 [")
    assert "in deep" in result.observed and "return {}[98]" in result.observed
    expected = Case("names", "t", "error", "def kern_helper():\n    raise ValueError('bad')\nkern_helper()\n",
                    mentions=("kern_helper",))  # only its frames name it, not its message
    assert run_group([expected])[0].outcome == "unclear error"


def test_a_group_reports_a_crash_and_the_cases_before_it():
    """A case that kills its group's process is a crash; cases that finished before it keep their outcome."""
    first = Case("fine", "t", "ok", "x = 1\n")
    crash = Case("dies", "t", "ok", "import ctypes\nctypes.string_at(0)\n")
    results = run_group([first, crash])
    assert [r.outcome for r in results] == ["correct", "crash"]
