"""Open-loop request arrivals for a web farm: sessions arrive (Poisson, or
bursty on/off), each session sends a skewed number of requests separated
by think times, and each request carries a service demand (seconds of work
on a speed-1 server).

Open loop, on purpose: a session's next request is due a think time after
its previous request *was sent*, not after its response came back. Arrivals
therefore do not slow down when the farm does, which is what exposes queueing
collapse (a closed loop hides it by throttling itself). The price: a
session's requests may overlap at the server when responses are slower than
think times; the farm sees that as a user clicking ahead.

Everything is drawn from the Generator passed in, in a fixed order, so the
same spec, horizon and seed give the identical list.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from schedlab.schedulers.model.workload import Dist as GenDist, on_off_times

DISTS = ("const", "exp", "lognormal", "pareto")


@dataclass(frozen=True, order=True)
class Request:
    """One request as the balancer sees it. Ordered by (time, session,
    index): ties in time break by session then index, so sorting is
    deterministic."""

    time: float
    session: int
    index: int  # 0 for a session's first request
    demand: float  # seconds of work on a speed-1 server


@dataclass(frozen=True)
class Dist:
    """A positive distribution given by its ``mean``:

    * ``const``: always ``mean``;
    * ``exp``: exponential;
    * ``lognormal``: log-normal with log-space std ``shape`` (> 0), scaled
      so its mean is ``mean`` (heavy body, all moments finite);
    * ``pareto``: Pareto with tail index ``shape`` (> 1, so the mean is
      finite), scaled so its mean is ``mean``; its minimum is
      ``mean * (shape - 1) / shape``. ``shape`` <= 2 has infinite variance:
      a few huge values dominate, which is the point of a skewed workload.
    """

    kind: str = "exp"
    mean: float = 1.0
    shape: float = 1.0

    def __post_init__(self) -> None:
        if self.kind not in DISTS:
            raise ValueError(f"distribution kind must be one of {DISTS}, not {self.kind!r}")
        if not (self.mean > 0 and math.isfinite(self.mean)):
            raise ValueError(f"distribution mean must be positive and finite, got {self.mean}")
        if self.kind == "lognormal" and not self.shape > 0:
            raise ValueError(f"lognormal shape (log-space std) must be positive, got {self.shape}")
        if self.kind == "pareto" and not self.shape > 1:
            raise ValueError(f"pareto shape (tail index) must be > 1 for a finite mean, got {self.shape}")

    def sample(self, rng: np.random.Generator, n: int) -> np.ndarray:
        if self.kind == "const":
            return np.full(n, self.mean)
        if self.kind == "exp":
            return rng.exponential(self.mean, n)
        if self.kind == "lognormal":
            s = self.shape
            return rng.lognormal(math.log(self.mean) - s * s / 2, s, n)
        xm = self.mean * (self.shape - 1) / self.shape
        return xm * (1.0 + rng.pareto(self.shape, n))  # numpy's pareto is Lomax: shift by 1


@dataclass(frozen=True)
class Arrivals:
    """When sessions start. ``poisson``: rate ``rate`` per second. ``onoff``:
    a two-state Markov-modulated Poisson process, ``rate`` while on and
    ``off_rate`` while off, on and off periods exponential with means
    ``mean_on`` and ``mean_off``; it starts on. Its mean rate is
    ``(rate*mean_on + off_rate*mean_off) / (mean_on + mean_off)``."""

    kind: str = "poisson"
    rate: float = 1.0
    off_rate: float = 0.0
    mean_on: float = 1.0
    mean_off: float = 1.0

    def __post_init__(self) -> None:
        if self.kind not in ("poisson", "onoff"):
            raise ValueError(f"arrivals kind must be 'poisson' or 'onoff', not {self.kind!r}")
        if not self.rate > 0:
            raise ValueError(f"arrival rate must be positive, got {self.rate}")
        if self.off_rate < 0:
            raise ValueError(f"off-period rate must be >= 0, got {self.off_rate}")
        if self.kind == "onoff" and not (self.mean_on > 0 and self.mean_off > 0):
            raise ValueError(f"on/off mean durations must be positive, got {self.mean_on}, {self.mean_off}")

    def mean_rate(self) -> float:
        if self.kind == "poisson":
            return self.rate
        return (self.rate * self.mean_on + self.off_rate * self.mean_off) / (self.mean_on + self.mean_off)

    def times(self, horizon: float, rng: np.random.Generator) -> list[float]:
        """Session start times in [0, horizon), ascending."""
        out: list[float] = []
        if self.kind == "poisson":
            t = rng.exponential(1.0 / self.rate)
            while t < horizon:
                out.append(float(t))
                t += rng.exponential(1.0 / self.rate)
            return out
        off = GenDist("exponential", mean=1.0 / self.off_rate) if self.off_rate > 0 else None
        return on_off_times(rng, GenDist("exponential", mean=1.0 / self.rate), self.mean_on, self.mean_off, horizon,
                            off_gap=off)


@dataclass(frozen=True)
class Workload:
    """Sessions arriving by ``arrivals``; each sends ``length`` requests
    (rounded up to an integer, so >= 1 for any positive draw), ``think``
    seconds apart, each of demand ``demand``. ``max_length`` caps a
    session (a Pareto tail otherwise yields the occasional million-request
    session); None leaves it uncapped."""

    arrivals: Arrivals = Arrivals()
    length: Dist = Dist("const", 1.0)
    think: Dist = Dist("exp", 1.0)
    demand: Dist = Dist("exp", 1.0)
    max_length: int | None = None

    def __post_init__(self) -> None:
        if self.max_length is not None and self.max_length < 1:
            raise ValueError(f"max session length must be >= 1, got {self.max_length}")

    def mean_request_rate(self) -> float:
        """Requests per second in the long run (ignoring ``max_length`` and
        the rounding up of lengths): for setting a target load."""
        return self.arrivals.mean_rate() * self.length.mean

    def generate(self, horizon: float, rng: np.random.Generator) -> list[Request]:
        """Every request sent before ``horizon`` by sessions started before
        it, sorted. Draw order: start times, then lengths, then per session
        its think times and demands, so a spec change in one stream does not
        reshuffle the others more than it must."""
        if not horizon > 0:
            raise ValueError(f"horizon must be positive, got {horizon}")
        starts = self.arrivals.times(horizon, rng)
        lengths = session_lengths(self.length, len(starts), rng, self.max_length)
        out: list[Request] = []
        for sid, (t0, n) in enumerate(zip(starts, lengths.tolist())):
            gaps = self.think.sample(rng, n - 1)
            demands = self.demand.sample(rng, n)
            t = t0
            for i in range(n):
                if i:
                    t += float(gaps[i - 1])
                if t >= horizon:
                    break
                out.append(Request(t, sid, i, float(demands[i])))
        out.sort()
        return out


def session_lengths(dist: Dist, n: int, rng: np.random.Generator, cap: int | None = None) -> np.ndarray:
    """``n`` session lengths: draws rounded up to integers (any positive
    draw gives >= 1). A length must be positive: a draw of 0 or less (a
    degenerate ``dist`` built around the checks) raises rather than
    silently making an empty session."""
    raw = np.ceil(dist.sample(rng, n))
    if n and not (raw >= 1).all():
        raise ValueError(f"session lengths must be positive, got {raw.min()}")
    lengths = raw.astype(np.int64)
    return np.minimum(lengths, cap) if cap is not None else lengths
