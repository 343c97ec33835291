"""Peer-to-peer load sharing: the sender-initiated threshold policy.

Eager, Lazowska and Zahorjan ("Adaptive load sharing in homogeneous
distributed systems", IEEE TSE 12(5), 1986) compare three location policies
under one transfer policy; this is their *Threshold* policy, the one that
gets most of the benefit with very little state:

* transfer policy: a job arriving at a site whose load is above
  ``threshold`` is a candidate for transfer (only arriving jobs move: no
  preemption, a started or queued job stays);
* location policy: probe up to ``probe_limit`` distinct peers, chosen
  uniformly at random, one at a time; send the job to the first whose load
  is below ``threshold``; if none is, keep the job;
* a transferred job arrives ``transfer_delay`` seconds later and is judged
  again on arrival, unless it has already moved ``max_transfers`` times
  (then it stays wherever it is: no ping-pong). ``max_transfers = 1`` is the
  paper's rule that a transferred job must be processed where it lands.

The load measure is the caller's: ``probe(peer)`` returns the peer's load
*now* (a probe is a fresh round trip), in whatever unit ``threshold`` is in
(jobs at the site, Eager's queue length; or queued work / capacity). The
same measure is applied to the site deciding. ``load_of`` computes both.

Contracts: transfer only when the deciding site's load > ``threshold`` and
the job has moved fewer than ``max_transfers`` times; only to a probed peer
whose load < ``threshold``; never to the deciding site itself; at most
``probe_limit`` probes per decision, all counted.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

MEASURES = ("jobs", "work")


def load_of(measure: str, *, jobs: int, queued_work: float, capacity: float) -> float:
    """A site's load in ``measure``: ``"jobs"`` (queued + running, Eager
    et al.'s queue length) or ``"work"`` (queued work / capacity, seconds)."""
    if measure == "jobs":
        return float(jobs)
    if measure == "work":
        return queued_work / capacity
    raise ValueError(f"load measure must be one of {MEASURES}, not {measure!r}")


@dataclass(frozen=True)
class Decision:
    """Keep the job (``to`` is None) or send it to ``to``, arriving at
    ``arrive_at``; ``probed`` lists the peers probed, in order."""

    to: int | None
    arrive_at: float
    probed: tuple[int, ...]


class ThresholdSharing:
    def __init__(self, n_sites: int, *, threshold: float, probe_limit: int = 3, max_transfers: int = 1,
                 transfer_delay: float = 0.0) -> None:
        if n_sites < 1:
            raise ValueError(f"need at least one site, got {n_sites}")
        if probe_limit < 0 or max_transfers < 0:
            raise ValueError(f"probe_limit and max_transfers must be >= 0, got {probe_limit}, {max_transfers}")
        if not transfer_delay >= 0:
            raise ValueError(f"transfer delay must be >= 0 s, got {transfer_delay}")
        self.n, self.threshold = n_sites, threshold
        self.probe_limit, self.max_transfers, self.transfer_delay = probe_limit, max_transfers, transfer_delay
        self.probes = 0
        self.transfers = 0
        self.kept_over = 0  # candidates that found no peer below the threshold

    def decide(self, site: int, transfers_so_far: int, own_load: float, probe: Callable[[int], float],
               now: float, rng: np.random.Generator) -> Decision:
        """A job arriving at ``site`` at ``now``, having moved
        ``transfers_so_far`` times: keep it, or where to send it."""
        if not 0 <= site < self.n:
            raise ValueError(f"site {site} is not one of the {self.n} sites")
        if own_load <= self.threshold or transfers_so_far >= self.max_transfers or self.n == 1:
            return Decision(None, now, ())
        peers = [p for p in range(self.n) if p != site]
        k = min(self.probe_limit, len(peers))
        order = rng.choice(np.asarray(peers), size=k, replace=False).tolist() if k else []
        probed = []
        for peer in order:
            probed.append(int(peer))
            self.probes += 1
            if probe(int(peer)) < self.threshold:
                self.transfers += 1
                return Decision(int(peer), now + self.transfer_delay, tuple(probed))
        self.kept_over += 1
        return Decision(None, now, tuple(probed))
