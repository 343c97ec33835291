"""Observational scheduling: a client picks a site from the board.

Each client decides alone, on the board's publications (stale by up to the
publish interval), with no coordination and no knowledge of what other
clients just sent. This is the "independent sites, clients choose by
observing published state" way of joining sites: cheap, no single point of
failure, and prone to herding: every client reading the same board computes
the same best site and sends its job there, until the next publication
reveals the pile-up (Mitzenmacher, "How useful is old information?", IEEE
TPDS 2000, for the same effect among servers).

Scores (lower is better; all are estimates of the wait a new job would see,
per unit capacity where that makes sense):

* ``"queue"``: queue_length / capacity (jobs waiting per slot);
* ``"wait"``: recent_wait_p50 (what recent jobs waited; lags the queue);
* ``"start"``: queued_work / capacity (estimated start delay in seconds if
  every slot drained the queue).

Local preference: a client with a home site submits there unless the best
site's score is lower than home's by more than ``margin`` (in the score's
units). ``margin = 0`` is pure best-site choice; a large margin is "always
home". Ties among best sites are broken uniformly by the Generator, so the
choice is deterministic given a seeded Generator and never biased to site 0.
"""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from schedlab.schedulers.federation.bulletin import Board, Publication

SCORES = ("queue", "wait", "start")


def score(pub: Publication, kind: str) -> float:
    """The estimate ``kind`` of a site from its publication (lower is better)."""
    if kind == "queue":
        return pub.queue_length / pub.capacity
    if kind == "wait":
        return pub.recent_wait_p50
    if kind == "start":
        return pub.queued_work / pub.capacity
    raise ValueError(f"score must be one of {SCORES}, not {kind!r}")


def best_sites(pubs: Sequence[Publication], kind: str) -> tuple[list[int], float]:
    """The sites with the lowest score, and that score."""
    if not pubs:
        raise ValueError("no site has published: nothing to choose from")
    scored = [(score(p, kind), p.site) for p in pubs]
    low = min(s for s, _ in scored)
    return [site for s, site in scored if s == low], low


class ObservationalClient:
    """A client's site choice from a board (``score``, ``margin`` as in the
    module docstring). Holds no state between choices: a client does not
    remember what it sent, as an independent grid user does not."""

    def __init__(self, kind: str = "start", margin: float = 0.0) -> None:
        if kind not in SCORES:
            raise ValueError(f"score must be one of {SCORES}, not {kind!r}")
        if not margin >= 0:
            raise ValueError(f"local-preference margin must be >= 0, got {margin}")
        self.kind, self.margin = kind, margin

    def choose(self, board: Board, rng: np.random.Generator, home: int | None = None) -> int:
        """The site to submit to. Sites that never published are not
        candidates; if none has, the client submits home (``ValueError``
        without a home). Home is kept unless some site beats it by more than
        ``margin``; home with no publication yet counts as beaten."""
        pubs = board.known()
        if not pubs:
            if home is None:
                raise ValueError("no site has published and the client has no home site")
            return home
        best, low = best_sites(pubs, self.kind)
        if home is not None:
            own = board.latest(home)
            if own is not None and score(own, self.kind) - low <= self.margin:
                return home
        return best[0] if len(best) == 1 else int(rng.choice(best))
