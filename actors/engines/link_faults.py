"""What the chaos tooling did to one actor's links: slowed or cut.

Each actor's runtime holds one ``LinkFaults``; the runtime consults it on
every message the actor sends, and the actor shell on every message it
receives. Expiry is by wall clock (``time.monotonic``), so a fault heals on
time without a timer and survives the actor being busy.
"""
from __future__ import annotations

import time

# A message into a partition is dropped; a call waiting for its reply gives
# up after this long, as an RPC deadline would, and the caller sees an error.
UNREACHABLE_AFTER_S = 0.5


class Unreachable(ConnectionError):
    """A call dropped by a partition (after its deadline)."""


class LinkFaults:
    def __init__(self) -> None:
        self.delay_s = 0.0
        self.delay_until = 0.0
        self.cut: dict[str, float] = {}  # peer actor key -> wall time the cut heals
        self.exempt: set[str] = set()  # the instruments (metrics): never slowed or cut

    @property
    def active(self) -> bool:
        return bool(self.cut) or self.delay_until > 0.0

    def slow(self, delay_s: float, seconds: float) -> None:
        self.delay_s = delay_s
        self.delay_until = time.monotonic() + seconds

    def partition(self, peers: list[str], seconds: float) -> None:
        until = time.monotonic() + seconds
        for p in peers:
            self.cut[p] = max(self.cut.get(p, 0.0), until)

    def heal(self) -> None:
        self.cut.clear()
        self.delay_until = 0.0

    def delay(self) -> float:
        """Seconds every message (in or out) waits now; 0 when not slowed."""
        if self.delay_until and time.monotonic() >= self.delay_until:
            self.delay_until = 0.0
        return self.delay_s if self.delay_until else 0.0

    def blocked(self, peer: str) -> bool:
        until = self.cut.get(peer)
        if until is None:
            return False
        if time.monotonic() >= until:
            del self.cut[peer]
            return False
        return True
