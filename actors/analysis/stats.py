"""Small helpers shared by the summary modules."""
from __future__ import annotations

import collections
from typing import Iterable

import numpy as np


def percentiles(values: Iterable[float]) -> dict[str, float | None]:
    a = np.asarray(list(values), dtype=np.float64)
    if a.size == 0:
        return {"p50": None, "p90": None, "p99": None}
    p = np.percentile(a, [50, 90, 99])
    return {"p50": round(float(p[0]), 6), "p90": round(float(p[1]), 6), "p99": round(float(p[2]), 6)}


def by_event(events: Iterable[dict]) -> dict[str, list[dict]]:
    out: dict[str, list[dict]] = collections.defaultdict(list)
    for e in events:
        out[e["event"]].append(e)
    return out
