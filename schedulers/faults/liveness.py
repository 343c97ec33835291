"""Deciding that a machine is dead: the rules of a control plane's host watch.

Whoever keeps a cell's state (a cell-state actor or a replicated leader, a
master) hears from every machine host once per
poll and writes off, through its state, the tasks of a host silent too long,
to be placed again. Writing off a healthy host kills everything it runs, so
the watch only judges what it can tell apart from its own trouble:

* **Its own stall.** A watcher that itself did not run for longer than the
  timeout (paused, starved of CPU) cannot tell silent hosts from its own
  deafness: every host gets a fresh grace period instead.
* **A new leader's blind spot.** A new leader has heard from nobody. A host
  may still be waiting on the old leader (a call that has not yet timed out)
  and then has to find the new one: every host's clock starts ``give_up``
  after the election, so a host gets the whole timeout once it could have
  reached us.
* **Disruption.** When a large share of the live hosts falls silent together,
  the likely cause is the watcher's side (a partition that cut it off from
  the hosts, a network fault) rather than that many machines dying at once.
  Kubernetes' node lifecycle controller stops evicting in a zone where most
  nodes are unhealthy for this reason. The watch writes off nobody while at
  least ``disruption_min_hosts`` hosts and ``disruption_share`` of the live
  ones are silent; once enough come back, the ones still silent are written
  off at once (their silence was counted all along), so a dead machine is
  still written off in bounded time unless most of the cell died with it.

Pure: no clock, no I/O; times are the caller's (emulated seconds).
"""
from __future__ import annotations

from dataclasses import dataclass

# Wall seconds, whatever the time scale: on two busy cores a healthy host's
# poll can be a few tenths of a second late; a second means it is gone (or
# paused or cut off long enough to be treated as gone).
HOST_TIMEOUT_WALL_S = 1.0
# A host's call to the control plane gives up after this long (wall) and
# tries elsewhere, well inside the write-off threshold: a leader that does not
# answer must not hold a healthy host silent until it is written off.
HOST_CALL_WALL_S = 0.25
# ... and after a timeout it waits at most this long (wall) on its next try,
# so a merely slow leader is still reached. This bounds how long a healthy
# host can stay stuck on a dead or paused leader: the new leader's grace.
HOST_CALL_MAX_WALL_S = 0.5


@dataclass(frozen=True)
class LivenessSpec:
    """The scenario's ``[liveness]`` table."""

    disruption_share: float = 0.55  # Kubernetes' unhealthy-zone threshold
    disruption_min_hosts: int = 2


@dataclass(frozen=True)
class Verdict:
    """What one check decided: hosts to write off now, and whether the watch
    is in disruption mode (``changed``: it entered or left it at this check)."""

    down: list[int]
    disrupted: bool = False
    changed: bool = False
    silent: int = 0  # hosts silent past the timeout (written off or spared)
    live: int = 0  # hosts not already down


class HostWatch:
    """When each host was last heard from, and the rules above.

    ``timeout`` and ``give_up`` are emulated seconds."""

    def __init__(self, hosts: int, timeout: float, spec: LivenessSpec = LivenessSpec(), give_up: float = 0.0) -> None:
        self.timeout = timeout
        self.hosts = hosts
        self.spec = spec
        self.give_up = give_up
        self.last: dict[int, float] = {}
        self.checked_at = 0.0
        self.disrupted = False
        self.stopped = False

    def stop(self) -> None:
        """The run is stopping the hosts: their silence from now on is the
        run's end, not a failure; nobody is written off any more."""
        self.stopped = True

    def grace(self, now: float, give_up: bool = False) -> None:
        """Every host starts (or restarts) its clock now; ``give_up``: a new
        leader's, which starts when a host could have found us."""
        start = now + (self.give_up if give_up else 0.0)
        # Never shorter than a grace already running (a stall right after an election).
        self.last = {h: max(start, self.last.get(h, start)) for h in range(self.hosts)}
        self.checked_at = now

    def heard(self, host: int, now: float) -> None:
        self.last[host] = max(now, self.last.get(host, now))

    def silent(self, now: float, down: set[int]) -> list[int]:
        return sorted(h for h, t in self.last.items() if now - t > self.timeout and h not in down)

    def check(self, now: float, down: set[int]) -> Verdict:
        """Hosts to write off now (never one in ``down``)."""
        if self.stopped:
            return Verdict([])
        stalled = now - self.checked_at > self.timeout
        self.checked_at = now
        if stalled:
            self.grace(now)
            return self._verdict([], False, 0, self.hosts - len(down))
        silent = self.silent(now, down)
        live = self.hosts - len(down)
        disrupted = len(silent) >= self.spec.disruption_min_hosts and len(silent) >= self.spec.disruption_share * live
        return self._verdict([] if disrupted else silent, disrupted, len(silent), live)

    def _verdict(self, hosts: list[int], disrupted: bool, silent: int, live: int) -> Verdict:
        changed = disrupted != self.disrupted
        self.disrupted = disrupted
        return Verdict(hosts, disrupted, changed, silent, live)
