"""Pass tests on IR text, FileCheck style: parse the input, run one pass, verify, and compare the printed
result with the expected IR (also parsed and printed, so value names in both are free)."""

from __future__ import annotations

from collections.abc import Callable

from dsl.ir import verify
from dsl.ir.core import Function
from dsl.ir.parser import parse_function
from dsl.ir.printer import print_function


def canonical(text: str) -> str:
    return print_function(parse_function(text))


def run_pass(pass_fn: Callable[[Function], None], text: str) -> str:
    func = parse_function(text)
    pass_fn(func)
    verify(func)
    return print_function(func)


def assert_pass(pass_fn: Callable[[Function], None], before: str, after: str) -> None:
    got, want = run_pass(pass_fn, before), canonical(after)
    assert got == want, f"{pass_fn.__name__} gave\n{got}\nwanted\n{want}"
