"""Profiles, tables, hot lines, chrome traces, the roofline hook, and the Counters record."""

import importlib.util
import json
import os
import subprocess
import sys
from collections import defaultdict

import pytest

import simulator
from simulator import Counters, LaunchRecord
from simulator.profiles import record_launch

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def copy_counters(programs=300):
    return Counters(
        instructions={"integer": 8 * programs}, simt_flops=1024 * programs,
        load_requests=64 * programs, load_sectors=256 * programs,
        store_requests=32 * programs, store_sectors=128 * programs,
        l2_hits=100 * programs, l2_misses=284 * programs,
        dram_read_bytes=8192 * programs, dram_write_bytes=4096 * programs,
        shared_bank_conflicts=5 * programs, programs=programs, num_warps=4,
    )


def make_record(name="add_kernel", programs=300, sampled=False, machine="h200"):
    lines = {
        (__file__, 10): Counters(load_requests=64 * programs, load_sectors=256 * programs,
                                 dram_read_bytes=8192 * programs),
        (__file__, 11): Counters(instructions={"integer": 8 * programs}),
    }
    return LaunchRecord.build(name, (programs,), copy_counters(programs), machine=machine, cpu_seconds=0.01,
                              constexprs={"BLOCK": 1024}, sampled=sampled, lines=lines)


def test_record_launch_without_a_profile_is_a_no_op():
    with simulator.profile() as closed:
        pass
    record_launch(make_record())  # no profile open: nothing may store it
    assert not simulator.is_profiling()
    assert closed.launches == []
    with simulator.profile() as later:
        pass
    assert later.launches == []  # and it does not surface in a profile opened afterwards


def test_profile_collects_launches_in_order_and_nests():
    with simulator.profile() as outer:
        record_launch(make_record("a"))
        with simulator.profile() as inner:
            record_launch(make_record("b"))
        record_launch(make_record("c"))
    assert [r.kernel for r in outer.launches] == ["a", "b", "c"]
    assert [r.kernel for r in inner.launches] == ["b"]
    record_launch(make_record("d"))
    assert len(outer.launches) == 3


def test_record_fields():
    r = make_record()
    assert r.grid == (300,) and r.machine == "h200" and r.num_warps == 4
    assert r.modeled_seconds == r.estimate.seconds and r.bound in simulator.BOUNDS
    assert r.counters["dram_bytes"] == 12288 * 300
    assert r.totals.load_sectors == 256 * 300


def test_table_has_the_columns_and_marks_sampled_launches():
    with simulator.profile() as prof:
        record_launch(make_record("exact_kernel"))
        record_launch(make_record("sampled_kernel", sampled=True))
    text = prof.table()
    header = text.splitlines()[0]
    for column in ("kernel", "grid", "config", "cpu", "modeled", "bound", "flops", "dram", "l2 hit",
                   "sect/req", "conflicts", "occupancy"):
        assert column in header
    exact, sampled = (line for line in text.splitlines() if "_kernel" in line)
    assert "~" not in exact and "~" in sampled
    assert "BLOCK=1024" in exact and "4.0" in exact  # 384 sectors / 96 requests


def test_hot_lines_are_ranked_by_modeled_time():
    with simulator.profile() as prof:
        record_launch(make_record())
    rows = prof.lines().splitlines()
    assert rows[0].split()[0] == "line"
    assert rows[2].split()[0].endswith(":10")  # the loads dominate a memory-bound kernel


def test_chrome_trace_is_valid_json_with_the_required_fields(tmp_path):
    with simulator.profile() as prof:
        record_launch(make_record("first", programs=300))
        record_launch(make_record("second", programs=50))
    path = tmp_path / "trace.json"
    prof.export_chrome_trace(path)
    trace = json.loads(path.read_text())
    events = trace["traceEvents"]
    phases = defaultdict(list)
    for e in events:
        assert {"name", "ph", "pid"} <= set(e)
        phases[e["ph"]].append(e)
    names = {e["name"] for e in phases["M"]}
    assert {"process_name", "process_sort_index", "thread_name"} <= names
    units = [e for e in phases["M"] if e["name"] == "process_name" and e["pid"] > 0]
    assert len(units) == simulator.get_spec("h200").units
    programs = [e for e in phases["X"] if e.get("cat") == "program"]
    assert len(programs) == 350
    for e in phases["X"]:
        assert e["dur"] >= 0 and e["ts"] >= 0 and "tid" in e
    counters = {e["name"] for e in phases["C"]}
    assert counters == {"L2 hit rate", "DRAM bandwidth"}
    # slices on one (pid, tid) track never overlap
    tracks = defaultdict(list)
    for e in programs:
        tracks[(e["pid"], e["tid"])].append((e["ts"], e["ts"] + e["dur"]))
    for spans in tracks.values():
        spans.sort()
        assert all(a[1] <= b[0] + 1e-9 for a, b in zip(spans, spans[1:]))


def test_chrome_trace_merges_waves_of_huge_grids():
    from simulator.trace import chrome_trace

    record = make_record(programs=200_000)
    events = chrome_trace([record], max_events=5_000)["traceEvents"]
    programs = [e for e in events if e.get("cat") == "program"]
    assert len(programs) <= 10_000
    assert sum(e["args"]["programs"] for e in programs) >= record.estimate.waves.count


@pytest.mark.skipif(importlib.util.find_spec("matplotlib") is not None, reason="matplotlib installed")
def test_roofline_without_matplotlib_says_how_to_get_it(tmp_path):
    with simulator.profile() as prof:
        record_launch(make_record())
    with pytest.raises(ImportError, match="pip install matplotlib"):
        prof.roofline(tmp_path / "roofline.png")


@pytest.mark.skipif(importlib.util.find_spec("matplotlib") is None, reason="matplotlib not installed")
def test_roofline_writes_a_png(tmp_path):
    with simulator.profile() as prof:
        record_launch(make_record())
    prof.roofline(tmp_path / "roofline.png")
    assert (tmp_path / "roofline.png").read_bytes()[:4] == b"\x89PNG"


def test_env_profile_prints_the_table_at_exit():
    code = ("import simulator\n"
            "from simulator import Counters, LaunchRecord\n"
            "c = Counters(load_requests=10, load_sectors=40, dram_read_bytes=1280, programs=10, num_warps=4)\n"
            "simulator.record_launch(LaunchRecord.build('env_kernel', 10, c, machine='h200'))\n")
    env = dict(os.environ, WAVETILE_PROFILE="1", PYTHONPATH=ROOT)
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert "env_kernel" in done.stderr and "modeled" in done.stderr
    for off in ("0", "off", " False "):  # one parser (simulator.profiles) says what turns it off
        done = subprocess.run([sys.executable, "-c", code + "assert not simulator.is_profiling()\n"],
                              env={**env, "WAVETILE_PROFILE": off}, capture_output=True, text=True, timeout=60)
        assert done.returncode == 0 and "env_kernel" not in done.stderr, (off, done.stderr)


def test_counters_add_and_round_trip():
    a = Counters(instructions={"fp_add": 3}, tensor_flops={"bf16": 10}, load_sectors=4, num_warps=4,
                 atomic_max_multiplicity=7, programs=1)
    b = Counters(instructions={"fp_add": 1, "special": 2}, load_sectors=8, num_warps=8,
                 atomic_max_multiplicity=3, programs=2)
    total = sum([a, b])
    assert total.instructions == {"fp_add": 4, "special": 2}
    assert total.load_sectors == 12 and total.programs == 3
    assert total.num_warps == 8 and total.atomic_max_multiplicity == 7  # max, not sum
    data = total.as_dict()
    assert json.loads(json.dumps(data))["flops"] == 10
    assert Counters.from_dict(data) == total
