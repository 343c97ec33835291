"""Load-balancer policies: which healthy server gets the next request.

Contract shared by every policy::

    policy.pick(healthy, book, rng) -> server

``healthy`` is the non-empty list of servers in the pool, ascending;
``book`` is the balancer's ``LoadBook`` (what it knows of each server's
load, and how fresh that is); randomness only through ``rng``, so a policy
is deterministic given a seeded Generator. Policies keep their own cursor
state (round robin) and must not be shared between balancers.

Session handling sits on top (``Sticky``, ``Cookie``, ``Stateless``): it
decides whether a request is balanced on its own or follows its session.

Why both stale and fresh load: a real balancer learns a server's load from
periodic reports (agent, health-check payload), so its view lags. Sending
every request to the server that *reported* the least load herds them all
onto it until the next report (Mitzenmacher, "How useful is old information?",
IEEE TPDS 2000). Two remedies are modelled: counting the requests sent since
the last report (``reported+sent``, what nginx/HAProxy effectively do with
their own connection counts), and sampling only d servers (power of d
choices), which spreads requests even on stale data.
"""
from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Protocol

import numpy as np

INFOS = ("fresh", "reported", "reported+sent")


class LoadBook:
    """The balancer's view of server loads: the last report of each server
    and how many requests the balancer sent it since that report;
    ``fresh`` (optional) reads the true load, the ideal no real balancer
    has."""

    def __init__(self, n_servers: int, fresh: Callable[[int], float] | None = None) -> None:
        self.n = n_servers
        self.reported = [0.0] * n_servers
        self.at = [-math.inf] * n_servers
        self.sent = [0] * n_servers
        self.fresh = fresh

    def report(self, server: int, load: float, at: float) -> None:
        """A load report taken at ``at``. An older report arriving late (a
        reordered message) is ignored: it would undo a newer one. The
        sent-since-report count restarts: the report includes those."""
        if at < self.at[server]:
            return
        self.reported[server], self.at[server], self.sent[server] = float(load), at, 0

    def sent_to(self, server: int) -> None:
        self.sent[server] += 1

    def estimate(self, server: int, info: str) -> float:
        if info == "fresh":
            if self.fresh is None:
                raise ValueError("fresh load needs a LoadBook built with a fresh-load source")
            return float(self.fresh(server))
        if info == "reported":
            return self.reported[server]
        return self.reported[server] + self.sent[server]


class Policy(Protocol):
    def pick(self, healthy: Sequence[int], book: LoadBook, rng: np.random.Generator) -> int: ...


def _check_info(info: str) -> None:
    if info not in INFOS:
        raise ValueError(f"load information must be one of {INFOS}, not {info!r}")


def _check_weights(weights: Sequence[float]) -> list[float]:
    w = [float(x) for x in weights]
    if not w:
        raise ValueError("weights must not be empty")
    bad = [(i, x) for i, x in enumerate(w) if not (x > 0 and math.isfinite(x))]
    if bad:
        raise ValueError(f"weights must be positive and finite; server {bad[0][0]} has {bad[0][1]}")
    return w


class RoundRobin:
    """Each healthy server in turn, by ascending id. The cursor is the last
    server chosen, not a position in the list, so a server leaving or
    rejoining the pool does not make the rotation skip or repeat others."""

    def __init__(self) -> None:
        self.last = -1

    def pick(self, healthy: Sequence[int], book: LoadBook, rng: np.random.Generator) -> int:
        nxt = next((s for s in healthy if s > self.last), healthy[0])
        self.last = nxt
        return nxt


class WeightedRoundRobin:
    """nginx's smooth weighted round robin: each pick adds every healthy
    server's weight to its current score, takes the highest (lowest id on a
    tie) and subtracts the total weight from it. Over a cycle server i gets
    exactly w_i of sum(w) picks, interleaved: weights 5,1,1 give
    a a b a c a a, never a burst of five a's (which would queue at a)."""

    def __init__(self, weights: Sequence[float]) -> None:
        self.weights = _check_weights(weights)
        self.current = [0.0] * len(self.weights)

    def pick(self, healthy: Sequence[int], book: LoadBook, rng: np.random.Generator) -> int:
        total, best = 0.0, -1
        for s in healthy:
            self.current[s] += self.weights[s]
            total += self.weights[s]
            if best < 0 or self.current[s] > self.current[best]:
                best = s
        self.current[best] -= total
        return best


class LeastLoaded:
    """The server with the least load per unit weight, as the balancer
    knows it (``info``: fresh, reported, or reported + sent since the
    report). Ties go to the first tied server after the last one chosen,
    so an idle pool is served in rotation rather than all at server 0."""

    def __init__(self, info: str = "fresh", weights: Sequence[float] | None = None) -> None:
        _check_info(info)
        self.info = info
        self.weights = _check_weights(weights) if weights is not None else None
        self.last = -1

    def pick(self, healthy: Sequence[int], book: LoadBook, rng: np.random.Generator) -> int:
        k = next((i for i, s in enumerate(healthy) if s > self.last), 0)
        best, best_v = -1, math.inf
        for s in list(healthy[k:]) + list(healthy[:k]):
            v = book.estimate(s, self.info) / (self.weights[s] if self.weights else 1.0)
            if v < best_v:
                best, best_v = s, v
        self.last = best
        return best


class PowerOfD:
    """Sample ``d`` distinct healthy servers uniformly, send to the least
    loaded of them (``info`` as in LeastLoaded; ties to the one sampled
    first). d = 2 already gets most of the benefit of full least-loaded
    on fresh data and, on stale data, does not herd: only the sampled
    servers can receive the request."""

    def __init__(self, d: int = 2, info: str = "reported") -> None:
        if d < 1:
            raise ValueError(f"power of d choices needs d >= 1, got {d}")
        _check_info(info)
        self.d = d
        self.info = info

    def pick(self, healthy: Sequence[int], book: LoadBook, rng: np.random.Generator) -> int:
        # Fewer healthy servers than d (some failed): sample them all. The
        # scenario's d is checked against the pool at parse time; at run time
        # health checks shrink the pool and routing must go on.
        sample = rng.choice(np.asarray(healthy), size=min(self.d, len(healthy)), replace=False).tolist()
        return min(sample, key=lambda s: book.estimate(s, self.info))  # min keeps the first of equals


POLICIES = ("rr", "wrr", "least", "pod")


def build(name: str, n_servers: int, *, weights: Sequence[float] | None = None, d: int = 2,
          info: str = "reported") -> Policy:
    """A policy from a spec's words, checked against the pool size up
    front so a bad config fails at parse time (the parser turns the
    ValueError into exit 2), not on the first request."""
    if n_servers < 1:
        raise ValueError(f"a pool needs at least one server, got {n_servers}")
    if weights is not None and len(weights) != n_servers:
        raise ValueError(f"{len(weights)} weights for {n_servers} servers")
    if name == "rr":
        return RoundRobin()
    if name == "wrr":
        return WeightedRoundRobin(weights if weights is not None else [1.0] * n_servers)
    if name == "least":
        return LeastLoaded(info, weights)
    if name == "pod":
        if d > n_servers:
            raise ValueError(f"power of d choices: d={d} is more than the {n_servers} servers")
        return PowerOfD(d, info)
    raise ValueError(f"policy must be one of {POLICIES}, not {name!r}")


# ---------------------------------------------------------------- sessions


class Stateless:
    """Request-level balancing of requests with no session state."""

    carries_state = False

    def __init__(self, inner: Policy) -> None:
        self.inner = inner

    def route(self, session: int, healthy: Sequence[int], book: LoadBook,
              rng: np.random.Generator) -> tuple[int, bool]:
        """(server, session lost): never lost, nothing is kept."""
        return self.inner.pick(healthy, book, rng), False


class Cookie(Stateless):
    """Session state travels in a cookie: each request is balanced on its
    own by ``inner`` and pays the state-transfer cost at whichever server
    gets it. No session can be lost to a server failure."""

    carries_state = True


class Sticky:
    """Session affinity: a session's first request goes where ``first``
    (round robin by default) sends it; every later one to the same server,
    which holds its state in memory. If that server has left the pool, the
    session's state is gone: the session is lost (counted once per loss)
    and re-assigned as if new. The balancing is only as good as the
    session mix: a few long sessions pin load where they started."""

    carries_state = False

    def __init__(self, first: Policy | None = None) -> None:
        self.first = first if first is not None else RoundRobin()
        self.home: dict[int, int] = {}
        self.lost = 0

    def route(self, session: int, healthy: Sequence[int], book: LoadBook,
              rng: np.random.Generator) -> tuple[int, bool]:
        """(server, session lost just now)."""
        home = self.home.get(session)
        if home is not None and home in healthy:
            return home, False
        lost = home is not None
        if lost:
            self.lost += 1
        s = self.first.pick(healthy, book, rng)
        self.home[session] = s
        return s, lost

    def end(self, session: int) -> None:
        """The session is over: forget its server (bounds the table)."""
        self.home.pop(session, None)
