"""Text reports of a profile: the per-launch table and the hot-lines table.

Kept apart from `profile` (which only collects) so the layout of the numbers can change without
touching the collection path the runtime calls on every launch. Columns are declared as data:
(header, function of the row, alignment).
"""

from __future__ import annotations

import linecache
import os
from collections.abc import Callable, Sequence

from simulator.cost import attribute
from simulator.counters import Counters

SAMPLED_MARK = "~"


def launch_table(records: Sequence) -> str:
    """One row per launch: kernel, grid, config, CPU time, modeled time, bound, FLOPs, DRAM bytes,
    L2 hit rate, sectors per request, bank conflicts, occupancy. Values derived from sampled
    counters carry a leading '~'."""
    if not records:
        return "(no launches recorded)"
    rows = []
    for r in records:
        c = r.totals
        mark = SAMPLED_MARK if r.sampled else ""
        rows.append({
            "kernel": r.kernel,
            "grid": "x".join(str(g) for g in r.grid),
            "config": _config(r),
            "machine": r.machine,
            "cpu": format_seconds(r.cpu_seconds),
            "modeled": mark + format_seconds(r.modeled_seconds),
            "bound": r.bound,
            "flops": mark + format_count(c.flops),
            "dram": mark + format_count(c.dram_bytes, "B"),
            "l2 hit": mark + f"{100 * c.l2_hit_rate:.0f}%",
            "sect/req": mark + f"{c.sectors_per_request:.1f}",
            "conflicts": mark + format_count(c.shared_bank_conflicts),
            "occupancy": f"{100 * r.occupancy:.0f}%",
        })
    text = _render(rows, right={"cpu", "modeled", "flops", "dram", "l2 hit", "sect/req", "conflicts",
                                "occupancy"})
    if any(r.sampled for r in records):
        text += f"\n{SAMPLED_MARK} counters measured on sampled programs and scaled to the grid"
    return text


def line_table(records: Sequence, top: int = 20) -> str:
    """Source lines ranked by the modeled time the cost model attributes to them (all launches)."""
    seconds: dict[tuple[str, int], float] = {}
    counters: dict[tuple[str, int], Counters] = {}
    for r in records:
        if not r.lines or r.estimate is None:
            continue
        for key, share in attribute(r.estimate, r.lines).items():
            seconds[key] = seconds.get(key, 0.0) + share
            counters[key] = counters.get(key, Counters()) + r.lines[key]
    if not seconds:
        return "(no per-line counters recorded)"
    total = sum(seconds.values()) or 1.0
    rows = []
    for key in sorted(seconds, key=seconds.get, reverse=True)[:top]:
        c = counters[key]
        rows.append({
            "line": f"{os.path.basename(key[0])}:{key[1]}",
            "time": format_seconds(seconds[key]),
            "share": f"{100 * seconds[key] / total:.1f}%",
            "instr": format_count(c.warp_instructions),
            "flops": format_count(c.flops),
            "sect/req": f"{c.sectors_per_request:.1f}" if c.global_requests else "-",
            "dram": format_count(c.dram_bytes, "B"),
            "conflicts": format_count(c.shared_bank_conflicts),
            "atomics": format_count(c.atomic_ops),
            "source": linecache.getline(key[0], key[1]).strip()[:60],
        })
    return _render(rows, right={"time", "share", "instr", "flops", "sect/req", "dram", "conflicts", "atomics"})


def format_seconds(seconds: float) -> str:
    """Seconds with a unit a human reads at a glance (ns, us, ms, s)."""
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("us", 1e-6)):
        if seconds >= scale:
            return f"{seconds / scale:.3g} {unit}"
    return f"{seconds / 1e-9:.3g} ns" if seconds else "0"


def format_count(value: float, unit: str = "") -> str:
    """Counts with SI prefixes (1.2M, 3.4 GB)."""
    for prefix, scale in (("T", 1e12), ("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if abs(value) >= scale:
            return f"{value / scale:.3g}{' ' if unit else ''}{prefix}{unit}"
    return f"{value:.0f}{' ' + unit if unit else ''}"


def _config(record) -> str:
    parts = [f"w{record.num_warps}"]
    if record.num_stages:
        parts.append(f"s{record.num_stages}")
    parts += [f"{k}={v}" for k, v in record.constexprs.items()]
    return " ".join(parts)


def _render(rows: list[dict[str, str]], right: set[str]) -> str:
    headers = list(rows[0])
    widths = {h: max(len(h), *(len(row[h]) for row in rows)) for h in headers}
    align: Callable[[str, str], str] = lambda h, v: v.rjust(widths[h]) if h in right else v.ljust(widths[h])
    lines = ["  ".join(align(h, h) for h in headers).rstrip()]
    lines.append("  ".join("-" * widths[h] for h in headers))
    lines += ["  ".join(align(h, row[h]) for h in headers).rstrip() for row in rows]
    return "\n".join(lines)
