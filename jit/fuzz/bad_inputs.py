"""Bad-input probe: kernels launched the ways a new user gets wrong, each in its own Python process.

Every case is a short script (run after PRELUDE) that either must fail with a clear error (one that names
the kernel and the argument or line: `mentions`) or must run and check its own result. A process that
dies of a signal is a crash, one that outlives its timeout a hang, a bad input that runs to the end
without complaint (or a result check that fails) is silently wrong. `scripts/probe_bad_inputs.py` prints
the table; tests/jit/fuzz/test_bad_inputs.py runs every case.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
OUTCOMES = ("clear error", "correct", "unclear error", "unexpected error", "silently wrong", "crash", "hang")
FAILURES = ("unclear error", "unexpected error", "silently wrong", "crash", "hang")


@dataclass(frozen=True)
class Case:
    """One probe. expect: "error" (must raise `raises` naming every word of `mentions`) or "ok"."""

    name: str
    item: str  # the issue item it covers
    expect: str
    code: str
    mentions: tuple[str, ...] = ()
    raises: tuple[str, ...] = ()  # accepted exception class names (any when empty)
    env: dict = field(default_factory=dict)
    timeout: float = 60.0


@dataclass
class Result:
    case: Case
    outcome: str
    observed: str
    seconds: float


PRELUDE = '''
import os, sys, signal, threading, time, warnings
import numpy as np
import dsl as tl
from jit import jit, cdiv

def _probe_report(kind, value, tb):
    import traceback
    sys.stdout.write("@@RAISED " + kind.__name__ + "\\n" + str(value) + "\\n@@WHERE "
                     + " | ".join(traceback.format_tb(tb)[-2:]).replace("\\n", " ") + "\\n")
    sys.stdout.flush()  # then the interpreter exits as usual: a launch left running would hang it here

sys.excepthook = _probe_report

@jit
def copy_kernel(src_ptr, dst_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(dst_ptr + offs, tl.load(src_ptr + offs, mask=mask), mask=mask)

@jit
def add_one_atomic(dst_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.atomic_add(dst_ptr + offs, 1.0, mask=offs < n)

@jit
def spin_kernel(flag_ptr, out_ptr):
    i = 0
    while tl.load(flag_ptr) >= 0:
        i += 1
    tl.store(out_ptr + tl.program_id(0), i)

def rand(n, dtype=np.float32, seed=0):
    return (np.random.default_rng(seed).standard_normal(n) + 2.0).astype(dtype)

def interrupt_after(seconds):
    # a shell's background job starts with SIGINT ignored, and Python then installs no KeyboardInterrupt handler
    signal.signal(signal.SIGINT, signal.default_int_handler)
    threading.Timer(seconds, lambda: os.kill(os.getpid(), signal.SIGINT)).start()
'''

_READONLY = '''
path = os.path.join(os.environ["PROBE_TMP"], "ro.bin")
rand(100).tofile(path)
dst = np.memmap(path, dtype=np.float32, mode="r")
copy_kernel[(4,)](rand(100), dst, 100, BLOCK=32{options})
'''

_CACHE_SWAP = '''
import subprocess
script = os.path.join(os.environ["PROBE_TMP"], "child.py")
with open(script, "w") as f:
    f.write("""
import numpy as np, dsl as tl
from jit import jit
@jit
def twice(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(x_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) * 2, mask=offs < n)
x = np.arange(10, dtype=np.float32)
twice[(1,)](x, 10, BLOCK=16)
assert (x == 2 * np.arange(10)).all(), x
""")
env = dict(os.environ, WAVETILE_CACHE_DIR=os.path.join(os.environ["PROBE_TMP"], "cache"))
subprocess.run([sys.executable, script], env=env, check=True, timeout=60)
blobs = [os.path.join(d, n) for d, _, names in os.walk(env["WAVETILE_CACHE_DIR"]) for n in names
         if n.endswith(".o") or n == "kernel.ir"]
assert blobs, "no cache entry was written"
for blob in blobs:
    os.remove(blob)
    {replace}
subprocess.run([sys.executable, script], env=env, check=True, timeout=30)
'''

_HELPER_EDIT = '''
import subprocess
tmp = os.environ["PROBE_TMP"]
def write(name, text):
    with open(os.path.join(tmp, name), "w") as f:
        f.write(text)
write("helpers.py", "import dsl as tl\\nfrom jit import jit\\n@jit\\ndef scale(x):\\n    return x * 2\\n")
write("main.py", """
import sys, numpy as np, dsl as tl
from jit import jit
import helpers
@jit
def k(x_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(x_ptr + offs, helpers.scale(tl.load(x_ptr + offs)))
x = np.ones(16, np.float32)
k[(1,)](x, BLOCK=16)
assert x[0] == float(sys.argv[1]), (x[0], sys.argv[1])
""")
env = dict(os.environ, WAVETILE_CACHE_DIR=os.path.join(tmp, "cache"),
           PYTHONPATH=tmp + os.pathsep + os.environ["PYTHONPATH"])
subprocess.run([sys.executable, os.path.join(tmp, "main.py"), "2"], env=env, check=True, timeout=60)
write("helpers.py", "import dsl as tl\\nfrom jit import jit\\n@jit\\ndef scale(x):\\n    return x * 3\\n")
r = subprocess.run([sys.executable, os.path.join(tmp, "main.py"), "3"], env=env, timeout=60, capture_output=True,
                   text=True)
assert r.returncode == 0, r.stdout + r.stderr
'''

_GRID = "copy_kernel[{grid}](rand(8), np.zeros(8, np.float32), 8, BLOCK=8)\n"
_TORCH_VIEW = '''
import torch
base = torch.zeros(1000)
view = base[100:110]
src = torch.ones(32)
copy_kernel[(1,)](src, view, 32, BLOCK=32)
'''
_TUNE_MODULE = '''
import subprocess
tmp = os.environ["PROBE_TMP"]
with open(os.path.join(tmp, "tk.py"), "w") as f:
    f.write("""
import numpy as np, dsl as tl
from jit import jit, Config
from jit.tune import TuneProblem
@jit
def scale(x_ptr, n, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    offs = tl.program_id(0) * BLOCK_N + tl.arange(0, BLOCK_N)
    tl.store(x_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) * 2, mask=offs < n)
def problem(n=1000):
    return TuneProblem(scale, args=(np.ones(n, np.float32), n),
                       grid=lambda m: ((n + m["BLOCK_N"] - 1) // m["BLOCK_N"],),
                       outputs=["x_ptr"], configs=[Config(dict(BLOCK_N=128, BLOCK_K=1))])
""")
r = subprocess.run([sys.executable, "-m", "jit.tune", *"{args}".split(), "--no-progress"], cwd=tmp,
                   capture_output=True, text=True, timeout=60,
                   env=dict(os.environ, PYTHONPATH=tmp + os.pathsep + os.environ["PYTHONPATH"]))
assert r.returncode != 0, "wavetile-tune accepted it: " + r.stdout
assert "Traceback" not in r.stderr, r.stderr
raise ValueError("wavetile-tune said: " + r.stderr.strip().splitlines()[-1])
'''


def _tune_case(name: str, args: str, mentions: tuple[str, ...]) -> Case:
    return Case(name, "unclear errors", "error", _TUNE_MODULE.replace("{args}", args), mentions, ("ValueError",))


CASES: tuple[Case, ...] = (
    # 1. stores into read-only memory
    Case("readonly_memmap_store", "1", "error", _READONLY.format(options=""), ("copy_kernel", "dst_ptr", "read-only")),
    Case("readonly_memmap_store_interpret", "1", "error", _READONLY.format(options=", interpret=True"),
         ("copy_kernel", "dst_ptr", "read-only")),
    Case("readonly_memmap_store_sanitize", "1", "error", _READONLY.format(options=""),
         ("copy_kernel", "dst_ptr", "read-only"), env={"WAVETILE_SANITIZE": "all"}),
    Case("readonly_memmap_store_eager", "1", "error", _READONLY.format(options=", interpret='eager'"),
         ("copy_kernel", "dst_ptr", "read-only")),
    Case("readonly_flag_store", "1", "error", '''
dst = np.zeros(64, np.float32); dst.flags.writeable = False
try:
    copy_kernel[(2,)](rand(64), dst, 64, BLOCK=32)
finally:
    assert not dst.any(), "the read-only array was written"
''', ("copy_kernel", "dst_ptr", "read-only")),
    Case("readonly_frombuffer_store", "1", "error", '''
data = bytes(256)
dst = np.frombuffer(data, dtype=np.float32)
try:
    copy_kernel[(2,)](rand(64), dst, 64, BLOCK=32)
finally:
    assert data == bytes(256), "the bytes object was mutated"
''', ("copy_kernel", "dst_ptr", "read-only")),
    Case("readonly_atomic", "1", "error", '''
dst = np.zeros(64, np.float32); dst.flags.writeable = False
add_one_atomic[(2,)](dst, 64, BLOCK=32)
''', ("add_one_atomic", "dst_ptr", "read-only")),
    Case("readonly_load_is_fine", "1", "ok", '''
path = os.path.join(os.environ["PROBE_TMP"], "ro.bin")
src = rand(100); src.tofile(path)
ro = np.memmap(path, dtype=np.float32, mode="r")
out = np.zeros(100, np.float32)
copy_kernel[(4,)](ro, out, 100, BLOCK=32)
copy_kernel[(4,)](ro, out, 100, BLOCK=32)
np.testing.assert_array_equal(out, src)
'''),
    # 2. tiles larger than a native stack
    Case("big_block_vector_add", "2", "ok", '''
n = 2**20 + 5
x, out = rand(n), np.zeros(n, np.float32)
copy_kernel[(cdiv(n, 2**20),)](x, out, n, BLOCK=2**20)
np.testing.assert_array_equal(out, x)
''', timeout=120),
    Case("big_dot", "2", "ok", '''
@jit
def outer_dot(a_ptr, b_ptr, c_ptr, M: tl.constexpr, N: tl.constexpr, K: tl.constexpr):
    m, n, k = tl.arange(0, M), tl.arange(0, N), tl.arange(0, K)
    a = tl.load(a_ptr + m[:, None] * K + k[None, :])
    b = tl.load(b_ptr + k[:, None] * N + n[None, :])
    tl.store(c_ptr + m[:, None] * N + n[None, :], tl.dot(a, b, input_precision="ieee"))
M = N = 1024; K = 16
a, b = rand(M * K).reshape(M, K), rand(K * N, seed=1).reshape(K, N)
c = np.zeros((M, N), np.float32)
outer_dot[(1,)](a, b, c, M=M, N=N, K=K)
np.testing.assert_allclose(c, a.astype(np.float64) @ b, rtol=1e-5)
''', timeout=120),
    Case("autotune_skips_bad_config", "2", "ok", '''
os.environ["WAVETILE_CACHE_DIR"] = os.path.join(os.environ["PROBE_TMP"], "cache")  # tune now, not from disk
from jit import autotune, Config
@autotune(configs=[Config({"BLOCK": 2**20}), Config({"BLOCK": 48}), Config({"BLOCK": 64})], key=["n"])
@jit
def tuned_copy(src_ptr, dst_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(dst_ptr + offs, tl.load(src_ptr + offs, mask=offs < n), mask=offs < n)
n = 3000
x, out = rand(n), np.zeros(n, np.float32)
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    tuned_copy[lambda m: (cdiv(n, m["BLOCK"]),)](x, out, n)
np.testing.assert_array_equal(out, x)
assert any("48" in str(w.message) for w in caught), [str(w.message) for w in caught]
''', timeout=120),
    # 3. Ctrl-C
    Case("ctrl_c_endless_loop", "3", "error", '''
interrupt_after(1.5)
spin_kernel[(1,)](np.zeros(1, np.int32), np.zeros(1, np.int32))
''', (), ("KeyboardInterrupt",), env={"WAVETILE_NUM_THREADS": "1"}, timeout=20),
    Case("ctrl_c_grid4", "3", "error", '''
interrupt_after(1.5)
spin_kernel[(4,)](np.zeros(1, np.int32), np.zeros(4, np.int32))
''', (), ("KeyboardInterrupt",), env={"WAVETILE_NUM_THREADS": "4"}, timeout=20),
    Case("ctrl_c_then_free_output", "3", "error", '''
import gc
out = np.zeros(4, np.int32)
interrupt_after(1.0)
try:
    spin_kernel[(64,)](np.zeros(1, np.int32), out)
except KeyboardInterrupt:
    del out
    gc.collect()
    junk = [np.full(1 << 16, 7, np.int32) for _ in range(200)]
    time.sleep(0.5)
    assert all((j == 7).all() for j in junk), "a cancelled program wrote after the launch returned"
    raise
''', (), ("KeyboardInterrupt",), env={"WAVETILE_NUM_THREADS": "4"}, timeout=20),
    # 4. the disk cache key
    Case("closure_constexpr_key", "4", "ok", '''
def make(k):
    K = tl.constexpr(k)
    @jit
    def fill(out_ptr, BLOCK: tl.constexpr):
        tl.store(out_ptr + tl.arange(0, BLOCK), tl.full((BLOCK,), K, tl.int32))
    return fill
for k in (2, 3, 5):
    out = np.zeros(16, np.int32)
    make(k)[(1,)](out, BLOCK=16)
    assert (out == k).all(), (k, out)
'''),
    Case("global_value_key", "4", "ok", '''
import subprocess
tmp = os.environ["PROBE_TMP"]
for scale in (2, 7):
    with open(os.path.join(tmp, "g.py"), "w") as f:
        f.write(f"""
import numpy as np, dsl as tl
from jit import jit
SCALE = tl.constexpr({scale})
@jit
def fill(out_ptr, BLOCK: tl.constexpr):
    tl.store(out_ptr + tl.arange(0, BLOCK), tl.full((BLOCK,), SCALE, tl.int32))
out = np.zeros(16, np.int32)
fill[(1,)](out, BLOCK=16)
assert (out == {scale}).all(), out
""")
    env = dict(os.environ, WAVETILE_CACHE_DIR=os.path.join(tmp, "cache"))
    r = subprocess.run([sys.executable, os.path.join(tmp, "g.py")], env=env, capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
'''),
    Case("module_attribute_helper_edit", "4", "ok", _HELPER_EDIT, timeout=120),
    # 5. grids
    Case("grid_2p21_cubed", "5", "error", _GRID.format(grid="(2**21,) * 3"), ("copy_kernel", "2097152")),
    Case("grid_2p32_square", "5", "error", _GRID.format(grid="(2**32, 2**32)"), ("copy_kernel", "4294967296")),
    Case("grid_2p63", "5", "error", _GRID.format(grid="(2**63,)"), ("copy_kernel", "9223372036854775808")),
    Case("grid_2p32_plus_1", "5", "error", _GRID.format(grid="(2**32 + 1,)"), ("copy_kernel", "4294967297")),
    Case("grid_float", "5", "error", _GRID.format(grid="(1.9,)"), ("copy_kernel", "1.9")),
    Case("grid_string", "5", "error", _GRID.format(grid='("2",)'), ("copy_kernel", "'2'")),
    Case("grid_none", "5", "error", _GRID.format(grid="None"), ("copy_kernel", "None")),
    Case("grid_nan", "5", "error", _GRID.format(grid="(float('nan'),)"), ("copy_kernel", "nan")),
    Case("grid_negative", "5", "error", _GRID.format(grid="(-1,)"), ("copy_kernel", "-1")),
    Case("grid_numpy_ints_ok", "5", "ok", '''
x, out = rand(100), np.zeros(100, np.float32)
copy_kernel[(np.int64(4), np.int32(1))](x, out, 100, BLOCK=32)
np.testing.assert_array_equal(out, x)
'''),
    # 6. 64-bit offsets
    Case("constexpr_stride_2p32", "6", "error", '''
@jit
def strided(x_ptr, out_ptr, STRIDE: tl.constexpr):
    tl.store(out_ptr + tl.arange(0, 4), tl.load(x_ptr + STRIDE + tl.arange(0, 4)))
strided[(1,)](rand(8), np.zeros(4, np.float32), STRIDE=2**32)
''', ("strided", "x_ptr", "out-of-bounds")),
    Case("i64_offset_2p62", "6", "error", '''
@jit
def offset(x_ptr, out_ptr, off):
    tl.store(out_ptr + tl.arange(0, 4), tl.load(x_ptr + off + tl.arange(0, 4)))
offset[(1,)](rand(8), np.zeros(4, np.float32), 2**62)
''', ("offset", "x_ptr", "out-of-bounds")),
    Case("i64_offset_2p62_interpreted", "6", "error", '''
@jit
def offset(x_ptr, out_ptr, off):
    tl.store(out_ptr + tl.arange(0, 4), tl.load(x_ptr + off + tl.arange(0, 4)))
offset[(1,)](rand(8), np.zeros(4, np.float32), 2**62, interpret=True)
''', ("offset", "x_ptr", "out-of-bounds")),
    Case("i64_tile_offsets_wrap", "6", "error", '''
@jit
def gather(x_ptr, idx_ptr, out_ptr):
    i = tl.load(idx_ptr + tl.arange(0, 4))
    tl.store(out_ptr + tl.arange(0, 4), tl.load(x_ptr + i))
idx = np.array([0, 1, 2**62, 3], np.int64)
gather[(1,)](rand(8), idx, np.zeros(4, np.float32))
''', ("gather", "x_ptr", "out-of-bounds")),
    Case("i32_square_wraps_overflow_sanitizer", "6", "error", '''
@jit
def square(x_ptr, out_ptr, k):
    tl.store(out_ptr, tl.load(x_ptr + k * k))
square[(1,)](rand(8), np.zeros(1, np.float32), 65536)
''', ("square", "overflow"), env={"WAVETILE_SANITIZE": "overflow"}),
    # 7. torch views
    Case("torch_view_overrun", "7", "error", _TORCH_VIEW, ("copy_kernel", "dst_ptr", "out-of-bounds")),
    Case("torch_view_in_bounds", "7", "ok", '''
import torch
base = torch.zeros(1000)
view = base[100:110]
copy_kernel[(1,)](torch.ones(10), view, 10, BLOCK=32)
assert float(base.sum()) == 10.0 and float(view.sum()) == 10.0
'''),
    # 8. byte order
    Case("big_endian_array", "8", "error", '''
copy_kernel[(1,)](rand(8).astype(">f4"), np.zeros(8, np.float32), 8, BLOCK=8)
''', ("copy_kernel", "src_ptr", "byte order")),
    # 9. signed zeros and NaN payloads in folding / CSE
    Case("negative_zero_constant", "9", "ok", '''
@jit
def zeros(x_ptr, a_ptr, b_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    tl.store(a_ptr + offs, x * 0.0)
    tl.store(b_ptr + offs, x * -0.0)
x = rand(16)
a, b = np.full(16, 5, np.float32), np.full(16, 5, np.float32)
zeros[(1,)](x, a, b, BLOCK=16)
assert (np.signbit(a) == np.signbit(x * np.float32(0.0))).all(), a
assert (np.signbit(b) == np.signbit(x * np.float32(-0.0))).all(), b
'''),
    Case("negative_zero_scalar_fold", "9", "ok", '''
@jit
def fold(out_ptr):
    z = 0.0
    tl.store(out_ptr, z * -1.0)
    tl.store(out_ptr + 1, -0.0 + 0.0 * 0.0)
out = np.full(2, 5, np.float32)
fold[(1,)](out)
assert np.signbit(out[0]) and not np.signbit(out[1]), out
'''),
    # 10. sanitizer and eager-mode reports
    Case("uninit_after_host_write", "10", "ok", '''
import simulator
src = simulator.empty(64)
src[:] = rand(64)
out = np.zeros(64, np.float32)
copy_kernel[(2,)](src, out, 64, BLOCK=32)
np.testing.assert_array_equal(out, src)
''', env={"WAVETILE_SANITIZE": "uninit"}),
    Case("uninit_unwritten_reported", "10", "error", '''
import simulator
src = simulator.empty(64)
src[:32] = 1.0
copy_kernel[(2,)](src, np.zeros(64, np.float32), 64, BLOCK=32)
''', ("copy_kernel", "src_ptr"), env={"WAVETILE_SANITIZE": "uninit"}),
    Case("eager_oob_store_names_buffer", "10", "error", '''
copy_kernel[(1,)](rand(64), np.zeros(40, np.float32), 64, BLOCK=64, interpret="eager")
''', ("copy_kernel", "dst_ptr", "40")),
    Case("eager_oob_store_into_neighbour", "10", "error", '''
base = np.zeros(128, np.float32)
dst, src = base[:40], base[40:104]
copy_kernel[(1,)](src, dst, 64, BLOCK=64, interpret="eager")
''', ("copy_kernel", "dst_ptr", "40")),
    # 11. damaged cache entries
    Case("cache_blob_fifo", "11", "ok", _CACHE_SWAP.format(replace="os.mkfifo(blob)"), timeout=120),
    Case("cache_blob_dev_zero", "11", "ok", _CACHE_SWAP.format(replace='os.symlink("/dev/zero", blob)'),
         timeout=120),
    # 12. threads on a fresh cache
    Case("threads_fresh_cache", "12", "ok", '''
from concurrent.futures import ThreadPoolExecutor
os.environ["WAVETILE_CACHE_DIR"] = os.path.join(os.environ["PROBE_TMP"], "fresh")
def work(t):
    for i in range(40):
        x = rand(64 + i, seed=t * 100 + i)
        out = np.zeros_like(x)
        copy_kernel[(cdiv(x.size, 32),)](x, out, x.size, BLOCK=32 if i % 2 else 64)
        np.testing.assert_array_equal(out, x)
with ThreadPoolExecutor(4) as pool:
    list(pool.map(work, range(4)))
''', timeout=120),
    # unclear errors
    Case("num_warps_zero", "unclear errors", "error", '''
copy_kernel[(1,)](rand(8), np.zeros(8, np.float32), 8, BLOCK=8, num_warps=0)
''', ("copy_kernel", "num_warps")),
    Case("heuristic_raises", "unclear errors", "error", '''
from jit import heuristics
@heuristics({"BLOCK": lambda meta: meta["missing"]})
@jit
def h(src_ptr, dst_ptr, n, BLOCK: tl.constexpr):
    tl.store(dst_ptr + tl.arange(0, BLOCK), tl.load(src_ptr + tl.arange(0, BLOCK)))
h[(1,)](rand(8), np.zeros(8, np.float32), 8)
''', ("h", "BLOCK", "missing")),
    Case("bad_num_threads", "unclear errors", "error", _GRID.format(grid="(2,)"), ("WAVETILE_NUM_THREADS", "many"),
         env={"WAVETILE_NUM_THREADS": "many"}),
    Case("bad_schedule_seed", "unclear errors", "error", _GRID.format(grid="(2,)"), ("WAVETILE_SCHEDULE_SEED", "x1"),
         env={"WAVETILE_SCHEDULE_SEED": "x1"}),
    Case("bad_machine", "unclear errors", "error", _GRID.format(grid="(2,)"), ("WAVETILE_MACHINE", "mtt-s9999"),
         env={"WAVETILE_MACHINE": "mtt-s9999"}),
    Case("misaligned_array", "unclear errors", "error", '''
raw = np.zeros(8 * 4 + 1, np.uint8)
x = raw[1:].view(np.float32)
copy_kernel[(1,)](x, np.zeros(8, np.float32), 8, BLOCK=8)
''', ("copy_kernel", "src_ptr", "aligned")),
    Case("misaligned_view_after_plan", "unclear errors", "error", '''
raw = np.zeros(8 * 4 + 8, np.uint8)
copy_kernel[(1,)](raw[4:36].view(np.float32), np.zeros(8, np.float32), 8, BLOCK=8)  # aligned: makes a plan
copy_kernel[(1,)](raw[1:33].view(np.float32), np.zeros(8, np.float32), 8, BLOCK=8)
''', ("copy_kernel", "src_ptr", "aligned")),
    Case("pointer_loaded_from_memory", "unclear errors", "error", '''
@jit
def through(pp, out_ptr):
    p = tl.load(pp).to(tl.pointer_type(tl.float32), bitcast=True)
    tl.store(out_ptr, tl.load(p))
through[(1,)](np.zeros(1, np.int64), np.zeros(1, np.float32))
''', ("through", "0x0", "loaded from memory")),
    Case("torch_complex", "unclear errors", "error", '''
import torch
copy_kernel[(1,)](torch.zeros(8, dtype=torch.complex64), np.zeros(8, np.float32), 8, BLOCK=8)
''', ("copy_kernel", "src_ptr", "complex")),
    Case("torch_sparse", "unclear errors", "error", '''
import torch
copy_kernel[(1,)](torch.zeros(8).to_sparse(), np.zeros(8, np.float32), 8, BLOCK=8)
''', ("copy_kernel", "src_ptr", "sparse")),
    Case("recursion_caret", "unclear errors", "error", '''
@jit
def rec(x):
    y = x + 1
    return rec(y)
@jit
def top(out_ptr):
    tl.store(out_ptr, rec(1))
top[(1,)](np.zeros(1, np.int32))
''', ("rec", "return rec(y)", "calls itself")),
    _tune_case("tune_bad_module", "no_such_module:kernel", ("no_such_module",)),
    _tune_case("tune_bad_machine", "tk:problem --machine mtt-s9999", ("mtt-s9999",)),
    _tune_case("tune_bad_configs_file", "tk:problem --configs missing.json", ("missing.json",)),
    _tune_case("tune_bad_size", "tk:problem n=abc", ("n", "abc")),
    _tune_case("tune_partial_space", "tk:problem --space BLOCK_N=64,128", ("BLOCK_K",)),
    _tune_case("tune_negative_jobs", "tk:problem --jobs -3", ("--jobs", "-3")),
    _tune_case("tune_negative_cpu_runs", "tk:problem --cpu-runs -1 --objective cpu", ("--cpu-runs", "-1")),
    # sanitizer reports
    Case("race_histogram_names_lines", "sanitizers", "error", '''
@jit
def histogram(x_ptr, bins_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    bins = tl.load(x_ptr + offs, mask=offs < n, other=0)
    count = tl.load(bins_ptr + bins, mask=offs < n)
    tl.store(bins_ptr + bins, count + 1, mask=offs < n)
histogram[(1,)](np.arange(256, dtype=np.int32) % 4, np.zeros(4, np.int32), 256, BLOCK=256)
''', ("race", "histogram", "count = tl.load", "tl.store(bins_ptr"), env={"WAVETILE_SANITIZE": "race"}),
    Case("race_cross_warp_exchange", "sanitizers", "error", '''
@jit
def exchange(buf_ptr, out_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(buf_ptr + offs, offs)
    tl.store(out_ptr + offs, tl.load(buf_ptr + (BLOCK - 1 - offs)))
exchange[(1,)](np.zeros(512, np.int32), np.zeros(512, np.int32), BLOCK=512)
''', ("race", "exchange", "tl.store(buf_ptr", "tl.load(buf_ptr"), env={"WAVETILE_SANITIZE": "race"}),
    Case("nan_report_names_op_line", "sanitizers", "error", '''
@jit
def logs(x_ptr, out_ptr, BLOCK: tl.constexpr):
    acc = tl.zeros((BLOCK,), tl.float32)
    for i in range(4):
        v = tl.load(x_ptr + i * BLOCK + tl.arange(0, BLOCK))
        acc += tl.log(v - 3.0)
    tl.store(out_ptr + tl.arange(0, BLOCK), acc)
logs[(1,)](rand(64), np.zeros(16, np.float32), BLOCK=16)
''', ("nan", "logs", "tl.log(v - 3.0)"), env={"WAVETILE_SANITIZE": "nan"}),
    Case("fp16_square_overflow", "sanitizers", "error", '''
@jit
def square16(x_ptr, out_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    tl.store(out_ptr + offs, x * x)
x = np.full(16, 300.0, np.float16)
square16[(1,)](x, np.zeros(16, np.float16), BLOCK=16)
''', ("square16", "x * x"), env={"WAVETILE_SANITIZE": "nan"}),
    # more cases of our own
    Case("oob_store_names_everything", "ours", "error", '''
copy_kernel[(1,)](rand(64), np.zeros(40, np.float32), 64, BLOCK=64)
''', ("copy_kernel", "dst_ptr", "program id", "40 elements")),
    Case("wrong_argument_count", "ours", "error", '''
copy_kernel[(1,)](rand(8), np.zeros(8, np.float32), BLOCK=8)
''', ("copy_kernel", "n")),
    Case("unsupported_argument_type", "ours", "error", '''
copy_kernel[(1,)]([1.0, 2.0], np.zeros(8, np.float32), 8, BLOCK=8)
''', ("copy_kernel", "src_ptr", "list")),
    Case("object_dtype_array", "ours", "error", '''
copy_kernel[(1,)](np.array([1, "a"], dtype=object), np.zeros(8, np.float32), 8, BLOCK=8)
''', ("copy_kernel", "src_ptr", "object")),
    Case("non_contiguous_view_checked", "ours", "error", '''
base = np.zeros(64, np.float32)
copy_kernel[(1,)](rand(64), base[::2], 64, BLOCK=64)
''', ("copy_kernel", "dst_ptr", "out-of-bounds")),
    Case("int_argument_too_big", "ours", "error", '''
copy_kernel[(1,)](rand(8), np.zeros(8, np.float32), 2**64, BLOCK=8)
''', ("copy_kernel", "n")),
)


SOLO_ITEMS = frozenset(("1", "2", "3", "11", "12"))  # crash- or hang-prone: each case in a process of its own


def group_of(case: Case) -> str | None:
    """Cases that cannot crash or hang share a process with their group (a process start costs seconds);
    None: the case runs alone."""
    if case.item in SOLO_ITEMS:
        return None
    return "torch" if "torch" in case.name else case.item


_GROUP_RUNNER = '''
import os, runpy, sys
for name, path, env in CASES:
    saved = dict(os.environ)
    os.environ.update(env)
    sys.stdout.write("@@CASE " + name + "\\n")
    sys.stdout.flush()
    try:
        runpy.run_path(path, run_name="__main__")
    except BaseException as e:
        import traceback
        sys.stdout.write("@@RAISED " + type(e).__name__ + "\\n" + str(e) + "\\n@@WHERE "
                         + " | ".join(traceback.format_tb(e.__traceback__)[-2:]).replace("\\n", " ") + "\\n")
    sys.stdout.flush()
    os.environ.clear()
    os.environ.update(saved)
sys.stdout.write("@@CASE end\\n")
'''


def run_group(cases: list[Case], python: str = sys.executable) -> list[Result]:
    """Run the cases one after another in one fresh process (each from its own file, with its own
    environment and temporary directory) and classify each; one case alone runs as its own script."""
    with tempfile.TemporaryDirectory(prefix="wavetile_probe_") as tmp:
        plan = []
        for case in cases:
            own = os.path.join(tmp, case.name)
            os.makedirs(own)
            path = os.path.join(own, f"probe_{case.name}.py")
            with open(path, "w") as f:
                f.write(PRELUDE + case.code + '\nsys.stdout.write("@@RETURNED\\n")\n')
            plan.append((case.name, path, {"PROBE_TMP": own, **case.env}))
        if len(cases) == 1:
            script, extra = plan[0][1], plan[0][2]
        else:
            script, extra = os.path.join(tmp, "group.py"), {}
            with open(script, "w") as f:
                f.write(f"CASES = {plan!r}\n" + _GROUP_RUNNER)
        env = {k: v for k, v in os.environ.items() if not k.startswith("WAVETILE_")}
        env.update(PYTHONPATH=ROOT + os.pathsep + env.get("PYTHONPATH", ""),
                   WAVETILE_CACHE_DIR=os.environ.get("WAVETILE_CACHE_DIR") or os.path.join(tmp, "cache"), **extra)
        start = time.monotonic()
        timeout = sum(c.timeout for c in cases)
        try:
            proc = subprocess.run([python, script], env=env, capture_output=True, text=True, timeout=timeout,
                                  cwd=tmp, start_new_session=True)
        except subprocess.TimeoutExpired:
            seconds = time.monotonic() - start
            return [Result(c, "hang", f"no exit after {timeout:.0f} s", seconds) for c in cases]
        seconds = (time.monotonic() - start) / len(cases)
    if len(cases) == 1:
        return [Result(cases[0], *classify(cases[0], proc.returncode, proc.stdout, proc.stderr), seconds)]
    chunks = dict(part.partition("\n")[::2] for part in proc.stdout.split("@@CASE ")[1:])
    finished = "end" in chunks
    results = []
    for case in cases:
        if case.name in chunks and (finished or list(chunks).index(case.name) < len(chunks) - 1):
            outcome = classify(case, 0, chunks[case.name], "")
        else:
            outcome = classify(case, proc.returncode or -1, chunks.get(case.name, ""), proc.stderr)
        results.append(Result(case, *outcome, seconds))
    return results


def run_case(case: Case, python: str = sys.executable) -> Result:
    """Run one case in a fresh process of its own and classify what happened."""
    return run_group([case], python)[0]


def classify(case: Case, returncode: int, stdout: str, stderr: str) -> tuple[str, str]:
    """(outcome, what was observed) of a finished case process."""
    interrupted = returncode == -signal.SIGINT and "@@RAISED KeyboardInterrupt" in stdout  # how Python exits then
    if returncode < 0 and not interrupted:
        return "crash", f"killed by signal {-returncode}"
    if "@@RAISED " in stdout:
        kind, _, message = stdout.split("@@RAISED ", 1)[1].partition("\n")
        message, _, where = message.partition("@@WHERE ")
        message = message.strip()
        observed = f"{kind}: {message}"
        if case.expect == "ok":  # a failure that should not happen names where it happened
            outcome = "silently wrong" if kind == "AssertionError" else "unexpected error"
            return outcome, f"{observed} [{where.strip()}]"
        if case.raises and kind not in case.raises:
            return "unexpected error", observed
        missing = [w for w in case.mentions if w not in message]
        if missing:
            return "unclear error", f"{observed} [does not mention {', '.join(map(repr, missing))}]"
        return "clear error", observed
    if returncode == 0 and stdout.rstrip().endswith("@@RETURNED"):
        return ("correct", "ran, result checked") if case.expect == "ok" else ("silently wrong", "ran without error")
    tail = (stderr.strip().splitlines() or [""])[-1]
    return "crash", f"exit code {returncode}: {tail[:200]}"


def units(cases=CASES) -> list[list[Case]]:
    """The processes the cases run in (see group_of), longest first so that parallel runs finish together."""
    groups: dict[str, list[Case]] = {}
    found = []
    for case in cases:
        group = group_of(case)
        if group is None:
            found.append([case])
        else:
            if group not in groups:
                groups[group] = []
                found.append(groups[group])
            groups[group].append(case)
    return sorted(found, key=len, reverse=True)


def run_cases(cases=CASES, jobs: int = 2) -> list[Result]:
    """Run the cases `jobs` processes at a time; results in the order of `cases`."""
    with ThreadPoolExecutor(max(1, jobs)) as pool:
        by_case = {r.case.name: r for unit in pool.map(run_group, units(cases)) for r in unit}
    return [by_case[c.name] for c in cases]


def table(results: list[Result]) -> str:
    """The case / expected / observed table, then the counts of each outcome."""
    lines = [f"{'case':40} {'item':14} {'expected':9} {'outcome':16} observed"]
    for r in results:
        observed = r.observed.replace("\n", " ")
        lines.append(f"{r.case.name:40} {r.case.item:14} {r.case.expect:9} {r.outcome:16} {observed[:150]}")
    counts = {o: sum(r.outcome == o for r in results) for o in OUTCOMES}
    lines.append(", ".join(f"{n} {o}" for o, n in counts.items())
                 + f" — crashes {counts['crash']}, hangs {counts['hang']}, silently wrong {counts['silently wrong']}")
    return "\n".join(lines)
