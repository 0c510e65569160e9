"""LLVM IR text -> object bytes -> callable entry, with hand-written IR standing in for the code generator."""

from __future__ import annotations

import ctypes
import statistics
import threading
import time

import pytest

from jit import abi, engine

# writes ctx[0] + ctx[1] to *(i64*)ctx[2]
ADD_IR = """
define i32 @wavetile_grid(ptr %ctx) {
entry:
  %a = load i64, ptr %ctx
  %p1 = getelementptr i64, ptr %ctx, i64 1
  %b = load i64, ptr %p1
  %p2 = getelementptr i64, ptr %ctx, i64 2
  %out = load ptr, ptr %p2
  %s = add i64 %a, %b
  store i64 %s, ptr %out
  ret i32 0
}
"""


def run_add(kernel: engine.LoadedKernel, a: int, b: int) -> int:
    out = ctypes.c_int64(0)
    ctx = (ctypes.c_int64 * 3)(a, b, ctypes.addressof(out))
    assert kernel(ctypes.addressof(ctx)) == 0
    return out.value


def const_ir(value: int) -> str:
    return f"define i32 @wavetile_grid(ptr %ctx) {{\n  ret i32 {value}\n}}\n"


STAGES = 26  # makes grid_module about 200 lines


def grid_module(stages: int = STAGES) -> str:
    """A ~200-line module shaped like generated code: an atomic-counter grid loop over programs, each
    program a bounds-checked vector loop with a chain of arithmetic, and an error record on failure."""
    body = []
    prev = "%x"
    for i in range(stages):
        body += [
            f"  %m{i} = fmul fast <8 x float> {prev}, <float 1.5, float 1.5, float 1.5, float 1.5, "
            "float 1.5, float 1.5, float 1.5, float 1.5>",
            f"  %c{i} = fcmp ogt <8 x float> %m{i}, zeroinitializer",
            f"  %r{i} = select <8 x i1> %c{i}, <8 x float> %m{i}, <8 x float> zeroinitializer",
            f"  %a{i} = fadd fast <8 x float> %r{i}, {prev}",
            f"  %t{i} = call <8 x float> @llvm.maxnum.v8f32(<8 x float> %a{i}, <8 x float> %x)",
        ]
        prev = f"%t{i}"
    return f"""
declare <8 x float> @llvm.maxnum.v8f32(<8 x float>, <8 x float>)

define internal i32 @program(ptr %ctx, i64 %pid) {{
entry:
  %args = load ptr, ptr %ctx
  %xp = load ptr, ptr %args
  %yslot = getelementptr i64, ptr %args, i64 1
  %yp = load ptr, ptr %yslot
  %nslot = getelementptr i64, ptr %args, i64 2
  %n = load i64, ptr %nslot
  %base = mul i64 %pid, 64
  br label %loop
loop:
  %i = phi i64 [0, %entry], [%inext, %cont]
  %off = add i64 %base, %i
  %end = add i64 %off, 8
  %oob = icmp sgt i64 %end, %n
  br i1 %oob, label %fail, label %cont
cont:
  %px = getelementptr float, ptr %xp, i64 %off
  %x = load <8 x float>, ptr %px, align 4
{chr(10).join(body)}
  %py = getelementptr float, ptr %yp, i64 %off
  store <8 x float> {prev}, ptr %py, align 4
  %inext = add i64 %i, 8
  %more = icmp slt i64 %inext, 64
  br i1 %more, label %loop, label %done
done:
  ret i32 0
fail:
  %errslot = getelementptr i64, ptr %ctx, i64 {abi.ERROR}
  %err = load ptr, ptr %errslot
  store i64 {abi.OUT_OF_BOUNDS}, ptr %err
  %off_slot = getelementptr i64, ptr %err, i64 {abi.ERR_OFFSET}
  store i64 %off, ptr %off_slot
  ret i32 {abi.OUT_OF_BOUNDS}
}}

define i32 @wavetile_grid(ptr %ctx) {{
entry:
  %gxs = getelementptr i64, ptr %ctx, i64 {abi.GRID_X}
  %gx = load i64, ptr %gxs
  %nps = getelementptr i64, ptr %ctx, i64 {abi.NEXT_PID}
  %counter = load ptr, ptr %nps
  %chs = getelementptr i64, ptr %ctx, i64 {abi.CHUNK}
  %chunk = load i64, ptr %chs
  br label %take
take:
  %first = atomicrmw add ptr %counter, i64 %chunk monotonic
  %have = icmp slt i64 %first, %gx
  br i1 %have, label %run, label %finish
run:
  %pid = phi i64 [%first, %take], [%pnext, %next]
  %rc = call i32 @program(ptr %ctx, i64 %pid)
  %ok = icmp eq i32 %rc, 0
  br i1 %ok, label %next, label %failed
next:
  %pnext = add i64 %pid, 1
  %last = add i64 %first, %chunk
  %inchunk = icmp slt i64 %pnext, %last
  %ingrid = icmp slt i64 %pnext, %gx
  %go = and i1 %inchunk, %ingrid
  br i1 %go, label %run, label %take
failed:
  ret i32 %rc
finish:
  ret i32 0
}}
"""


def test_tiny_kernel_compiles_loads_and_runs():
    compiled = engine.optimize_and_emit(ADD_IR, "add")
    kernel = engine.load(compiled.obj)
    assert run_add(kernel, 3, 4) == 7
    assert run_add(kernel, -10, 2**40) == 2**40 - 10


def test_compiled_object_keeps_ir_and_assembly():
    compiled = engine.optimize_and_emit(ADD_IR, "add")
    assert compiled.name == "add"
    assert compiled.obj.startswith(b"\x7fELF")
    assert "define" in compiled.optimized_ir and abi.ENTRY in compiled.optimized_ir
    assert abi.ENTRY + ":" in compiled.asm
    again = engine.CompiledObject.from_files("add", compiled.to_files())
    assert again == compiled
    assert engine.optimize_and_emit(ADD_IR, "add", with_asm=False).asm == ""


def test_stats_count_optimiser_runs_and_loads():
    before = (engine.stats.optimize_calls, engine.stats.load_calls)
    compiled = engine.optimize_and_emit(ADD_IR, "add")
    engine.load(compiled.obj)
    engine.load(compiled.obj)
    assert (engine.stats.optimize_calls, engine.stats.load_calls) == (before[0] + 1, before[1] + 2)
    assert engine.stats.optimize_seconds > 0


@pytest.mark.parametrize(
    "bad_ir",
    [
        "define i32 @wavetile_grid(ptr %ctx) {\n  ret i64 0\n}\n",  # parse error
        # verifier error: a use that its definition does not dominate
        "define i32 @wavetile_grid(ptr %ctx) {\nentry:\n  br label %b\na:\n  %v = add i32 1, 2\n"
        "  br label %b\nb:\n  ret i32 %v\n}\n",
    ],
)
def test_invalid_ir_raises_instead_of_aborting(bad_ir):
    with pytest.raises(engine.CompileError, match="bad"):
        engine.optimize_and_emit(bad_ir, "bad")


def test_load_rejects_malformed_objects():
    obj = engine.optimize_and_emit(ADD_IR, "add").obj
    flipped = bytearray(obj)
    flipped[0x28:0x30] = b"\xff" * 8  # e_shoff far past the end
    wrong_machine = bytearray(obj)
    wrong_machine[18] ^= 0x55
    for bad in [b"", b"hello" * 40, obj[: len(obj) // 2], obj[:40], bytes(flipped), bytes(wrong_machine)]:
        with pytest.raises(engine.LoadError):
            engine.load(bad)


def test_load_reports_a_missing_entry():
    obj = engine.optimize_and_emit("define i32 @other(ptr %ctx) {\n  ret i32 0\n}\n", "other").obj
    with pytest.raises(engine.LoadError, match=abi.ENTRY):
        engine.load(obj)
    assert engine.load(obj, symbol="other")(0) == 0


def test_external_calls_resolve_or_fail_cleanly():
    libm = """
declare float @expf(float)
define i32 @wavetile_grid(ptr %ctx) {
  %p = load ptr, ptr %ctx
  %x = load float, ptr %p
  %y = call float @expf(float %x)
  store float %y, ptr %p
  ret i32 0
}
"""
    kernel = engine.load(engine.optimize_and_emit(libm, "libm").obj)
    value = ctypes.c_float(1.0)
    ctx = (ctypes.c_int64 * 1)(ctypes.addressof(value))
    assert kernel(ctypes.addressof(ctx)) == 0
    assert value.value == pytest.approx(2.7182817)

    missing = libm.replace("expf", "wavetile_no_such_function")
    obj = engine.optimize_and_emit(missing, "missing").obj
    with pytest.raises(engine.LoadError, match="wavetile_no_such_function"):
        engine.load(obj)


def test_kernels_with_the_same_entry_name_stay_separate():
    kernels = [engine.load(engine.optimize_and_emit(const_ir(v), f"k{v}").obj) for v in (11, 22, 33)]
    assert [k(0) for k in kernels] == [11, 22, 33]
    del kernels[1]
    assert [k(0) for k in kernels] == [11, 33]


def test_compile_and_load_from_several_threads():
    results: dict[int, int] = {}
    errors: list[BaseException] = []

    def work(i: int) -> None:
        try:
            kernel = engine.load(engine.optimize_and_emit(const_ir(i), f"t{i}").obj)
            results[i] = kernel(0)
        except BaseException as exc:  # reported by the main thread
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert results == {i: i for i in range(8)}


def test_grid_module_runs_on_two_threads():
    import numpy as np

    kernel = engine.load(engine.optimize_and_emit(grid_module(), "grid").obj)
    programs = 64
    x = np.linspace(-3, 3, programs * 64, dtype=np.float32)
    y = np.zeros_like(x)
    args = (ctypes.c_int64 * 3)(x.ctypes.data, y.ctypes.data, x.size)
    counter = ctypes.c_int64(0)
    err = (ctypes.c_int64 * abi.ERROR_SLOTS)()
    ctx = (ctypes.c_int64 * abi.CONTEXT_SLOTS)()
    ctx[abi.ARGS] = ctypes.addressof(args)
    ctx[abi.GRID_X], ctx[abi.GRID_Y], ctx[abi.GRID_Z] = programs, 1, 1
    ctx[abi.NEXT_PID] = ctypes.addressof(counter)
    ctx[abi.CHUNK] = 3
    ctx[abi.ERROR] = ctypes.addressof(err)
    codes = []
    threads = [threading.Thread(target=lambda: codes.append(kernel(ctypes.addressof(ctx)))) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert codes == [0, 0]
    expect = x.copy()
    for _ in range(STAGES):
        m = expect * np.float32(1.5)
        expect = np.maximum(np.where(m > 0, m, 0) + expect, x)
    np.testing.assert_allclose(y, expect, rtol=1e-5)

    args[2] = x.size - 1  # the last program now overruns: it must report, not write
    counter.value = 0
    assert kernel(ctypes.addressof(ctx)) == abi.OUT_OF_BOUNDS
    assert err[abi.ERR_CODE] == abi.OUT_OF_BOUNDS


def test_timing_of_compile_and_load(capsys):
    ir = grid_module()
    engine.optimize_and_emit(ir, "warmup")
    compile_times = []
    for _ in range(3):
        start = time.perf_counter()
        compiled = engine.optimize_and_emit(ir, "grid")
        compile_times.append(time.perf_counter() - start)
    load_times = []
    for _ in range(20):
        start = time.perf_counter()
        engine.load(compiled.obj)
        load_times.append(time.perf_counter() - start)
    compile_s, load_s = min(compile_times), statistics.median(load_times)
    with capsys.disabled():
        print(
            f"\n[engine] {len(ir.splitlines())}-line module: optimize+emit {compile_s * 1e3:.1f} ms, "
            f"object {len(compiled.obj)} bytes; load from bytes median {load_s * 1e3:.2f} ms "
            f"(max {max(load_times) * 1e3:.2f} ms)"
        )
    assert compile_s < 0.5  # target 0.2 s; slack for a loaded machine
    assert load_s < 0.02


def test_target_key_describes_the_host():
    import llvmlite.binding as llvm

    key = engine.target_key()
    assert key == engine.target_key()
    assert llvm.get_host_cpu_name() in key and llvm.get_process_triple() in key
    assert "llvm=" in key and "llvmlite=" in key
