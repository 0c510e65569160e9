"""Frontend robustness: mutated kernels end in a located CompilationError or in IR that verifies, never
in an internal exception (bounded slice of scripts/fuzz_frontend.py, which runs >= 5,000 inputs)."""

import pytest

from jit.fuzz.frontend import SEEDS, Outcome, compile_one, fuzz


def test_mutated_kernels_never_raise_internal_errors():
    outcome = fuzz(400, seed=11)
    assert outcome.inputs >= 400
    assert outcome.counts["CompilationError with a location"] > 100 and outcome.counts["compiled"] > 20
    assert not outcome.internal, outcome.internal[0][0] + "\n" + outcome.internal[0][1]


@pytest.mark.parametrize("snippet,reason", [
    ("tl.atomic_add(x_ptr // 0, 1.0)", "invalid operand"),
    ("tl.arange(None, BLOCK)", "compile-time integers"),
    ("tl.max(tl.arange(0, BLOCK), axis=tl.math, return_indices=True)", "axis must be a compile-time integer"),
    ("tl.sort(tl.arange(0, BLOCK), [1, 2])", "dim must be a compile-time integer"),
    ("tl.zeros((BLOCK,), dtype=tl)", "dtype must be a tl dtype"),
    ("tl.max(3, axis=0, return_indices=True)", "no axis"),
    ("tl.sum(tl.arange(0, BLOCK), axis=tl.static_range(2))", "axis must be a compile-time integer"),
])
def test_regressions_found_by_the_fuzzer_are_clean_errors(snippet, reason):
    source = f"\n@jit\ndef k(x_ptr, n, BLOCK: tl.constexpr):\n    v = {snippet}\n"
    outcome = Outcome()
    compile_one(source, 999_000 + len(snippet), outcome, timeout_s=20)
    assert outcome.counts["CompilationError with a location"] == 1, (dict(outcome.counts), outcome.internal)
    assert reason in outcome.last_error


def test_seeds_compile():
    outcome = Outcome()
    for i, source in enumerate(SEEDS):
        compile_one(source, 998_000 + i, outcome, timeout_s=30)
    assert outcome.counts["compiled"] == len(SEEDS), (dict(outcome.counts), outcome.internal)
