"""tl.atomic_load / tl.atomic_store / tl.atomic_poll (Triton 3.9): values, masks, memory orders, timeouts,
a producer/consumer handshake between programs, every executor, and the profiler's counts."""

import re

import numpy as np
import pytest

import dsl as tl
import simulator
from dsl.errors import CompilationError, KernelError
from jit import cdiv, jit

EXECUTORS = ["compiled", "interpreter", "eager"]


def _launch(kernel, grid, *args, executor="compiled", monkeypatch=None, **kwargs):
    if executor == "eager":
        monkeypatch.setenv("WAVETILE_INTERPRET", "eager")
        return kernel[grid](*args, **kwargs)
    return kernel[grid](*args, interpret=executor == "interpreter", **kwargs)


@jit
def copy_twice_kernel(src, dst, n, SEM_LOAD: tl.constexpr, SEM_STORE: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    value = tl.atomic_load(src + offs, mask=mask, sem=SEM_LOAD, scope="gpu")
    tl.atomic_store(dst + offs, value * 2, mask=mask, sem=SEM_STORE, scope="cta")


@pytest.mark.parametrize("executor", EXECUTORS)
@pytest.mark.parametrize("dtype", [np.float32, np.int16, np.uint64, np.float64, np.int8])
@pytest.mark.parametrize("sems", [("acquire", "release"), ("relaxed", "relaxed")])
def test_atomic_load_and_store_move_each_active_element(rng, executor, dtype, sems, monkeypatch):
    n, block = 203, 64
    kind = np.dtype(dtype).kind
    src = (rng.standard_normal(n) if kind == "f" else rng.integers(-40 if kind == "i" else 0, 60, n)).astype(dtype)
    dst = np.full(n + 5, 7, dtype)  # past n: masked-off lanes must not write
    _launch(copy_twice_kernel, (cdiv(n, block),), src, dst, n, *sems, BLOCK=block, executor=executor,
            monkeypatch=monkeypatch)
    np.testing.assert_array_equal(dst[:n], (src * 2).astype(dtype))
    np.testing.assert_array_equal(dst[n:], np.full(5, 7, dtype))


@jit
def masked_load_kernel(src, out, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(out + offs, tl.atomic_load(src + offs, mask=offs < n))


@pytest.mark.parametrize("executor", EXECUTORS)
def test_masked_off_lanes_of_an_atomic_load_give_zero_and_touch_nothing(rng, executor, monkeypatch):
    n = 5
    src = rng.standard_normal(n).astype(np.float32)  # 5 elements, the tile has 8: lanes 5..7 are off
    out = np.full(8, np.nan, np.float32)
    _launch(masked_load_kernel, (1,), src, out, n, BLOCK=8, executor=executor, monkeypatch=monkeypatch)
    np.testing.assert_array_equal(out, np.concatenate([src, np.zeros(3, np.float32)]))


@jit
def scalar_member_kernel(counter, out):
    tl.store(out, counter.atomic_load() + 1)
    counter.atomic_store(41, sem="relaxed")


@pytest.mark.parametrize("executor", EXECUTORS)
def test_scalar_pointers_and_tensor_methods(executor, monkeypatch):
    counter, out = np.array([9], np.int32), np.zeros(1, np.int32)
    _launch(scalar_member_kernel, (1,), counter, out, executor=executor, monkeypatch=monkeypatch)
    assert out[0] == 10 and counter[0] == 41


@jit
def poll_kernel(flags, expected, out, TIMEOUT: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    seen = tl.atomic_poll(flags + offs, tl.load(expected + offs), sem="relaxed", scope="sys", timeout_ns=TIMEOUT)
    tl.store(out + offs, seen)


@pytest.mark.parametrize("executor", EXECUTORS)
@pytest.mark.parametrize("dtype", [np.int16, np.int32, np.int64, np.uint32])
def test_poll_with_a_timeout_reports_which_elements_matched(rng, executor, dtype, monkeypatch):
    block = 32
    flags = rng.integers(0, 4, block).astype(dtype)
    match = rng.permutation(block) < block // 2  # a random half of the elements already hold their expected value
    expected = np.where(match, flags, flags + 1).astype(dtype)
    out = np.ones(block, np.bool_)
    _launch(poll_kernel, (1,), flags, expected, out, TIMEOUT=0, BLOCK=block, executor=executor,
            monkeypatch=monkeypatch)
    np.testing.assert_array_equal(out, match)


@pytest.mark.parametrize("executor", EXECUTORS)
def test_poll_without_a_timeout_returns_true_when_every_value_is_there(rng, executor, monkeypatch):
    flags = rng.integers(-50, 50, 16).astype(np.int32)
    out = np.zeros(16, np.bool_)
    _launch(poll_kernel, (1,), flags, flags.copy(), out, TIMEOUT=None, BLOCK=16, executor=executor,
            monkeypatch=monkeypatch)
    assert out.all()


@jit
def timed_poll_kernel(flags, out, timeout_ns, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(out + offs, tl.atomic_poll(flags + offs, 1, timeout_ns=timeout_ns))


def test_compiled_poll_timeout_is_wall_time_shared_by_the_tile():
    import time

    flags, out = np.zeros(4, np.int32), np.ones(4, np.bool_)
    timed_poll_kernel[(1,)](flags, out, 0, BLOCK=4)  # compile first: the timeout is a run-time int64
    assert not out.any()
    out[:] = True
    start = time.perf_counter()
    timed_poll_kernel[(1,)](flags, out, 60_000_000, BLOCK=4)  # 60 ms for the whole tile
    elapsed = time.perf_counter() - start
    assert not out.any()
    assert 0.06 <= elapsed < 0.06 * 2.5  # one shared budget, not 60 ms per element


@pytest.mark.parametrize("executor", ["interpreter", "eager"])
def test_an_interpreted_poll_that_could_never_end_is_an_error_naming_the_line(executor, monkeypatch):
    flags, expected, out = np.zeros(8, np.int32), np.arange(8, dtype=np.int32), np.zeros(8, np.bool_)
    with pytest.raises(KernelError, match=r"atomic_poll in kernel 'poll_kernel' at .*line \d+.* would wait "
                                          r"forever: tile element \(1,\) holds 0, not the expected 1"):
        _launch(poll_kernel, (1,), flags, expected, out, TIMEOUT=None, BLOCK=8, executor=executor,
                monkeypatch=monkeypatch)


@jit
def handshake_kernel(payload, flag, out, TIMEOUT: tl.constexpr):
    """Program 0 waits for the last program's release; the acquire makes its plain store visible."""
    pid = tl.program_id(0)
    if pid == 0:
        ok = tl.atomic_poll(flag, 1, sem="acquire", timeout_ns=TIMEOUT)
        tl.store(out, tl.where(ok, tl.load(payload), -1))
    elif pid == tl.num_programs(0) - 1:
        tl.store(payload, 1000 + pid)
        tl.atomic_store(flag, 1, sem="release")


@pytest.mark.parametrize("grid", [2, 7])
def test_compiled_programs_hand_off_through_release_and_acquire(grid, monkeypatch):
    monkeypatch.setenv("WAVETILE_NUM_THREADS", "2")
    payload, flag, out = np.zeros(1, np.int32), np.zeros(1, np.int32), np.zeros(1, np.int32)
    handshake_kernel[(grid,)](payload, flag, out, TIMEOUT=20_000_000_000)
    assert out[0] == 1000 + grid - 1 and flag[0] == 1


def test_interpreted_handshake_in_launch_order():
    """Programs run in order in the interpreter: a poll on an earlier program's release sees it."""

    @jit
    def forward(payload, flag, out):
        pid = tl.program_id(0)
        if pid == 0:
            tl.store(payload, 5)
            tl.atomic_store(flag, 1)
        else:
            tl.atomic_poll(flag, 1)
            tl.store(out, tl.load(payload) + pid)

    payload, flag, out = np.zeros(1, np.int32), np.zeros(1, np.int32), np.zeros(1, np.int32)
    forward[(2,)](payload, flag, out, interpret=True)
    assert out[0] == 6


@jit
def bad_atomics_kernel(p, f, p8, CASE: tl.constexpr):
    if CASE == 0:
        tl.atomic_load(p, sem="release")
    elif CASE == 1:
        tl.atomic_store(p, 1, sem="acquire")
    elif CASE == 2:
        tl.atomic_load(p, scope="grid")
    elif CASE == 3:
        tl.atomic_poll(f, 1.0)
    elif CASE == 4:
        tl.atomic_poll(p8, 1)
    elif CASE == 5:
        tl.atomic_poll(p + tl.arange(0, 4), tl.arange(0, 8))
    else:
        tl.atomic_poll(p, 1, sem="acq_rel")


@pytest.mark.parametrize("case, message", enumerate([
    "atomic_load: sem must be 'acquire' or 'relaxed', got 'release'",
    "atomic_store: sem must be 'release' or 'relaxed', got 'acquire'",
    "atomic_load: scope must be 'gpu', 'cta' or 'sys', got 'grid'",
    "atomic_poll needs a pointer to a 16-, 32- or 64-bit integer, got a pointer to fp32",
    "atomic_poll needs a pointer to a 16-, 32- or 64-bit integer, got a pointer to int8",
    "atomic_poll: expected value of shape [8] does not fit the pointer's shape [4]",
    "atomic_poll: sem must be 'acquire' or 'relaxed', got 'acq_rel'",
]))
def test_bad_arguments_are_compile_errors_at_the_line(case, message):
    with pytest.raises(CompilationError, match=re.escape(message)) as info:
        bad_atomics_kernel[(1,)](np.zeros(8, np.int32), np.zeros(1, np.float32), np.zeros(1, np.int8), CASE=case)
    assert "bad_atomics_kernel" in str(info.value)


def test_the_ir_names_each_op_with_its_order_and_scope():
    src, dst = np.arange(8, dtype=np.int32), np.zeros(8, np.int32)
    kernel = copy_twice_kernel[(1,)](src, dst, 8, "relaxed", "release", BLOCK=8)
    text = kernel.asm["ir"]
    assert 'tile.atomic_load' in text and 'sem = "relaxed"' in text and 'scope = "gpu"' in text
    assert 'tile.atomic_store' in text and 'sem = "release"' in text and 'scope = "cta"' in text


def test_profiler_counts_ordered_accesses_as_one_element_per_lane_loads_and_stores(rng):
    n, block = 300, 128
    src, dst = rng.standard_normal(n).astype(np.float32), np.zeros(n, np.float32)
    with simulator.profile() as prof:
        copy_twice_kernel[(cdiv(n, block),)](src, dst, n, "acquire", "release", BLOCK=block)
    np.testing.assert_array_equal(dst, src * 2)
    c = prof.launches[0].totals
    assert c.atomic_ops == 0  # ld.acquire / st.release are not read-modify-writes
    warp = simulator.current_spec().warp_size
    # one request per warp with an active lane (scalar accesses, 4 B per lane); the tail program has fewer
    warps_with_work = sum(cdiv(min(block, n - start), warp) for start in range(0, n, block))
    assert c.load_requests == c.store_requests == warps_with_work
    assert c.masked_lanes > 0


def test_a_profiled_poll_that_could_never_end_fails_instead_of_spinning():
    payload, flag, out = np.zeros(1, np.int32), np.zeros(1, np.int32), np.zeros(1, np.int32)
    with simulator.profile():  # profiled programs run one at a time: program 0 waits for a later one
        with pytest.raises(KernelError, match=r"atomic_poll in kernel 'handshake_kernel' at .*test_ordered_atomics"
                                              r"\.py:\d+ .*program id \(0, 0, 0\) would wait forever"):
            handshake_kernel[(2,)](payload, flag, out, TIMEOUT=None)


def test_a_profiled_poll_with_a_timeout_times_out_and_counts_its_loads():
    payload, flag, out = np.zeros(1, np.int32), np.zeros(1, np.int32), np.zeros(1, np.int32)
    with simulator.profile() as prof:
        handshake_kernel[(2,)](payload, flag, out, TIMEOUT=1_000_000)
    assert out[0] == -1 and flag[0] == 1  # program 0 ran first, alone, and gave up after 1 ms
    assert prof.launches[0].totals.load_requests >= 1


@jit
def read_twice_kernel(scratch, out, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(out + offs, tl.atomic_load(scratch + offs, sem="relaxed"))


@jit
def flag_counter_kernel(flags, out):
    """Every program atomically publishes its flag and atomically reads its neighbour's: no race."""
    pid = tl.program_id(0)
    tl.atomic_store(flags + pid, 1)
    tl.store(out + pid, tl.atomic_load(flags + (pid + 1) % tl.num_programs(0)))


@jit
def plain_write_atomic_read_kernel(flags, out):
    pid = tl.program_id(0)
    if pid == 0:
        tl.store(flags, 1)  # a plain store another program reads atomically: a race
    else:
        tl.store(out, tl.atomic_load(flags))


def test_sanitizers_see_atomic_reads_as_reads(monkeypatch):
    from jit.sanitize import SanitizerError

    monkeypatch.setenv("WAVETILE_SANITIZE", "all")
    with pytest.raises(SanitizerError, match="nothing has written") as info:  # an atomic read of empty memory
        read_twice_kernel[(1,)](simulator.empty(8, np.float32), np.zeros(8, np.float32), BLOCK=8)
    assert info.value.kind == "uninitialized-read"
    flags, out = np.zeros(3, np.int32), np.zeros(3, np.int32)
    flag_counter_kernel[(3,)](flags, out)  # atomics against atomics: nothing to report
    assert flags.tolist() == [1, 1, 1]
    with pytest.raises(SanitizerError, match="write/atomic race between programs") as info:
        plain_write_atomic_read_kernel[(2,)](np.zeros(1, np.int32), np.zeros(1, np.int32))
    assert info.value.kind == "data-race"
