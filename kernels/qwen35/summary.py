"""A profile of a model run summed per op family: launches, modeled time, share of the total and the bound that
takes most of the family's time; and the memory a run holds."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass


@dataclass(frozen=True)
class FamilyRow:
    family: str
    launches: int
    seconds: float
    share: float
    bound: str
    sampled: bool


def per_family(launches, labels: list[str]) -> list[FamilyRow]:
    """Rows by descending modeled time; `labels[i]` is launch i's family (kernels.qwen35.families)."""
    if len(labels) != len(launches):
        raise ValueError(f"{len(labels)} labels for {len(launches)} launches")
    seconds: dict[str, float] = defaultdict(float)
    count: dict[str, int] = defaultdict(int)
    by_bound: dict[str, dict[str, float]] = defaultdict(lambda: defaultdict(float))
    sampled: dict[str, bool] = defaultdict(bool)
    for record, label in zip(launches, labels):
        seconds[label] += record.modeled_seconds
        count[label] += 1
        by_bound[label][record.bound] += record.modeled_seconds
        sampled[label] |= bool(record.sampled)
    total = sum(seconds.values()) or 1.0
    rows = [FamilyRow(f, count[f], seconds[f], seconds[f] / total, max(by_bound[f], key=by_bound[f].get), sampled[f])
            for f in seconds]
    return sorted(rows, key=lambda r: -r.seconds)


def table(rows: list[FamilyRow], machine: str) -> str:
    """Aligned text: family, launches, modeled µs ('~' where sampled), share, bound."""
    lines = [("op family", "launches", f"{machine} us", "share", "bound")]
    for r in rows:
        lines.append((r.family, str(r.launches), f"{'~' if r.sampled else ''}{r.seconds * 1e6:.1f}",
                      f"{100 * r.share:.1f}%", r.bound))
    total = sum(r.seconds for r in rows)
    lines.append(("total", str(sum(r.launches for r in rows)), f"{total * 1e6:.1f}", "100.0%", ""))
    widths = [max(len(line[i]) for line in lines) for i in range(5)]
    text = []
    for i, line in enumerate(lines):
        cells = zip(line, widths)
        text.append("  ".join(c.rjust(w) if j in (1, 2, 3) else c.ljust(w) for j, (c, w) in enumerate(cells)))
        if i == 0 or i == len(lines) - 2:
            text.append("  ".join("-" * w for w in widths))
    return "\n".join(text)


def human_bytes(n: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(n) < 1024 or unit == "TiB":
            return f"{n:.1f} {unit}" if unit != "B" else f"{int(n)} B"
        n /= 1024
    return f"{n:.1f} TiB"
