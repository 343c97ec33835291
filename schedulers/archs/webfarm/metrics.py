"""Pure aggregation of a web-farm run: latency percentiles, per-server
utilization and imbalance, drops and lost sessions.

Percentiles are nearest-rank (the smallest value with at least q% of the
samples at or below it): always an observed latency, never an interpolation
between two, and honest about small samples (p99.9 of 100 latencies is the
maximum, not a number no request saw).
"""
from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from schedlab.schedulers.archs.webfarm.server import Record


def percentile(values: Sequence[float] | np.ndarray, q: float) -> float:
    """Nearest-rank q-th percentile (0 < q <= 100); nan for no values."""
    if not 0 < q <= 100:
        raise ValueError(f"percentile must be in (0, 100], got {q}")
    a = np.sort(np.asarray(values, dtype=np.float64))
    if a.size == 0:
        return math.nan
    return float(a[max(0, math.ceil(q / 100 * a.size) - 1)])


@dataclass(frozen=True)
class Latency:
    n: int
    mean: float
    p50: float
    p99: float
    p999: float
    max: float


def latency(values: Sequence[float] | np.ndarray) -> Latency:
    a = np.asarray(values, dtype=np.float64)
    if a.size == 0:
        return Latency(0, math.nan, math.nan, math.nan, math.nan, math.nan)
    return Latency(int(a.size), float(a.mean()), percentile(a, 50), percentile(a, 99), percentile(a, 99.9),
                   float(a.max()))


def latencies(records: Iterable[Record]) -> list[float]:
    """Latencies of the finished requests (dropped, lost and unfinished
    ones have none: they are counted, not averaged in)."""
    return [r.latency for r in records if r.finish is not None]


def per_policy(runs: Mapping[str, Iterable[Record]]) -> dict[str, Latency]:
    """Latency summary per policy name, in the mapping's order."""
    return {name: latency(latencies(recs)) for name, recs in runs.items()}


def utilization(busy: Sequence[float], workers: Sequence[int], horizon: float) -> list[float]:
    """Per-server fraction of worker-time busy over ``horizon``."""
    if not horizon > 0:
        raise ValueError(f"horizon must be positive, got {horizon}")
    if len(busy) != len(workers):
        raise ValueError(f"{len(busy)} busy times for {len(workers)} servers")
    return [b / (w * horizon) for b, w in zip(busy, workers)]


def imbalance(busy: Sequence[float]) -> float:
    """max / mean of per-server busy time: 1.0 is perfectly even, n means
    one server did everything. 1.0 for an idle pool (nothing is uneven)."""
    a = np.asarray(busy, dtype=np.float64)
    if a.size == 0 or a.mean() == 0:
        return 1.0
    return float(a.max() / a.mean())


@dataclass(frozen=True)
class Summary:
    policy: str
    latency: Latency
    utilization: tuple[float, ...]
    imbalance: float
    dropped: int  # refused by a full queue, a dead server, or no healthy server
    lost: int  # requests killed by a server crash
    sessions_lost: int


def summarize(policy: str, records: Iterable[Record], busy: Sequence[float], workers: Sequence[int],
              horizon: float, sessions_lost: int = 0, refused: int = 0) -> Summary:
    """One run's numbers. ``refused``: requests the balancer itself turned
    away (no healthy server): they never got a Record."""
    recs = list(records)
    return Summary(policy, latency(latencies(recs)), tuple(utilization(busy, workers, horizon)), imbalance(busy),
                   sum(r.dropped for r in recs) + refused, sum(r.lost for r in recs), sessions_lost)
