"""On-disk cache of compiled artefacts: several named blobs per hex key, verified on every read.

Layout: `<root>/v<FORMAT>/<key[:2]>/<key>/` holding the blobs and `manifest.json`, which records the
size and sha256 of each blob. The root is `$WAVETILE_CACHE_DIR` or `~/.cache/wavetile`, read at call
time so tests (and users) can redirect it.

Why it is shaped like this:
- An entry is written into a temporary directory next to its final place and renamed into place in
  one step, so a reader sees either no entry or a complete one, and concurrent writers of the same key
  cannot interleave: the first rename wins and the others discard their copy.
- Entries are never modified after the rename. A reader opens the entry directory once and reads every
  file relative to that handle, so it sees a single entry even if the path is replaced meanwhile.
- Blobs are read only from regular files, and at most the size the manifest records: a FIFO or a link to
  /dev/zero put in an entry's place is a damaged entry, not a hang.
- Anything unexpected (missing or extra-short blob, checksum mismatch, unreadable manifest) makes the
  entry a miss; it is moved aside and deleted so the caller recompiles and rewrites it. Cached object
  code is never trusted unverified: loading garbage into the JIT crashes the process.
- The cache is an optimisation: an unusable directory produces one warning and the process carries on
  without it. Only programming errors (a malformed key or blob name) raise.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import json
import os
import re
import shutil
import stat
import tempfile
import threading
import warnings
from pathlib import Path

from jit import env

FORMAT = 1
MANIFEST = "manifest.json"
ENV_VAR = "WAVETILE_CACHE_DIR"

_KEY = re.compile(r"[0-9a-f]{16,128}")
_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,99}")

_MANIFEST_LIMIT = 1 << 20  # bytes: a manifest lists a few blobs
_lock = threading.Lock()
_disabled: set[str] = set()  # roots that failed a write; warned about once each


class CacheWarning(UserWarning):
    """The disk cache cannot be used; compilation still works, only without persistence."""


def cache_dir() -> Path:
    """The cache root now: `$WAVETILE_CACHE_DIR` if set and non-empty, else `~/.cache/wavetile`."""
    root = env.get(ENV_VAR)
    return Path(root).expanduser() if root else Path.home() / ".cache" / "wavetile"


def entry_path(key: str) -> Path:
    """Where the entry for `key` lives (it may not exist); handy for inspecting cached assembly."""
    _check_key(key)
    return cache_dir() / f"v{FORMAT}" / key[:2] / key


def get(key: str) -> dict[str, bytes] | None:
    """The blobs stored under `key`, or None on a miss. A damaged entry is deleted and reported as a miss."""
    path = entry_path(key)
    try:
        fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    except OSError:
        return None
    try:
        files = _read_entry(fd, key)
        if files is None:
            _discard(path, os.fstat(fd).st_ino)
        return files
    finally:
        os.close(fd)


def put(key: str, files: dict[str, bytes]) -> None:
    """Store `files` under `key` atomically; if another writer got there first, keep its (valid) entry.

    Never raises for I/O problems: the first failure for a cache root warns and disables writes to it.
    """
    path = entry_path(key)
    for name in files:
        if not _NAME.fullmatch(name) or name == MANIFEST:
            raise ValueError(f"invalid cache blob name {name!r}")
    root = str(cache_dir())
    if root in _disabled:
        return
    tmp = None
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = tempfile.mkdtemp(prefix=f".tmp-{key[:16]}-", dir=path.parent)
        manifest = {"format": FORMAT, "key": key, "files": {}}
        for name, data in files.items():
            with open(os.path.join(tmp, name), "wb") as f:
                f.write(data)
            manifest["files"][name] = {"size": len(data), "sha256": hashlib.sha256(data).hexdigest()}
        with open(os.path.join(tmp, MANIFEST), "w") as f:
            json.dump(manifest, f, indent=1, sort_keys=True)
        for _attempt in range(2):
            try:
                os.rename(tmp, path)
                tmp = None
                return
            except OSError as exc:
                if exc.errno not in (errno.ENOTEMPTY, errno.EEXIST, errno.ENOTDIR):
                    raise
            if get(key) is not None:  # another writer won with a valid entry; get() removes a bad one
                return
            if not path.is_dir():  # a stray file where the entry belongs
                with contextlib.suppress(OSError):
                    path.unlink()
    except OSError as exc:
        _disable(root, exc)
    finally:
        if tmp is not None:
            shutil.rmtree(tmp, ignore_errors=True)


def _check_key(key: str) -> None:
    if not isinstance(key, str) or not _KEY.fullmatch(key):
        raise ValueError(f"cache keys are 16-128 lowercase hex digits, got {key!r}")


def _read_entry(fd: int, key: str) -> dict[str, bytes] | None:
    """Read and verify every blob of the entry open at directory descriptor `fd`; None if damaged."""

    def read(name: str, size: int) -> bytes:
        """At most `size` + 1 bytes of a regular file: a FIFO, device or symlink put there is never read."""
        handle = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK, dir_fd=fd)
        with open(handle, "rb") as f:
            if not stat.S_ISREG(os.fstat(handle).st_mode):
                raise ValueError(f"{name} is not a regular file")
            return f.read(size + 1)

    try:
        manifest = json.loads(read(MANIFEST, _MANIFEST_LIMIT))
        if manifest.get("format") != FORMAT or manifest.get("key") != key:
            return None
        files = {}
        for name, info in manifest["files"].items():
            if not _NAME.fullmatch(name) or name == MANIFEST:
                return None
            data = read(name, int(info["size"]))
            if len(data) != info["size"] or hashlib.sha256(data).hexdigest() != info["sha256"]:
                return None
            files[name] = data
        return files
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None


def _discard(path: Path, inode: int) -> None:
    """Remove the damaged entry at `path`, unless it has been replaced by another entry meanwhile.

    Renaming it aside first makes the removal atomic for readers and writers of the same key.
    """
    try:
        if os.stat(path).st_ino != inode:
            return
        trash = tempfile.mkdtemp(prefix=".trash-", dir=path.parent)
    except OSError:
        return
    try:
        os.rename(path, os.path.join(trash, "entry"))
    except OSError:
        pass  # already gone or replaced
    finally:
        shutil.rmtree(trash, ignore_errors=True)


def _disable(root: str, exc: OSError) -> None:
    with _lock:
        if root in _disabled:
            return
        _disabled.add(root)
    warnings.warn(
        f"wavetile: cannot write the compile cache at {root} ({exc}); continuing without it. "
        f"Set {ENV_VAR} to a writable directory to enable it.",
        CacheWarning,
        stacklevel=3,
    )
