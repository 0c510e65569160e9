"""Op-family labels for launches: the model wraps each op in `family(...)` so a profile of a whole generation can be
summed per op family (kernel names alone cannot tell a GDN in-projection GEMM from the LM head). Families nest:
`family("gdn")` around `family("conv1d")` labels the conv launches "gdn/conv1d"."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import simulator

_OPEN: list[tuple[simulator.Profile, list[str]]] = []
_PATH: list[str] = []


@contextlib.contextmanager
def labelled(prof: simulator.Profile) -> Iterator[list[str]]:
    """Collect one label per launch of `prof` made inside the block (launches outside any family get 'other')."""
    labels: list[str] = []
    _OPEN.append((prof, labels))
    try:
        yield labels
    finally:
        _OPEN.remove((prof, labels))
        labels.extend(["other"] * (len(prof.launches) - len(labels)))


@contextlib.contextmanager
def family(name: str) -> Iterator[None]:
    """Label the launches made inside the block `name` in every open `labelled` profile."""
    if not _OPEN:
        yield
        return
    outer = "/".join(_PATH) or "other"
    for prof, labels in _OPEN:
        labels.extend([outer] * (len(prof.launches) - len(labels)))
    _PATH.append(name)
    try:
        yield
    finally:
        label = "/".join(_PATH)
        _PATH.pop()
        for prof, labels in _OPEN:
            labels.extend([label] * (len(prof.launches) - len(labels)))
