"""Sweeps on any executor: Dask clusters give the local run's ranking and numbers, survive a dead
worker, report lost tasks as failed, and resume from stored results."""

from __future__ import annotations

import json
import os
import signal
import threading
import time
from concurrent.futures import Executor, Future
from concurrent.futures.process import BrokenProcessPool
from pathlib import Path

import numpy as np
import pytest

import dsl as tl
from jit import Config, cdiv, jit
from jit.tune import TuneProblem, main, rank, sweep, tune_problem

distributed = pytest.importorskip("distributed")

HERE = Path(__file__).resolve()
TARGET = f"{HERE}:scale_problem"
SPACE = ["--space", "BLOCK=32,64,128", "--space", "num_warps=1,4"]


@jit
def scale(x_ptr, out_ptr, n, alpha, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, x * alpha + tl.exp(x * 0.5), mask=mask)


@tune_problem(scale)
def scale_problem(n: int = 1000) -> TuneProblem:
    x = np.random.default_rng(7).standard_normal(n).astype(np.float32)
    return TuneProblem(scale, args=(x, np.zeros_like(x), n, 1.5), grid=lambda meta: (cdiv(n, meta["BLOCK"]),),
                       outputs=["out_ptr"], rtol=1e-6, atol=1e-6)


CONFIGS = [Config({"BLOCK": b}, num_warps=w) for b in (32, 64, 128, 256) for w in (1, 2)]


@pytest.fixture
def cluster():
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1",
                                  dashboard_address=None) as local, distributed.Client(local) as client:
        yield local, client


def _modeled(rows):
    return [(str(r.record.config), r.record.modeled_seconds, r.record.bound, r.record.occupancy,
             r.record.l2_hit_rate, r.record.bank_conflicts, r.check) for r in rows]


def test_cli_on_a_remote_scheduler_ranks_like_the_local_run(cluster, tmp_path):
    local, client = cluster
    n = ["n=777"]  # not a multiple of any block
    assert main([TARGET, *n, *SPACE, "--cpu-runs", "1", "--no-progress", "--fresh",
                 "--json", str(tmp_path / "local.json")]) == 0
    address = client.scheduler.address.removeprefix("tcp://")
    assert address.startswith("127.0.0.1:")
    assert main([TARGET, *n, *SPACE, "--cpu-runs", "1", "--no-progress", "--fresh", "--executor",
                 f"dask://{address}", "--json", str(tmp_path / "dask.json")]) == 0
    rows = {name: json.loads((tmp_path / f"{name}.json").read_text())["rows"] for name in ("local", "dask")}
    drop = ("cpu_ms",)
    assert [{k: v for k, v in r.items() if k not in drop} for r in rows["dask"]] == \
           [{k: v for k, v in r.items() if k not in drop} for r in rows["local"]]
    assert len(rows["local"]) == 6 and all(r["check"] in ("ref", "ok") for r in rows["local"])
    ran_on = client.run(lambda: sorted(k for k in __import__("sys").modules if k.startswith("_wavetile_tune_")))
    assert len(ran_on) == 2 and all(ran_on.values()), "both workers built the problem by name"


def test_dask_sweep_matches_local_and_survives_a_killed_worker(cluster):
    local, client = cluster
    reference = sweep(TARGET, {"n": 3000}, "mtt-s5000", CONFIGS, progress=False, cpu_runs=1)
    pids = client.run(os.getpid)
    killed = {}

    def kill_a_busy_worker():
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline and not killed:
            busy = [w for w, tasks in client.processing().items() if tasks]
            if busy:
                killed["tasks"] = client.processing()[busy[0]]
                os.kill(pids[busy[0]], signal.SIGKILL)
                killed["pid"] = pids[busy[0]]
            time.sleep(0.01)

    killer = threading.Thread(target=kill_a_busy_worker)
    killer.start()
    rows = sweep(TARGET, {"n": 3000}, "mtt-s5000", CONFIGS, progress=False, cpu_runs=1, executor=client.get_executor(),
                 workers=2)
    killer.join()
    assert killed.get("tasks"), "a worker was killed while it ran a config"
    with pytest.raises(ProcessLookupError):
        os.kill(killed["pid"], 0)
    assert all(r.record.ok and r.check in ("ref", "ok") for r in rows)
    assert _modeled(rank(rows, "model")) == _modeled(rank(reference, "model"))


def test_cli_starts_and_closes_a_local_cluster(capsys):
    assert main([TARGET, "n=100", "--space", "BLOCK=32,64", "--cpu-runs", "1", "--no-progress", "--fresh",
                 "--executor", "dask", "--jobs", "2"]) == 0
    assert "2 configs" in capsys.readouterr().out
    with pytest.raises(SystemExit, match="local, dask or dask://HOST:PORT"):
        main([TARGET, "--space", "BLOCK=32", "--executor", "ray"])


class _LosingExecutor(Executor):
    """Loses every second task, as an executor whose worker died for good would."""

    def __init__(self):
        self.submitted = 0

    def submit(self, fn, /, *args, **kwargs):
        self.submitted += 1
        future = Future()
        if self.submitted % 2:
            future.set_result(fn(*args, **kwargs))
        else:
            future.set_exception(BrokenProcessPool("a worker died"))
        return future


def test_lost_tasks_are_failed_configs_and_a_sweep_resumes_from_stored_results(tmp_path, monkeypatch):
    monkeypatch.setenv("WAVETILE_CACHE_DIR", str(tmp_path))
    first = sweep(TARGET, {"n": 333}, "mtt-s5000", CONFIGS[:4], progress=False, cpu_runs=1,
                  executor=_LosingExecutor(), resume=True)
    assert [r.record.ok for r in first] == [True, False, True, False]
    assert all("lost by the executor: BrokenProcessPool" in r.record.error for r in first[1::2])
    again = _LosingExecutor()
    second = sweep(TARGET, {"n": 333}, "mtt-s5000", CONFIGS[:4], progress=False, cpu_runs=1, executor=again,
                   resume=True)
    assert again.submitted == 2, "only the two lost configs run again"
    assert [r.record.ok for r in second] == [True, True, True, False]
    assert second[0].record.modeled_seconds == first[0].record.modeled_seconds
    assert second[0].record.cpu_seconds == first[0].record.cpu_seconds, "the stored result, not a new run"
