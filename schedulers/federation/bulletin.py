"""What a site publishes, and the board clients read.

A site publishes a ``Publication`` every ``publish_interval`` seconds: its
queue length, queued work, remaining running work, capacity and the median
wait of the jobs that started in the last ``window`` seconds. The ``Board``
keeps the latest publication per site. Clients read the board, never the
sites: whatever they read was true at the publication's ``at`` and is stale
by up to ``publish_interval`` (plus any delivery lag) by construction. This
is the information model of observational scheduling (a grid client
choosing a site from a published information service, as with Globus MDS or
a grid information index): periodic, shared by every reader, and therefore
able to make many readers agree on the same wrong answer (herding).

Contracts:

* ``Board.publish`` keeps a publication only if it is not older than the one
  held (a reordered, late message must not undo a newer one).
* A site that has never published is unknown: ``Board.known()`` leaves it
  out, and choosers must not pick it on no information.
* ``recent_wait_p50`` is the nearest-rank median of waits of jobs that
  *started* in ``(now - window, now]``, 0.0 when none did. It lags: a site
  whose jobs are all stuck in the queue reports the waits of the last jobs
  that got through, or 0 if none did in the window. That is the weakness of
  a "recent wait" signal, kept on purpose.
"""
from __future__ import annotations

import collections
import math
from dataclasses import dataclass


@dataclass(frozen=True)
class Publication:
    """A site's state as published at ``at`` (true only at ``at``)."""

    site: int
    at: float
    queue_length: int  # jobs waiting, not running
    queued_work: float  # slot-seconds of the waiting jobs
    running_work: float  # slot-seconds left of the running jobs
    capacity: float  # slots
    recent_wait_p50: float  # s, median wait of jobs started in the window

    def __post_init__(self) -> None:
        if not (self.capacity > 0 and math.isfinite(self.capacity)):
            raise ValueError(f"site {self.site}: capacity must be positive and finite, got {self.capacity}")
        if self.queue_length < 0 or self.queued_work < 0 or self.running_work < 0:
            raise ValueError(f"site {self.site}: queue length and work must be >= 0")


class WaitWindow:
    """Waits of jobs that started in the last ``window`` seconds."""

    def __init__(self, window: float) -> None:
        if not window > 0:
            raise ValueError(f"wait window must be > 0 s, got {window}")
        self.window = window
        self._waits: collections.deque[tuple[float, float]] = collections.deque()

    def record(self, started: float, wait: float) -> None:
        """A job started at ``started`` after waiting ``wait``; calls come in
        non-decreasing ``started`` order (a site's clock)."""
        self._waits.append((started, wait))

    def p50(self, now: float) -> float:
        while self._waits and self._waits[0][0] <= now - self.window:
            self._waits.popleft()
        waits = sorted(w for t, w in self._waits if t <= now)
        if not waits:
            return 0.0
        return waits[max(0, math.ceil(0.5 * len(waits)) - 1)]


class Board:
    """The latest publication of each of ``n_sites`` sites."""

    def __init__(self, n_sites: int, publish_interval: float) -> None:
        if n_sites < 1:
            raise ValueError(f"a board needs at least one site, got {n_sites}")
        if not publish_interval > 0:
            raise ValueError(f"publish interval must be > 0 s, got {publish_interval}")
        self.n = n_sites
        self.publish_interval = publish_interval
        self._latest: list[Publication | None] = [None] * n_sites

    def publish(self, pub: Publication) -> bool:
        """Keep ``pub`` unless the board holds a newer one; True if kept."""
        if not 0 <= pub.site < self.n:
            raise ValueError(f"site {pub.site} is not on this board of {self.n} sites")
        held = self._latest[pub.site]
        if held is not None and pub.at < held.at:
            return False
        self._latest[pub.site] = pub
        return True

    def latest(self, site: int) -> Publication | None:
        return self._latest[site]

    def known(self) -> list[Publication]:
        """Latest publications of the sites that have published, by site id."""
        return [p for p in self._latest if p is not None]

    def due(self, site: int, now: float) -> bool:
        """Whether ``site`` should publish at ``now``: never published, or
        its latest publication is ``publish_interval`` old."""
        held = self._latest[site]
        return held is None or now - held.at >= self.publish_interval

    def age(self, site: int, now: float) -> float:
        """Seconds since the site's latest publication; inf if none."""
        held = self._latest[site]
        return math.inf if held is None else now - held.at
