"""Chrome trace export: the modeled schedule of a profile as Trace Event Format JSON.

Layout (research/simulator.md §5): process 0 is the device (one slice per launch on track 0, and
counter tracks "L2 hit rate" and "DRAM bandwidth"); process u + 1 is compute unit u, ordered by
process_sort_index, with one thread per program slot (0 .. programs per unit - 1). Each program
is an X slice on its unit and slot, placed by the model's wave schedule: launches run back to
back, each begins with its launch overhead, wave k starts when wave k-1 ends, and program i of
a wave goes to unit i mod active_units, slot i div active_units. Time is in microseconds.

Big grids would give millions of slices; past `max_events` consecutive full waves are merged
into one slice per slot (args.programs says how many programs it stands for).
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence

from simulator.cost import WaveTiming

US = 1e6


def chrome_trace(records: Sequence, max_events: int = 200_000) -> dict:
    """The trace as a dict ({"traceEvents": [...], "displayTimeUnit": "ns", "metadata": {...}})."""
    events: list[dict] = []
    units = max((r.estimate.units for r in records if r.estimate), default=0)
    slots = max((r.estimate.occupancy.programs_per_unit for r in records if r.estimate), default=0)
    events += _metadata(units, slots, records)
    budget = max(1, max_events // max(1, len(records)))
    t = 0.0
    for index, r in enumerate(records):
        start_us, duration_us = t * US, r.modeled_seconds * US
        events.append({"name": r.kernel, "cat": "launch", "ph": "X", "pid": 0, "tid": 0,
                       "ts": start_us, "dur": duration_us,
                       "args": {"launch": index, "grid": list(r.grid), "machine": r.machine,
                                "bound": r.bound, "sampled": r.sampled, "modeled_us": duration_us,
                                "cpu_us": r.cpu_seconds * US}})
        events += _counters(r, start_us, duration_us)
        if r.estimate is not None:
            body_start = t + r.estimate.components.get("launch", 0.0)
            events += _programs(r, index, body_start, budget)
        t += r.modeled_seconds
    return {"traceEvents": events, "displayTimeUnit": "ns",
            "metadata": {"generator": "wavetile simulator", "launches": len(records)}}


def write_chrome_trace(records: Sequence, path: str | os.PathLike[str], max_events: int = 200_000) -> None:
    """Write chrome_trace(records) to `path` as JSON."""
    with open(path, "w", encoding="utf-8") as f:
        json.dump(chrome_trace(records, max_events), f)


def _metadata(units: int, slots: int, records: Sequence) -> list[dict]:
    machines = sorted({r.machine for r in records})
    events = [{"name": "process_name", "ph": "M", "pid": 0, "tid": 0,
               "args": {"name": f"device ({', '.join(machines)})"}},
              {"name": "process_sort_index", "ph": "M", "pid": 0, "tid": 0, "args": {"sort_index": 0}},
              {"name": "thread_name", "ph": "M", "pid": 0, "tid": 0, "args": {"name": "launches"}}]
    for u in range(units):
        events.append({"name": "process_name", "ph": "M", "pid": u + 1, "tid": 0,
                       "args": {"name": f"unit {u}"}})
        events.append({"name": "process_sort_index", "ph": "M", "pid": u + 1, "tid": 0,
                       "args": {"sort_index": u + 1}})
        for s in range(slots):
            events.append({"name": "thread_name", "ph": "M", "pid": u + 1, "tid": s,
                           "args": {"name": f"slot {s}"}})
    return events


def _counters(record, start_us: float, duration_us: float) -> list[dict]:
    """Counter samples at the launch's start, and back to zero at its end."""
    c = record.totals
    body = max(record.modeled_seconds - (record.estimate.components.get("launch", 0.0) if record.estimate else 0.0),
               1e-12)
    hit = {"hit %": round(100 * c.l2_hit_rate, 3)}
    bandwidth = {"GB/s": round(c.dram_bytes / body / 1e9, 3)}
    out = []
    for ts, scale in ((start_us, 1), (start_us + duration_us, 0)):
        out.append({"name": "L2 hit rate", "ph": "C", "pid": 0, "tid": 0, "ts": ts,
                    "args": {k: v * scale for k, v in hit.items()}})
        out.append({"name": "DRAM bandwidth", "ph": "C", "pid": 0, "tid": 0, "ts": ts,
                    "args": {k: v * scale for k, v in bandwidth.items()}})
    return out


def _programs(record, index: int, body_start: float, budget: int) -> list[dict]:
    """X slices of the programs of one launch, merging full waves when over budget."""
    schedule: tuple[WaveTiming, ...] = record.estimate.schedule
    slices = sum(w.programs for w in schedule)
    group = max(1, -(-slices // budget))
    out: list[dict] = []
    k = 0
    while k < len(schedule):
        wave = schedule[k]
        same = 1
        while (same < group and k + same < len(schedule)
               and schedule[k + same].programs == wave.programs
               and schedule[k + same].active_units == wave.active_units):
            same += 1
        last = schedule[k + same - 1]
        ts = (body_start + wave.start_s) * US
        dur = (last.start_s + last.seconds - wave.start_s) * US
        top = max(wave.components, key=wave.components.get) if wave.components else ""
        for i in range(wave.programs):
            unit, slot = i % wave.active_units, i // wave.active_units
            out.append({"name": record.kernel, "cat": "program", "ph": "X", "pid": unit + 1, "tid": slot,
                        "ts": ts, "dur": dur,
                        "args": {"launch": index, "waves": f"{k}-{k + same - 1}" if same > 1 else k,
                                 "programs": same, "wave_bound": top}})
        k += same
    return out
