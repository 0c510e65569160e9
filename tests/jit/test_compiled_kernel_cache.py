"""Compiled kernels are cached in memory and on disk; a warm process runs no LLVM; damage is recovered."""

import os
import pathlib
import subprocess
import sys
import textwrap

import numpy as np

KERNEL = textwrap.dedent('''
    import sys, numpy as np
    import dsl as tl
    from jit import jit, engine

    @jit
    def scale_kernel(x_ptr, out_ptr, n, factor, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        m = offs < n
        tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=m) * factor, mask=m)

    x = np.random.default_rng(20261201).standard_normal(1000).astype(np.float32)
    out = np.zeros_like(x)
    scale_kernel[(8,)](x, out, 1000, 2.5, BLOCK=128)
    assert np.array_equal(out, x * np.float32(2.5))
    print(engine.stats.optimize_calls)
''')


def run(tmp_path, cache):
    script = tmp_path / "scale.py"
    script.write_text(KERNEL)
    env = {**os.environ, "WAVETILE_CACHE_DIR": str(cache)}
    result = subprocess.run([sys.executable, str(script)], env=env, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    return int(result.stdout.split()[-1])


def test_second_process_loads_from_disk(tmp_path):
    cache = tmp_path / "cache"
    assert run(tmp_path, cache) == 1
    assert run(tmp_path, cache) == 0


def test_corrupt_entry_is_rebuilt(tmp_path):
    cache = tmp_path / "cache"
    assert run(tmp_path, cache) == 1
    for blob in pathlib.Path(cache).rglob("kernel.o"):
        blob.write_bytes(b"\x7fELF garbage" + os.urandom(64))
    assert run(tmp_path, cache) == 1
    assert run(tmp_path, cache) == 0


def test_stages_are_kept():
    import dsl as tl
    from jit import jit

    @jit
    def tiny(x_ptr, BLOCK: tl.constexpr):
        tl.store(x_ptr + tl.arange(0, BLOCK), tl.arange(0, BLOCK).to(tl.float32))

    x = np.zeros(16, np.float32)
    kernel = tiny.warmup(x, BLOCK=16)
    assert "tile.store" in kernel.asm["ir"]
    assert "wavetile_grid" in kernel.asm["llir"]
    assert kernel.asm["asm"].strip()
    np.testing.assert_array_equal(x, 0)  # warmup does not run
    tiny[(1,)](x, BLOCK=16)
    np.testing.assert_array_equal(x, np.arange(16))


def test_editing_the_compiler_changes_the_cache_key():
    """Builds by an older compiler are not reused: the key covers the compiler's own source files."""
    from jit import compiler

    source = pathlib.Path(compiler.__file__).parent / "codegen" / "checks.py"
    def fingerprint() -> str:
        return compiler.source_fingerprint.__wrapped__(compiler._COMPILER_PACKAGES)

    before = fingerprint()
    stat = source.stat()
    try:
        os.utime(source, ns=(stat.st_atime_ns, stat.st_mtime_ns + 10**9))
        assert fingerprint() != before
    finally:
        os.utime(source, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    assert fingerprint() == before
