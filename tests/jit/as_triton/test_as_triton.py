"""`python -m jit.as_triton`: Triton programs and Triton-style pytest files run unmodified on wavetile.

Every program runs in a subprocess (the alias changes the importing process for good)."""

import importlib.util
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
HAS_TORCH = importlib.util.find_spec("torch") is not None


def run_as_triton(tmp_path: Path, source: str, *args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    script = tmp_path / "program.py"
    script.write_text(textwrap.dedent(source))
    full_env = {**os.environ, "PYTHONPATH": str(ROOT), **(env or {})}
    return subprocess.run([sys.executable, "-m", "jit.as_triton", *args, str(script)], cwd=tmp_path, env=full_env,
                          capture_output=True, text=True, timeout=300)


NUMPY_PROGRAM = """
    import numpy as np
    import triton
    import triton.language as tl
    from triton.language.extra import libdevice

    @triton.autotune(configs=[triton.Config({"BLOCK": 64}), triton.Config({"BLOCK": 128}, num_warps=2)], key=["n"])
    @triton.jit
    def scaled_tanh(x_ptr, out_ptr, n, scale, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        mask = offs < n
        x = tl.load(x_ptr + offs, mask=mask)
        tl.store(out_ptr + offs, libdevice.tanh(x * scale), mask=mask)

    n = 1000
    x = np.random.default_rng(0).standard_normal(n).astype(np.float32)
    out = np.zeros_like(x)
    scaled_tanh[lambda meta: (triton.cdiv(n, meta["BLOCK"]),)](x, out, n, 0.5)
    np.testing.assert_allclose(out, np.tanh(x * 0.5), rtol=1e-5, atol=1e-6)
    assert issubclass(triton.CompilationError, triton.TritonError)
    assert triton.runtime.driver.active.get_current_target().backend == "cuda"
    print("ok", triton.__name__, tl.__name__)
"""


def test_numpy_program_runs_with_triton_imports(tmp_path):
    result = run_as_triton(tmp_path, NUMPY_PROGRAM)
    assert result.returncode == 0, result.stderr
    assert "ok jit.as_triton.api dsl" in result.stdout  # `triton` is wavetile's module, not a copy


def test_names_without_meaning_import_and_fail_at_use(tmp_path):
    result = run_as_triton(tmp_path, """
        import triton
        from triton.compiler import ASTSource
        from triton import knobs
        print("imported")
        try:
            ASTSource(fn=None, signature={})
        except NotImplementedError as e:
            print("refused:", e)
        knobs.cache.dir = "/tmp/elsewhere"
    """)
    assert "imported" in result.stdout
    assert "refused: triton.compiler.ASTSource is not available under jit.as_triton" in result.stdout
    assert result.returncode != 0 and "NotImplementedError" not in result.stdout
    assert "triton.knobs.cache is not available under jit.as_triton" in result.stderr


def test_usage_without_a_program(tmp_path):
    result = subprocess.run([sys.executable, "-m", "jit.as_triton"], env={**os.environ, "PYTHONPATH": str(ROOT)},
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 2 and "usage" in result.stderr


TORCH_PROGRAM = """
    import torch
    import triton
    import triton.language as tl

    DEVICE = triton.runtime.driver.active.get_active_torch_device()

    @triton.jit
    def softmax_rows(x_ptr, out_ptr, n_cols, stride, BLOCK: tl.constexpr):
        row = tl.program_id(0)
        cols = tl.arange(0, BLOCK)
        x = tl.load(x_ptr + row * stride + cols, mask=cols < n_cols, other=-float("inf"))
        z = x - tl.max(x, axis=0)
        e = tl.exp(z)
        tl.store(out_ptr + row * stride + cols, e / tl.sum(e, axis=0), mask=cols < n_cols)

    x = torch.randn(37, 200, device="cuda")          # a CUDA device maps onto the CPU
    out = torch.empty_like(x)
    softmax_rows[(x.shape[0],)](x, out, x.shape[1], x.stride(0), BLOCK=triton.next_power_of_2(x.shape[1]))
    torch.cuda.synchronize()
    torch.testing.assert_close(out, torch.softmax(x, dim=1), rtol=1e-5, atol=1e-6)
    assert x.device.type == "cpu" and DEVICE.type == "cpu"
    print("ok", x.device)
"""


@pytest.mark.skipif(not HAS_TORCH, reason="torch (CPU) is a test-only extra")
def test_torch_program_with_cuda_devices_runs_on_the_cpu(tmp_path):
    result = run_as_triton(tmp_path, TORCH_PROGRAM)
    assert result.returncode == 0, result.stderr
    assert "ok cpu" in result.stdout


@pytest.mark.skipif(not HAS_TORCH, reason="torch (CPU) is a test-only extra")
def test_cuda_mapping_can_be_switched_off(tmp_path):
    result = run_as_triton(tmp_path, "import torch\nprint(torch.zeros(1, device='cuda').device)\n",
                           env={"WAVETILE_TRITON_CUDA": "keep"})
    assert result.returncode != 0  # CPU-only torch: a CUDA tensor cannot be made


PERSISTENT_PROGRAM = """
    import torch
    import triton
    import triton.language as tl
    from triton.runtime import driver

    @triton.jit
    def row_sums(x_ptr, out_ptr, n_rows, n_cols, BLOCK: tl.constexpr, num_stages: tl.constexpr):
        for row in tl.range(tl.program_id(0), n_rows, tl.num_programs(0), num_stages=num_stages):
            cols = tl.arange(0, BLOCK)
            x = tl.load(x_ptr + row * n_cols + cols, mask=cols < n_cols, other=0.0)
            tl.store(out_ptr + row, tl.sum(x, axis=0))

    @triton.testing.perf_report(triton.testing.Benchmark(x_names=["N"], x_vals=[2**20], line_arg="p", line_vals=[1],
                                                         line_names=["t"], plot_name="sweep", args={}))
    def bench(N, p):
        raise AssertionError("GPU-sized sweeps are skipped")

    x = torch.randn(301, 97, device="cuda")
    out = torch.empty(301, device="cuda")
    props = driver.active.utils.get_device_properties(x.device.index)
    kernel = row_sums.warmup(x, out, 301, 97, BLOCK=128, num_stages=2, num_warps=4, grid=(1,))
    kernel._init_handles()
    occupancy = props["max_num_regs"] // (kernel.n_regs * props["warpSize"] * 4)
    occupancy = min(occupancy, props["max_shared_mem"] // max(1, kernel.metadata.shared))
    programs = min(props["multiprocessor_count"] * max(1, occupancy), 301)
    kernel[(programs, 1, 1)](x, out, 301, 97, 128, 2)
    torch.testing.assert_close(out, x.sum(dim=1), rtol=1e-5, atol=1e-4)
    assert kernel.metadata.shared > 0 and kernel.n_regs > 0
    bench.run(print_data=True)
    print("ok", programs)
"""


@pytest.mark.skipif(not HAS_TORCH, reason="torch (CPU) is a test-only extra")
def test_persistent_kernel_sized_from_device_properties(tmp_path):
    """Tutorial-02-style host code: warmup, register/shared estimates, a launch of the compiled kernel."""
    result = run_as_triton(tmp_path, PERSISTENT_PROGRAM)
    assert result.returncode == 0, result.stderr
    assert "ok" in result.stdout and "benchmark sweep skipped" in result.stderr


TRITON_STYLE_TESTS = """
    import numpy as np
    import pytest
    import torch
    import triton
    import triton.language as tl
    from triton._internal_testing import numpy_random, to_numpy, to_triton


    @pytest.mark.interpreter
    @pytest.mark.parametrize("dtype", ["int32", "uint32", "float16"])
    def test_copy(dtype, device):
        @triton.jit
        def copy(src, dst, N: tl.constexpr):
            offs = tl.arange(0, N)
            tl.store(dst + offs, tl.load(src + offs))

        x = numpy_random(64, dtype_str=dtype)
        src = to_triton(x, device=device)
        dst = to_triton(np.zeros_like(x), device=device)
        copy[(1,)](src, dst, N=64)
        np.testing.assert_array_equal(to_numpy(dst), x)
"""


@pytest.mark.skipif(not HAS_TORCH, reason="torch (CPU) is a test-only extra")
def test_pytest_runs_triton_style_tests(tmp_path):
    (tmp_path / "test_triton_style.py").write_text(textwrap.dedent(TRITON_STYLE_TESTS))
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    result = subprocess.run([sys.executable, "-m", "jit.as_triton", "-m", "pytest", "-q", "-p", "no:cacheprovider",
                             "test_triton_style.py"], cwd=tmp_path, env=env, capture_output=True, text=True,
                            timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "3 passed" in result.stdout


NEW_NAMES_PROGRAM = """
    import numpy as np
    import pytest
    import triton
    import triton.language as tl
    from triton._internal_testing import is_interpreter
    from triton.runtime.errors import InterpreterError

    @triton.jit
    def clamp_scalar(v, hi):
        if v > hi:
            return hi
        return v

    @tl.core._aggregate
    class Flags:
        ptr: tl.tensor
        count: tl.constexpr

        def __init__(self, ptr, count):
            self.ptr = ptr
            self.count = tl.constexpr(count)

        @triton.jit
        def wait_all(self):
            offs = tl.arange(0, self.count)
            return tl.atomic_poll(self.ptr + offs, 1, sem="acquire", timeout_ns=0)

    @triton.jit
    def kernel(x_ptr, flag_ptr, out_ptr, seen_ptr, N: tl.constexpr):
        offs = tl.arange(0, N)
        x = tl.atomic_load(x_ptr + offs, sem="relaxed")
        tl.atomic_store(out_ptr + offs, tl.map_elementwise(clamp_scalar, x, 3.0), sem="release")
        tl.store(seen_ptr + offs, Flags(flag_ptr, N).wait_all())

    @triton.jit
    def bad_descriptor(ptr):
        desc = tl.make_tensor_descriptor(ptr, [16, 16], [16, 1], [4, 2])
        desc.load([0, 0])

    x = np.random.default_rng(3).standard_normal(8).astype(np.float32) * 4
    flags = np.array([1, 0, 1, 1, 0, 1, 1, 1], np.int32)
    out, seen = np.zeros(8, np.float32), np.zeros(8, np.bool_)
    kernel[(1,)](x, flags, out, seen, N=8)
    np.testing.assert_array_equal(out, np.minimum(x, 3.0))
    np.testing.assert_array_equal(seen, flags == 1)
    errc = triton.CompilationError if not is_interpreter() else InterpreterError
    with pytest.raises(errc) as e:
        bad_descriptor[(1,)](np.zeros((16, 16), np.int32))
    assert "Descriptor block shape must have at least 16 bytes" in str(e.value.__cause__)
    assert isinstance(e.value, triton.CompilationError)
    print("ok", is_interpreter())
"""


@pytest.mark.parametrize("interpret", ["0", "1"])
def test_new_triton_names_and_interpreter_error_classes(tmp_path, interpret):
    """atomic_load/store/poll, map_elementwise and aggregates under Triton's names; under TRITON_INTERPRET=1 a
    failed launch is also an InterpreterError, as Triton's tests expect there."""
    result = run_as_triton(tmp_path, NEW_NAMES_PROGRAM, env={"TRITON_INTERPRET": interpret})
    assert result.returncode == 0, result.stderr
    assert f"ok {interpret == '1'}" in result.stdout


STANDARD_AND_TUPLE_PROGRAM = """
    import numpy as np
    import triton
    import triton.language as tl
    import triton.language.standard as standard
    from triton.language.standard import _log2

    import dsl

    @triton.jit
    def row_max_and_sum(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
        offs = tl.arange(0, BLOCK)
        x = tl.load(x_ptr + tl.program_id(0) * n + offs, mask=offs < n, other=0.0)
        pair = tl.tuple([standard.max(x, 0), tl.standard.sum(x, 0)])
        tl.static_assert(_log2(BLOCK) == 6 and isinstance(pair, tl.tuple))
        for i in tl.static_range(len(pair)):
            tl.store(out_ptr + tl.program_id(0) * 2 + i, pair[i])

    x = np.random.default_rng(5).standard_normal((3, 50)).astype(np.float32)
    out = np.zeros((3, 2), np.float32)
    row_max_and_sum[(3,)](x, out, 50, BLOCK=64)
    np.testing.assert_allclose(out, np.stack([x.max(1), x.sum(1)], 1), rtol=1e-5, atol=1e-5)
    assert standard is dsl.standard and tl.tuple is dsl.tuple
    print("ok")
"""


@pytest.mark.parametrize("interpret", ["0", "1"])
def test_standard_module_and_tuple_under_triton_names(tmp_path, interpret):
    """`triton.language.standard` is dsl.standard (its names, and Triton's `_log2`), `tl.tuple` dsl's tuple."""
    result = run_as_triton(tmp_path, STANDARD_AND_TUPLE_PROGRAM, env={"TRITON_INTERPRET": interpret})
    assert result.returncode == 0, result.stderr
    assert "ok" in result.stdout
