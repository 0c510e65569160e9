"""kernels.registry: case tolerances are tight enough to catch real bugs, and every case runs from a
cold emulated L2 (so a profile of one case does not count hits on data the previous case left)."""

from __future__ import annotations

import numpy as np
import pytest

import simulator
from kernels.attention import attention, attention_reference
from kernels.paged import paged_decode, paged_decode_reference, random_paged_cache
from kernels.registry import all_cases, check


def _case(op: str, shape_prefix: str = ""):
    return next(c for c in all_cases() if c.op == op and c.shape.startswith(shape_prefix))


def test_paged_decode_check_fails_when_a_16_key_page_is_dropped(rng):
    case = _case("paged.decode", "qwen3.5 decode:")
    seq_lens = np.array([4096, 1000, 77, 2500], np.int32)  # the case's shape: page 16, H=16/2, D=256
    kc, vc, table = random_paged_cache(rng, seq_lens, 16, 2, 256, np.float16)
    q = rng.standard_normal((4, 16, 256)).astype(np.float16)
    g = rng.standard_normal(q.shape).astype(np.float16)
    got = paged_decode(q, kc, vc, table, seq_lens, g)
    assert check(case, got, paged_decode_reference(q, kc, vc, table, seq_lens, g))
    # the longest sequence (where one page weighs least) without its 100th page
    dropped_table, dropped_lens = table.copy(), seq_lens.copy()
    dropped_table[0, 100:-1] = table[0, 101:]
    dropped_lens[0] -= 16
    assert not check(case, got, paged_decode_reference(q, kc, vc, dropped_table, dropped_lens, g))


def test_attention_prefill_check_fails_on_a_one_percent_scale_error(rng):
    case = _case("attention.prefill", "qwen3.5 causal:")
    q, k, v, g = (rng.standard_normal((1, 256, h, 256)).astype(np.float16) for h in (16, 2, 2, 16))
    got = attention(q, k, v, g)
    assert check(case, got, attention_reference(q, k, v, g))
    assert not check(case, got, attention_reference(q, k, v, g, scale=1.01 * 256 ** -0.5))


def test_a_case_profiles_the_same_after_another_case():
    case = _case("rope.mrope")
    before = _case("rope.neox_theta")  # reads the same kind of tensors, and leaves them in L2

    def dram_bytes() -> int:
        with simulator.profile() as prof:
            case.run()
        return sum(r.counters.get("dram_bytes", 0) for r in prof.launches)

    alone = dram_bytes()
    with simulator.profile():
        before.run()
    assert dram_bytes() == alone > 0
    with simulator.profile():
        case.run()
    assert dram_bytes() == alone  # not even its own previous run helps


@pytest.mark.parametrize("op", ["paged.decode", "attention.prefill"])
def test_fp16_cases_use_fp16_tolerances(op):
    assert all(c.rtol <= 1e-3 and c.atol <= 1e-3 for c in all_cases() if c.op == op)
