"""The on-disk cache: round trips across processes, damaged entries, concurrent writers, unusable dirs."""

from __future__ import annotations

import ctypes
import hashlib
import inspect
import json
import os
import subprocess
import sys
import threading
import warnings
from pathlib import Path

import pytest

from jit import cache, engine

REPO = Path(__file__).resolve().parents[2]

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


def compile_cached(llvm_ir: str, name: str) -> tuple[str, engine.LoadedKernel]:
    """How the runtime is expected to combine the two modules (the subprocess tests run this source)."""
    key = hashlib.sha256((engine.target_key() + "\0" + llvm_ir).encode()).hexdigest()
    files = cache.get(key)
    if files is None:
        compiled = engine.optimize_and_emit(llvm_ir, name)
        cache.put(key, compiled.to_files())
        files = compiled.to_files()
    return key, engine.load(files[engine.CompiledObject.OBJ_FILE])


def run_add(kernel: engine.LoadedKernel, a: int, b: int) -> int:
    out = ctypes.c_int64(0)
    ctx = (ctypes.c_int64 * 3)(a, b, ctypes.addressof(out))
    assert kernel(ctypes.addressof(ctx)) == 0
    return out.value


@pytest.fixture
def cache_root(tmp_path, monkeypatch):
    root = tmp_path / "cache"
    monkeypatch.setenv(cache.ENV_VAR, str(root))
    return root


KEY = "ab" * 32


def test_round_trip_and_miss(cache_root):
    assert cache.get(KEY) is None
    files = {"kernel.o": b"\x7fELF\x00\x01", "meta.json": b'{"a": 1}', "empty": b""}
    cache.put(KEY, files)
    assert cache.get(KEY) == files
    assert cache.entry_path(KEY).is_dir()
    assert cache.entry_path(KEY).is_relative_to(cache_root)
    manifest = json.loads((cache.entry_path(KEY) / cache.MANIFEST).read_text())
    assert manifest["files"]["kernel.o"]["sha256"] == hashlib.sha256(files["kernel.o"]).hexdigest()
    cache.put(KEY, {"kernel.o": b"other"})  # an existing valid entry wins
    assert cache.get(KEY) == files


def test_directory_is_read_at_call_time(tmp_path, monkeypatch):
    monkeypatch.setenv(cache.ENV_VAR, str(tmp_path / "one"))
    cache.put(KEY, {"x": b"1"})
    monkeypatch.setenv(cache.ENV_VAR, str(tmp_path / "two"))
    assert cache.get(KEY) is None
    monkeypatch.setenv(cache.ENV_VAR, str(tmp_path / "one"))
    assert cache.get(KEY) == {"x": b"1"}
    monkeypatch.delenv(cache.ENV_VAR)
    assert cache.cache_dir() == Path.home() / ".cache" / "wavetile"


@pytest.mark.parametrize("key", ["", "abc", "AB" * 32, "../" + "a" * 20, "g" * 32])
def test_malformed_keys_are_rejected(cache_root, key):
    with pytest.raises(ValueError):
        cache.get(key)


@pytest.mark.parametrize("name", ["", "../x", "a/b", ".hidden", cache.MANIFEST])
def test_malformed_blob_names_are_rejected(cache_root, name):
    with pytest.raises(ValueError):
        cache.put(KEY, {name: b""})


def test_compiled_kernel_round_trips_in_this_process(cache_root):
    engine.reset_stats()
    key, kernel = compile_cached(ADD_IR, "add")
    assert run_add(kernel, 2, 5) == 7
    assert engine.stats.optimize_calls == 1
    files = cache.get(key)
    assert set(files) == {"kernel.o", "kernel.llir", "kernel.asm"}
    _, again = compile_cached(ADD_IR, "add")
    assert run_add(again, 20, 22) == 42
    assert engine.stats.optimize_calls == 1  # the second kernel came from disk


CHILD = (
    "from __future__ import annotations\nimport ctypes, hashlib, json\nfrom jit import cache, engine\n"
    + inspect.getsource(compile_cached)
    + inspect.getsource(run_add)
    + """
key, kernel = compile_cached(ADD_CHILD_IR, "add")
print(json.dumps({"key": key, "sum": run_add(kernel, 40, 2), "optimize_calls": engine.stats.optimize_calls}))
"""
)


def run_child(cache_root: Path) -> dict:
    env = dict(os.environ, WAVETILE_CACHE_DIR=str(cache_root), PYTHONPATH=str(REPO))
    script = CHILD.replace("ADD_CHILD_IR", repr(ADD_IR))
    out = subprocess.run(
        [sys.executable, "-c", script], env=env, cwd=REPO, capture_output=True, text=True, timeout=120
    )
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_a_new_process_loads_without_optimising(cache_root):
    first = run_child(cache_root)
    second = run_child(cache_root)
    assert first["sum"] == second["sum"] == 42
    assert first["optimize_calls"] == 1
    assert second["optimize_calls"] == 0
    assert first["key"] == second["key"]
    # and this process sees the same entry
    engine.reset_stats()
    key, kernel = compile_cached(ADD_IR, "add")
    assert key == first["key"] and engine.stats.optimize_calls == 0
    assert run_add(kernel, 1, 1) == 2


def _truncate(entry: Path) -> None:
    blob = entry / "kernel.o"
    blob.write_bytes(blob.read_bytes()[:100])


def _flip(entry: Path) -> None:
    blob = entry / "kernel.o"
    data = bytearray(blob.read_bytes())
    data[len(data) // 2] ^= 0xFF
    blob.write_bytes(bytes(data))


def _garbage(entry: Path) -> None:
    blob = entry / "kernel.o"
    blob.write_bytes(os.urandom(len(blob.read_bytes())))


def _manifest_key(entry: Path) -> None:
    manifest = json.loads((entry / cache.MANIFEST).read_text())
    manifest["key"] = "0" * 64
    (entry / cache.MANIFEST).write_text(json.dumps(manifest))


CORRUPTIONS = {
    "truncated blob": _truncate,
    "flipped bytes": _flip,
    "garbage blob": _garbage,
    "missing blob": lambda e: (e / "kernel.o").unlink(),
    "missing manifest": lambda e: (e / cache.MANIFEST).unlink(),
    "garbage manifest": lambda e: (e / cache.MANIFEST).write_bytes(b"\x00{not json"),
    "manifest not a dict": lambda e: (e / cache.MANIFEST).write_text("[1, 2]"),
    "manifest for another key": _manifest_key,
    "empty entry": lambda e: [p.unlink() for p in e.iterdir()],
}


@pytest.mark.parametrize("damage", list(CORRUPTIONS), ids=list(CORRUPTIONS))
def test_damaged_entry_is_a_miss_and_is_recompiled(cache_root, damage):
    key, _ = compile_cached(ADD_IR, "add")
    entry = cache.entry_path(key)
    CORRUPTIONS[damage](entry)
    assert cache.get(key) is None
    assert not entry.exists()  # deleted, not left to fail again

    engine.reset_stats()
    _, kernel = compile_cached(ADD_IR, "add")
    assert engine.stats.optimize_calls == 1
    assert run_add(kernel, 3, 4) == 7
    assert cache.get(key) is not None


def test_damage_seen_by_a_new_process_is_recompiled(cache_root):
    first = run_child(cache_root)
    _flip(cache.entry_path(first["key"]))
    second = run_child(cache_root)
    assert second["optimize_calls"] == 1 and second["sum"] == 42
    assert run_child(cache_root)["optimize_calls"] == 0


def test_stray_file_at_the_entry_path_is_replaced(cache_root):
    path = cache.entry_path(KEY)
    path.parent.mkdir(parents=True)
    path.write_bytes(b"junk")
    assert cache.get(KEY) is None
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        cache.put(KEY, {"x": b"1"})
    assert cache.get(KEY) == {"x": b"1"}


WRITER = """
import json, shutil, sys
from jit import cache
key, wid = sys.argv[1], int(sys.argv[2])
blob = bytes([wid]) * 300_000
for i in range(25):
    cache.put(key, {"a": blob, "b": blob, "meta.json": b'{"writer": %d}' % wid})
    got = cache.get(key)  # None is possible: another writer may have just removed the entry
    if got is not None:
        writer = json.loads(got["meta.json"])["writer"]
        assert got["a"] == got["b"] == bytes([writer]) * 300_000, "mixed entry"
    if i % 5 == 2:
        # remove it, so the next round races to create it again (every process ends with a put)
        shutil.rmtree(cache.entry_path(key), ignore_errors=True)
print("ok")
"""


def test_concurrent_writers_leave_a_valid_entry(cache_root):
    key = "cd" * 32
    env = dict(os.environ, WAVETILE_CACHE_DIR=str(cache_root), PYTHONPATH=str(REPO))
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", WRITER, key, str(w)],
            env=env,
            cwd=REPO,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for w in range(1, 5)
    ]
    seen = []
    errors = []

    def read_loop() -> None:
        while any(p.poll() is None for p in procs):
            got = cache.get(key)
            if got is not None:
                writer = json.loads(got["meta.json"])["writer"]
                if got["a"] != bytes([writer]) * 300_000 or got["b"] != got["a"]:
                    errors.append(writer)
                seen.append(writer)

    def write_loop(wid: int) -> None:
        blob = bytes([wid]) * 300_000
        for _ in range(25):
            cache.put(key, {"a": blob, "b": blob, "meta.json": b'{"writer": %d}' % wid})

    threads = [threading.Thread(target=read_loop)] + [
        threading.Thread(target=write_loop, args=(w,)) for w in (5, 6)
    ]
    for t in threads:
        t.start()
    outputs = [p.communicate(timeout=300) for p in procs]
    for t in threads:
        t.join()
    for p, (out, err) in zip(procs, outputs, strict=True):
        assert p.returncode == 0, err
        assert out.strip() == "ok"
    assert not errors
    final = cache.get(key)
    assert final is not None
    writer = json.loads(final["meta.json"])["writer"]
    assert final["a"] == final["b"] == bytes([writer]) * 300_000
    leftovers = [p.name for p in cache.entry_path(key).parent.iterdir() if p.name.startswith(".")]
    assert leftovers == []  # temp and trash directories are cleaned up
    print(f"\n[cache] reader saw {len(seen)} complete entries from writers {sorted(set(seen))}")


def test_concurrent_compile_cached_threads(cache_root):
    engine.reset_stats()
    results = []

    def work() -> None:
        key, kernel = compile_cached(ADD_IR, "add")
        results.append((key, run_add(kernel, 5, 6)))

    threads = [threading.Thread(target=work) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(results) == 6 and len({key for key, _ in results}) == 1
    assert [value for _, value in results] == [11] * 6
    assert 1 <= engine.stats.optimize_calls <= 6  # racing misses may all compile; all end up valid
    assert cache.get(results[0][0]) is not None


def test_unwritable_cache_dir_warns_once_and_carries_on(tmp_path, monkeypatch):
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("a file where the cache directory should be")
    monkeypatch.setenv(cache.ENV_VAR, str(blocker / "cache"))
    with pytest.warns(cache.CacheWarning, match="continuing without it"):
        cache.put(KEY, {"x": b"1"})
    assert cache.get(KEY) is None
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no second warning
        cache.put(KEY, {"x": b"1"})
        engine.reset_stats()
        _, kernel = compile_cached(ADD_IR, "add")  # a launch still works
        _, kernel = compile_cached(ADD_IR, "add")
    assert run_add(kernel, 1, 2) == 3
    assert engine.stats.optimize_calls == 2
