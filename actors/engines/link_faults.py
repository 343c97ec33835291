"""What the chaos tooling did to one actor's links: slowed or cut.

Each actor's runtime holds one ``LinkFaults``; the runtime consults it on
every message the actor sends, and the actor shell on every message it
receives. Expiry is by the engine's wall clock (``time.monotonic`` live,
the virtual loop's on the sim engine), so a fault heals on time without a
timer and survives the actor being busy.
"""
from __future__ import annotations

import time
from typing import Callable

# A message into a partition is dropped; a call waiting for its reply gives
# up after this long, as an RPC deadline would, and the caller sees an error.
UNREACHABLE_AFTER_S = 0.5


class Unreachable(ConnectionError):
    """A call dropped by a partition (after its deadline)."""


class LinkFaults:
    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self.clock = clock
        self.delay_s = 0.0
        self.delay_until = 0.0
        self.cut: dict[str, tuple[float, float]] = {}  # peer actor key -> (wall time the cut begins, heals)
        self.exempt: set[str] = set()  # the instruments (metrics): never slowed or cut

    @property
    def active(self) -> bool:
        return bool(self.cut) or self.delay_until > 0.0

    def slow(self, delay_s: float, seconds: float) -> None:
        self.delay_s = delay_s
        self.delay_until = self.clock() + seconds

    def partition(self, peers: list[str], seconds: float, start_in: float = 0.0) -> None:
        """Cut the links to ``peers`` for ``seconds``, from ``start_in``
        seconds from now: every actor of a partition is told to start at one
        common instant, so the cut is whole from its first moment even when
        the actors learn of it at different times (one busy for a while)."""
        begin = self.clock() + max(0.0, start_in)
        for p in peers:
            old = self.cut.get(p)
            self.cut[p] = (min(begin, old[0]), max(begin + seconds, old[1])) if old else (begin, begin + seconds)

    def heal(self) -> None:
        self.cut.clear()
        self.delay_until = 0.0

    def delay(self) -> float:
        """Seconds every message (in or out) waits now; 0 when not slowed."""
        if self.delay_until and self.clock() >= self.delay_until:
            self.delay_until = 0.0
        return self.delay_s if self.delay_until else 0.0

    def blocked(self, peer: str) -> bool:
        span = self.cut.get(peer)
        if span is None:
            return False
        now = self.clock()
        if now >= span[1]:
            del self.cut[peer]
            return False
        return now >= span[0]
