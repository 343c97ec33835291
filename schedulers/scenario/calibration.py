"""Measured message latencies as a scenario's ``[substrate] latency`` table.

The pure half of ``schedlab calibrate`` (the measuring is
``actors.calibrate``, the command ``cli.calibrate``): a spread of
samples (percentiles), samples binned into an ``empirical`` distribution,
wall seconds turned into emulated ones, and the TOML text a scenario
reads. No Ray, no clock, no I/O.

Units: the samples are *wall* seconds (what the live substrate took); a
scenario's latency is in *emulated* seconds, ``emulated = wall x
time_scale``, so a table is right only for the time scale it was made for
(the sim engine divides by the run's own scale again, and so delivers a
message after the measured wall delay exactly when the scales agree).
"""
from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np

from schedlab.schedulers.model.workload import Dist

STALL_RATIO = 3.0  # mean over median beyond which a few stalled messages carry the distribution
BINS = 32  # log-spaced between the fastest and the slowest sample: ~15% wide for a 100x spread
DIGITS = 4  # significant digits kept of each bin's value


@dataclass(frozen=True)
class Spread:
    """Where a sample's values lie (in its own unit)."""

    n: int
    mean: float
    min: float
    p50: float
    p90: float
    p99: float
    p999: float
    max: float

    def scaled(self, factor: float) -> Spread:
        """The same spread in another unit (seconds to ms: 1e3)."""
        return Spread(self.n, *(v * factor for v in (self.mean, self.min, self.p50, self.p90, self.p99, self.p999, self.max)))


def _positive(samples: Iterable[float], what: str) -> np.ndarray:
    a = np.asarray(list(samples), dtype=np.float64)
    if a.size == 0:
        raise ValueError(f"{what}: no samples")
    if not np.all(np.isfinite(a)) or np.any(a <= 0):
        raise ValueError(f"{what}: every sample must be a finite number > 0")
    return a


def spread(samples: Iterable[float]) -> Spread:
    """Mean, extremes and the 50th, 90th, 99th and 99.9th percentiles
    (numpy's linear interpolation) of positive samples."""
    a = _positive(samples, "spread")
    p50, p90, p99, p999 = (float(x) for x in np.percentile(a, [50, 90, 99, 99.9]))
    return Spread(int(a.size), float(a.mean()), float(a.min()), p50, p90, p99, p999, float(a.max()))


def stalled(s: Spread) -> bool:
    """Whether a few very slow messages carry the sample (mean several
    times the median): a pause of the whole machine during the measuring
    (other load, Ray starting workers). Such a pause delays consecutive
    messages together, but a table's draws are independent, so a sim run
    would spread it over every channel for the whole run."""
    return s.mean > STALL_RATIO * s.p50


def significant(x: float, digits: int = DIGITS) -> float:
    """``x`` rounded to ``digits`` significant digits."""
    return float(f"{x:.{digits - 1}e}")


def empirical(samples: Iterable[float], bins: int = BINS, digits: int = DIGITS) -> Dist:
    """Positive samples as an ``empirical`` Dist: log-spaced bins from the
    smallest to the largest sample, each non-empty one a value (the mean of
    its samples, so the table's mean is the samples' to ``digits``) weighted
    by how many fell in it. Log spacing keeps the tail, where a latency's
    trouble lives, in as much detail as the body."""
    if bins < 1:
        raise ValueError(f"bins: must be >= 1 (got {bins})")
    a = np.sort(_positive(samples, "empirical"))
    lo, hi = float(a[0]), float(a[-1])
    if hi <= lo * (1 + 1e-12):
        return Dist("empirical", values=(significant(float(a.mean()), digits),), weights=(float(a.size),))
    edges = np.geomspace(lo, hi, bins + 1)
    # Bin i holds edges[i] <= x < edges[i+1]; the last one holds its top edge too.
    which = np.clip(np.searchsorted(edges, a, side="right") - 1, 0, bins - 1)
    counts = np.bincount(which, minlength=bins)
    sums = np.bincount(which, weights=a, minlength=bins)
    keep = counts > 0
    values = tuple(significant(float(s / c), digits) for s, c in zip(sums[keep], counts[keep]))
    return Dist("empirical", values=values, weights=tuple(float(c) for c in counts[keep]))


def to_emulated(wall_seconds: Sequence[float], time_scale: float) -> list[float]:
    """Wall seconds as emulated seconds at ``time_scale`` (emulated per wall)."""
    if not (time_scale > 0 and math.isfinite(time_scale)):
        raise ValueError(f"time_scale: must be a finite number > 0 (got {time_scale!r})")
    return [float(w) * time_scale for w in wall_seconds]


def _number(x: float) -> str:
    return repr(float(x)).removesuffix(".0")


def dist_toml(dist: Dist) -> str:
    """An empirical Dist as a TOML inline table (what ``read_dist`` reads)."""
    if dist.kind != "empirical":
        raise ValueError(f"dist_toml: only empirical tables (got {dist.kind!r})")
    values = ", ".join(_number(v) for v in dist.values)
    weights = ", ".join(_number(w) for w in dist.weights)
    return f'{{ dist = "empirical", values = [{values}], weights = [{weights}] }}'


def latency_toml(dist: Dist, comment: Sequence[str] = (), time_scale: float | None = None) -> str:
    """A scenario fragment: the comment lines, ``time_scale`` (the scale
    the table's emulated seconds are for, when given), then ``[substrate]``
    with ``latency`` = the table. A scenario uses it with ``include =
    ["this.toml"]`` (which refuses it for a scenario at another scale),
    by pasting it in, or by passing the table with ``--set
    substrate.latency=...``."""
    head = "".join(f"# {line}".rstrip() + "\n" for line in comment)
    scale = f"time_scale = {_number(time_scale)}\n\n" if time_scale is not None else ""
    return f"{head}{scale}[substrate]\nlatency = {dist_toml(dist)}\n"
