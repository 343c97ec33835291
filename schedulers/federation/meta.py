"""A meta-scheduler between clients and sites, and a hierarchy of them.

Every job goes through the meta-scheduler, so unlike an observational
client it knows what it sent each site since that site's last publication.
It keeps a per-site backlog estimate (a fluid model, in slot-seconds):

    backlog = published queued + running work, at the publication's time,
              + every job sent since, each added when sent,
              - capacity x elapsed time (work drains at ``capacity`` per
                second while there is any; ``drain=False`` turns this off,
                leaving the webfarm's "reported + sent" estimate),

and routes each job to the site with the earliest estimated start,
backlog / capacity. Adding each job as it is sent is what stops herding:
the site it chose looks worse to the very next job. On a steady stream this
water-fills, sending work in proportion to capacity.

Hierarchy: ``tree`` nests site ids in lists (``[[0, 1], [2, [3, 4]]]``);
each level chooses the child whose subtree has the lowest summed backlog
per summed capacity, i.e. each level sees its children as single big sites,
as a real upper level only sees summaries from the level below. All levels
here share one book (so the summaries are as fresh as the leaves'); an
upper level learning summaries late is not modelled.

Failure is pure: ``fail()``/``recover()`` flip a flag the shell drives.
While dead the meta-scheduler routes nothing; by the scenario's
``on_failure`` a job either waits at its client (``route`` returns None and
the client retries after recovery) or falls back to its home site. It is a
single point of failure *and* authority: no site chooses for itself.

Contracts: ``route`` calls and publications are fed in non-decreasing time;
a publication older than the one held is ignored; a submission is assumed
to reach its site instantly (a send at or before a publication's time is
taken to be included in it).
"""
from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TypeAlias

import numpy as np

from schedlab.schedulers.federation.bulletin import Publication

Tree: TypeAlias = int | Sequence["Tree"]
ON_FAILURE = ("wait", "home")


def _leaves(node: Tree) -> list[int]:
    return [node] if isinstance(node, int) else [s for child in node for s in _leaves(child)]


class MetaScheduler:
    def __init__(self, capacities: Sequence[float], *, tree: Tree | None = None, drain: bool = True,
                 on_failure: str = "wait") -> None:
        self.capacity = [float(c) for c in capacities]
        if not self.capacity or not all(c > 0 and math.isfinite(c) for c in self.capacity):
            raise ValueError(f"capacities must be positive and finite, got {list(capacities)}")
        if on_failure not in ON_FAILURE:
            raise ValueError(f"on_failure must be one of {ON_FAILURE}, not {on_failure!r}")
        n = len(self.capacity)
        self.tree: Tree = list(range(n)) if tree is None else tree
        if isinstance(self.tree, int) or sorted(_leaves(self.tree)) != list(range(n)):
            raise ValueError(f"the tree must hold every site 0..{n - 1} exactly once, got {self.tree}")
        self.drain, self.on_failure = drain, on_failure
        self.alive = True
        self._base = [(0.0, -math.inf)] * n  # (backlog, at) from the latest publication
        self._pub_at = [-math.inf] * n
        self._sends: list[list[tuple[float, float]]] = [[] for _ in range(n)]  # (at, work) since it
        self._now = [(0.0, -math.inf)] * n  # backlog after the latest send, and when
        self.routed = [0] * n
        self.sent_work = [0.0] * n
        self.held = 0
        self.fell_back = 0

    # ------------------------------------------------------------ state

    def _decay(self, site: int, backlog: float, since: float, until: float) -> float:
        if not self.drain or until <= since:
            return backlog
        return max(0.0, backlog - self.capacity[site] * (until - since))

    def observe(self, pub: Publication) -> None:
        """A site's publication: the backlog restarts from it, replaying
        the sends made after its time. Older than the held one: ignored."""
        s = pub.site
        if pub.at < self._pub_at[s]:
            return
        self._pub_at[s] = pub.at
        self._base[s] = (pub.queued_work + pub.running_work, pub.at)
        self._sends[s] = [(t, w) for t, w in self._sends[s] if t > pub.at]
        b, t = self._base[s]
        for at, w in self._sends[s]:
            b, t = self._decay(s, b, t, at) + w, at
        self._now[s] = (b, t)

    def backlog(self, site: int, now: float) -> float:
        """Estimated slot-seconds of work ahead of a new job at ``site``."""
        b, t = self._now[site]
        return self._decay(site, b, t, now)

    def estimated_start(self, site: int, now: float) -> float:
        return self.backlog(site, now) / self.capacity[site]

    def _sent(self, site: int, work: float, now: float) -> None:
        self._now[site] = (self.backlog(site, now) + work, now)
        self._sends[site].append((now, work))
        self.routed[site] += 1
        self.sent_work[site] += work

    # ------------------------------------------------------------ decisions

    def _score(self, node: Tree, now: float) -> float:
        sites = _leaves(node)
        return sum(self.backlog(s, now) for s in sites) / sum(self.capacity[s] for s in sites)

    def choose(self, now: float, rng: np.random.Generator) -> int:
        """The site a job would go to now (nothing recorded): down the tree,
        at each level the child with the lowest backlog per capacity, ties
        broken uniformly by ``rng``."""
        node = self.tree
        while not isinstance(node, int):
            scores = [self._score(child, now) for child in node]
            low = min(scores)
            tied = [i for i, x in enumerate(scores) if x == low]
            node = node[tied[0] if len(tied) == 1 else int(rng.choice(tied))]
        return node

    def route(self, work: float, now: float, rng: np.random.Generator, home: int | None = None) -> int | None:
        """Where a job of ``work`` slot-seconds goes, recorded as sent.
        Dead: None (``on_failure="wait"``: the client holds it, counted in
        ``held``) or ``home`` (``"home"``: counted in ``fell_back``; the
        meta-scheduler does not see these jobs, which is the point)."""
        if not work >= 0:
            raise ValueError(f"job work must be >= 0, got {work}")
        if not self.alive:
            if self.on_failure == "wait":
                self.held += 1
                return None
            if home is None:
                raise ValueError("the meta-scheduler is down and the job has no home site to fall back to")
            self.fell_back += 1
            return home
        site = self.choose(now, rng)
        self._sent(site, work, now)
        return site

    def fail(self) -> None:
        self.alive = False

    def recover(self) -> None:
        """Back up with its book as it was: stale until sites publish again
        (what a restarted meta-scheduler without persisted state would not
        even have; a shell may build a fresh one instead)."""
        self.alive = True
