"""Roofline picture of a profile: each launch at (FLOP per DRAM byte, modeled FLOP/s) under the
DRAM and compute roofs of the machine it was modeled on. Optional: needs matplotlib."""

from __future__ import annotations

import os
from collections.abc import Sequence

from simulator.specs import get_spec

_MISSING = ("prof.roofline() draws with matplotlib, which is not installed; "
            "install it with `pip install matplotlib` (or `pip install wavetile[plot]`)")


def plot_roofline(records: Sequence, path: str | os.PathLike[str]) -> None:
    """Save the roofline PNG to `path`; raises ImportError with an install hint without matplotlib."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError as exc:
        raise ImportError(_MISSING) from exc

    fig, ax = plt.subplots(figsize=(7, 5))
    points = [(r, r.totals) for r in records if r.modeled_seconds > 0]
    intensities = [c.flops / c.dram_bytes for _, c in points if c.dram_bytes and c.flops]
    lo = min(intensities + [0.1]) / 4
    hi = max(intensities + [1000.0]) * 4
    for name in sorted({r.machine for r, _ in points}):
        spec = get_spec(name)
        bandwidth = spec.dram_bytes_per_s * spec.dram_efficiency
        for label, peak in (("fp32", spec.peak_fp32_flops), ("tensor fp16", spec.peak_tensor_flops("fp16"))):
            ridge = peak / bandwidth
            xs = [lo, ridge, hi]
            ax.plot(xs, [min(peak, x * bandwidth) for x in xs], label=f"{name} {label}", linewidth=1)
    for r, c in points:
        if c.dram_bytes and c.flops:
            x = c.flops / c.dram_bytes
            ax.scatter([x], [c.flops / r.modeled_seconds], s=20)
            ax.annotate(f"{r.kernel} ({r.machine})", (x, c.flops / r.modeled_seconds), fontsize=7)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("arithmetic intensity (FLOP / DRAM byte)")
    ax.set_ylabel("modeled FLOP/s")
    ax.legend(fontsize=7)
    ax.set_title("wavetile roofline (modeled)")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
