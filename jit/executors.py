"""The executors `wavetile-tune --executor` names: a local process pool, or Dask (local or remote).

Every one is a `concurrent.futures.Executor`, so jit.tune.sweep has one code path for all of them.
Dask is an optional extra (`pip install wavetile[distributed]`); it is imported only when asked for.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import os
from collections.abc import Iterator
from concurrent.futures import Executor, ProcessPoolExecutor

DASK_RETRIES = 2
"""How often Dask reruns a task that raised (a worker that dies is rescheduled by the scheduler itself)."""


def threads_per_worker(workers: int) -> int:
    """Interpreter threads each worker gets so that `workers` of them share this machine's cores."""
    return max(1, (os.cpu_count() or 1) // max(1, workers))


def local_pool(workers: int) -> ProcessPoolExecutor:
    """Spawned processes: a worker never inherits the parent's compiled kernels or open simulator state."""
    return ProcessPoolExecutor(max_workers=workers, mp_context=multiprocessing.get_context("spawn"))


@contextlib.contextmanager
def dask_executor(address: str | None = None, workers: int = 2) -> Iterator[Executor]:
    """A Dask executor: a fresh `distributed.LocalCluster` of `workers` single-threaded processes on
    the loopback interface, or the scheduler at `address` (`HOST:PORT` or `tcp://HOST:PORT`)."""
    try:
        from distributed import Client, LocalCluster
    except ImportError:
        raise SystemExit("wavetile-tune: --executor dask needs dask and distributed "
                         "(pip install 'wavetile[distributed]')") from None
    with contextlib.ExitStack() as stack:
        if address is None:
            cluster = stack.enter_context(LocalCluster(n_workers=workers, threads_per_worker=1, processes=True,
                                                       host="127.0.0.1", dashboard_address=None))
            client = stack.enter_context(Client(cluster))
        else:
            client = stack.enter_context(Client(address if "://" in address else f"tcp://{address}"))
        executor = client.get_executor(retries=DASK_RETRIES, pure=False)
        try:
            yield executor
        finally:
            executor.shutdown(wait=False)


@contextlib.contextmanager
def open_executor(spec: str, workers: int) -> Iterator[Executor | None]:
    """`local` (None when `workers` <= 1: the sweep runs in this process), `dask`, or `dask://HOST:PORT`."""
    if spec == "local":
        if workers <= 1:
            yield None
            return
        with local_pool(workers) as pool:
            yield pool
    elif spec == "dask":
        with dask_executor(None, max(1, workers)) as executor:
            yield executor
    elif spec.startswith("dask://"):
        with dask_executor(spec.removeprefix("dask://")) as executor:
            yield executor
    else:
        raise SystemExit(f"wavetile-tune: --executor is local, dask or dask://HOST:PORT, not {spec!r}")
