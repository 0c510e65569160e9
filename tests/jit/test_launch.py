"""One launch path: a call binds once into a launch object (jit.launch), one router (jit.launcher) picks its
executor, and the rules every executor shares (grid meta, integer typing, program order, the compiler's IR
stages) exist once."""

import numpy as np
import pytest

import dsl as tl
import simulator
from dsl import dtypes as T
from dsl.errors import OutOfBoundsError
from jit import Config, arguments, cdiv, compiler, grid, interpreter, jit, launch, launcher
from jit.launcher import model_launch


@jit
def scale_kernel(x_ptr, out_ptr, a, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, a * tl.load(x_ptr + offs, mask=mask), mask=mask)


@jit
def big_bound_kernel(x_ptr, out_ptr, size, bound, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    mask = (offs < size) & (offs.to(tl.int64) < bound)  # `bound` is typed by value: i32, i64 or u64
    tl.store(out_ptr + offs, 2.0 * tl.load(x_ptr + offs, mask=mask), mask=mask)


@jit
def order_kernel(counter_ptr, order_ptr):
    slot = tl.atomic_add(counter_ptr, 1)
    tl.store(order_ptr + slot, tl.program_id(0))


def _inputs(rng, n=203):
    return rng.standard_normal(n).astype(np.float32), np.zeros(n, np.float32)


def _grid(meta):
    return (cdiv(meta["n"], meta["BLOCK"]),)


@pytest.fixture
def no_modes(monkeypatch):
    for name in ("WAVETILE_INTERPRET", "WAVETILE_SANITIZE", "WAVETILE_PROFILE"):
        monkeypatch.delenv(name, raising=False)


# --- the router ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("options, env, expected", [
    ({}, {}, launcher.NATIVE),
    ({"interpret": False}, {}, launcher.NATIVE),
    ({"interpret": True}, {}, launcher.INTERPRETER),
    ({"interpret": "eager"}, {}, launcher.EAGER),
    ({}, {"WAVETILE_INTERPRET": "1"}, launcher.INTERPRETER),
    ({}, {"WAVETILE_INTERPRET": "eager"}, launcher.EAGER),
    ({}, {"WAVETILE_INTERPRET": "off"}, launcher.NATIVE),
    ({}, {"WAVETILE_SANITIZE": "all"}, launcher.INTERPRETER),  # the sanitizers live in the interpreter
    ({"interpret": False}, {"WAVETILE_INTERPRET": "1"}, launcher.NATIVE),  # the option wins over the variable
    ({"interpret": "eager"}, {"WAVETILE_SANITIZE": "all"}, launcher.EAGER),
])
def test_route_follows_the_option_then_the_environment(monkeypatch, no_modes, options, env, expected):
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    assert launcher.route(options) == expected


def test_route_is_profiled_while_a_profile_is_open(no_modes):
    assert launcher.route({}) == launcher.NATIVE
    with simulator.profile():
        assert launcher.route({}) == launcher.PROFILED
        assert launcher.route({"interpret": True}) == launcher.INTERPRETER  # interpreting is not profiled
    assert launcher.route({}) == launcher.NATIVE


def test_route_refuses_an_unknown_interpret_value_by_name(no_modes):
    with pytest.raises(ValueError, match=r"interpret must be True, False or 'eager', got 'fast'"):
        launcher.route({"interpret": "fast"})


@pytest.mark.parametrize("options, profiled, expected", [
    ({}, False, launcher.NATIVE),
    ({}, True, launcher.PROFILED),
    ({"interpret": True}, False, launcher.INTERPRETER),
    ({"interpret": "eager"}, False, launcher.EAGER),
])
def test_each_launch_runs_the_executor_its_route_names(monkeypatch, no_modes, rng, options, profiled, expected):
    calls = []
    for route, executor in launcher.EXECUTORS.items():
        def spy(bound, route=route, executor=executor):
            calls.append(route)
            return executor(bound)
        monkeypatch.setitem(launcher.EXECUTORS, route, spy)
    x, out = _inputs(rng)
    scale_kernel.compiled.clear()
    scale_kernel._plans.by_key.clear()
    if profiled:
        with simulator.profile() as prof:
            scale_kernel[_grid](x, out, 2.5, x.size, BLOCK=64, **options)
        assert [r.kernel for r in prof.launches] == ["scale_kernel"]
    else:
        scale_kernel[_grid](x, out, 2.5, x.size, BLOCK=64, **options)
    assert calls == [expected]
    np.testing.assert_array_equal(out, np.float32(2.5) * x)


# --- one binding per launch -------------------------------------------------------------------------------
@pytest.fixture
def binds(monkeypatch):
    """Every launch object built, with the grid it was bound for."""
    built = []
    real = launch.bind

    def counting(jit_fn, args, kwargs, grid=launch.NO_GRID):
        bound = real(jit_fn, args, kwargs, grid)
        built.append(bound)
        return bound
    monkeypatch.setattr(launch, "bind", counting)
    return built


def test_a_launch_binds_once_and_a_repeat_reuses_its_plan(no_modes, rng, binds):
    scale_kernel.compiled.clear()
    scale_kernel._plans.by_key.clear()
    x, out = _inputs(rng)
    grids = []

    def recorded_grid(meta):
        grids.append(dict(meta))
        return _grid(meta)
    scale_kernel[recorded_grid](x, out, 3.0, x.size, BLOCK=64, num_warps=2)
    assert len(binds) == 1 and binds[0].grid == (4, 1, 1) and binds[0].compile_options.num_warps == 2
    assert binds[0].kernel is not None  # the native executor compiled through the launch object
    # the grid saw every argument and the launch options, once
    assert len(grids) == 1 and grids[0]["x_ptr"] is x and grids[0]["n"] == x.size and grids[0]["BLOCK"] == 64
    assert grids[0]["num_warps"] == 2
    scale_kernel[recorded_grid](x, out, 3.0, x.size, BLOCK=64, num_warps=2)  # the plan: no new binding
    assert len(binds) == 1 and len(grids) == 2 and grids[1] == grids[0]
    np.testing.assert_array_equal(out, np.float32(3.0) * x)


@pytest.mark.parametrize("options", [{"interpret": True}, {"interpret": "eager"}])
def test_interpreted_launches_bind_once_each(no_modes, rng, binds, options):
    x, out = _inputs(rng)
    for _ in range(2):
        scale_kernel[_grid](x, out, -1.5, x.size, BLOCK=32, **options)
    assert len(binds) == 2 and all(b.kernel is None for b in binds)  # nothing compiled to native code
    np.testing.assert_array_equal(out, np.float32(-1.5) * x)


def test_profiled_and_modeled_launches_bind_once(no_modes, rng, binds):
    x, out = _inputs(rng)
    with simulator.profile() as prof:
        scale_kernel[_grid](x, out, 0.5, x.size, BLOCK=64)
    assert len(binds) == 1 and len(prof.launches) == 1
    np.testing.assert_array_equal(out, np.float32(0.5) * x)
    record = model_launch(scale_kernel, _grid, x, out, 0.5, x.size, BLOCK=64, sample=False)
    assert len(binds) == 2 and record.kernel == "scale_kernel" and record.grid == (4,)


def test_a_failing_plan_launch_binds_once_for_its_message(no_modes, rng, binds):
    scale_kernel._plans.by_key.clear()
    x, out = _inputs(rng, 40)
    for _ in range(2):
        scale_kernel[(1,)](x, out, 1.0, x.size, BLOCK=64)
    assert len(binds) == 1
    with pytest.raises(OutOfBoundsError, match=r"scale_kernel.*buffer 'x_ptr' \(40 elements"):
        scale_kernel[(1,)](x, out, 1.0, x.size + 3, BLOCK=64)  # the same plan; n now overruns the arrays
    assert len(binds) == 2


def test_bad_options_and_grids_are_refused_at_binding_by_name(rng):
    x, out = _inputs(rng, 20)
    with pytest.raises(ValueError, match="scale_kernel: num_warps=3"):
        launch.bind(scale_kernel, (x, out, 1.0, 20), {"BLOCK": 32, "num_warps": 3}, (1,))
    with pytest.raises(TypeError, match="scale_kernel: grid dimension 0 is 1.5"):
        launch.bind(scale_kernel, (x, out, 1.0, 20), {"BLOCK": 32}, lambda meta: (1.5,))
    bound = launch.bind(scale_kernel, (x, out, 1.0, 20), {"BLOCK": 32, "sample": 4, "machine": "h200"}, (2, 3))
    assert bound.grid == (2, 3, 1) and bound.programs == 6 and bound.machine == "h200" and bound.model == {"sample": 4}
    assert [name for name, _, _ in bound.runtime] == ["x_ptr", "out_ptr", "a", "n"]


# --- one rule each -----------------------------------------------------------------------------------------
@pytest.mark.parametrize("value, expected", [
    (0, T.int32), (-2**31, T.int32), (2**31 - 1, T.int32), (2**31, T.int64), (-2**31 - 1, T.int64),
    (2**63 - 1, T.int64), (-2**63, T.int64), (2**63, T.uint64), (2**64 - 1, T.uint64), (2**64, None),
    (-2**63 - 1, None),
])
def test_one_integer_typing_rule_for_arguments_plans_and_literals(value, expected):
    assert T.integer_dtype(value) is expected
    if expected is None:
        with pytest.raises(OverflowError, match="does not fit in 64 bits"):
            arguments.classify(value, "n", "k")
        return
    assert arguments.classify(value, "n", "k").dtype is expected  # the general path's typing
    key, _ = scale_kernel._plans.key([np.zeros(1, np.float32)] * 2 + [1.0, value, 64], {})
    assert key[0][3][0] == expected.ir  # the plan key's class of the same int


@pytest.mark.parametrize("n", [2**31 - 1, 2**31, 2**63])
def test_plans_and_general_path_agree_at_the_integer_boundaries(no_modes, rng, n):
    x, out = _inputs(rng, 19)
    big_bound_kernel.compiled.clear()
    big_bound_kernel._plans.by_key.clear()
    for _ in range(2):  # the second launch takes the plan the first one made
        big_bound_kernel[(1,)](x, out, x.size, n, BLOCK=32)
    kernel, = big_bound_kernel.compiled.values()
    assert kernel.signature["bound"].dtype is T.integer_dtype(n) and len(big_bound_kernel._plans.by_key) == 1
    np.testing.assert_array_equal(out, np.float32(2.0) * x)


@pytest.mark.parametrize("interpret", [False, True, "eager"])
def test_every_executor_runs_programs_in_the_one_seeded_order(monkeypatch, no_modes, interpret):
    monkeypatch.setenv("WAVETILE_SCHEDULE_SEED", "7")
    monkeypatch.setenv("WAVETILE_NUM_THREADS", "1")
    counter, order = np.zeros(1, np.int32), np.full(37, -1, np.int32)
    order_kernel[(37,)](counter, order, interpret=interpret)
    expected = grid.program_order(37)
    assert sorted(expected.tolist()) == list(range(37)) and expected.tolist() != list(range(37))
    np.testing.assert_array_equal(order, expected)


def test_the_interpreter_runs_the_compilers_ir_stages(no_modes, rng):
    assert [name for name, _ in compiler.STAGES] == ["frontend", "verify", "passes", "verify passes", "lower", "emit"]
    assert compiler.IR_STAGES == compiler.STAGES[:4]
    x, out = _inputs(rng, 48)
    bound = launch.bind(scale_kernel, (x, out, 1.0, 48), {"BLOCK": 16, "num_warps": 2}, (3,))
    kernel = bound.compiled()
    func = interpreter.ir_of(scale_kernel, bound.signature, 2, bound.divisibility)
    assert str(func) == kernel.asm["ir"]  # the interpreter executes exactly the IR codegen lowered


# --- one config trial ---------------------------------------------------------------------------------------
@jit
def accumulate_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(out_ptr + offs, mask=mask) + tl.load(x_ptr + offs, mask=mask), mask=mask)


def test_one_trial_models_then_times_on_the_inputs_it_is_given(no_modes, rng):
    """jit.autotune.Trial, which the autotuner and wavetile-tune share: each run (modeled or timed) gets
    inputs from `inputs` and is followed by `done`, so an output that accumulates shows one run's worth."""
    from jit.autotune import Trial, TuningRecord

    x = rng.standard_normal(150).astype(np.float32)
    out = np.zeros_like(x)
    events = []

    def inputs():
        out[...] = 0
        events.append("inputs")
        return x, out, x.size

    def done(exc):
        events.append("done" if exc is None else f"failed: {type(exc).__name__}")
        np.testing.assert_array_equal(out, x)  # one launch on fresh inputs, never two

    config = Config({"BLOCK": 64}, num_warps=2)
    rec = TuningRecord(config)
    trial = Trial(accumulate_kernel, (x, out, x.size), config.all_kwargs(), lambda m: (cdiv(m["n"], m["BLOCK"]),),
                  inputs=inputs, done=done)
    last = trial.run(rec, model=True, runs=3)
    assert rec.ok and rec.modeled_seconds > 0 and rec.cpu_seconds > 0 and last[1] is out
    assert events == ["inputs", "done"] * 4  # the model's run, then three timed runs
    failing = TuningRecord(Config({"BLOCK": 48}))  # not a power of two: the compile fails, the trial reports it
    events.clear()
    assert Trial(accumulate_kernel, (x, out, x.size), {"BLOCK": 48}, (3,), inputs=inputs,
                 done=lambda exc: events.append(type(exc).__name__)).run(failing, model=True, runs=3) is None
    assert failing.error.startswith("CompilationError: in kernel 'accumulate_kernel'")
    assert "its length 48 must be a power of 2" in failing.error
    assert failing.cpu_seconds == failing.modeled_seconds == float("inf") and events == ["CompilationError"]
