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
  kube-controller-manager's node lifecycle controller stops evicting in a zone where most
  nodes are unhealthy for this reason. The watch writes off nobody while at
  least ``disruption_min_hosts`` hosts and ``disruption_share`` of the live
  ones are silent. A disruption does not silence every host at the same
  instant (a partition reaches each side's actors when they get to it, a
  second apart on a loaded machine), so a host silent past the timeout is
  only a suspect: it counts towards a disruption at once, but is written
  off ``confirm`` later, if no disruption has begun by then (as that
  controller taints a NotReady node at once and evicts its pods only after their
  toleration, cancelled when its zone turns out fully disrupted). Once enough come back, the ones still silent get one
  fresh timeout from that moment (as such a taint's toleration starts
  when the zone is healthy again): hosts do not all find their way back at
  the same instant (a retry in flight, a late poll on a loaded machine), and
  a straggler of the disruption is not a dead machine. A machine that did
  die is written off one timeout after the disruption ends: bounded, unless
  most of the cell died with it.

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
# A suspect (silent past the timeout) is written off this long (wall) later:
# the most a disruption's hosts may fall silent apart and still be seen as one.
HOST_CONFIRM_WALL_S = 1.0


@dataclass(frozen=True)
class LivenessSpec:
    """The scenario's ``[liveness]`` table."""

    disruption_share: float = 0.55  # kube-controller-manager's unhealthy-zone threshold
    disruption_min_hosts: int = 2


@dataclass(frozen=True)
class Verdict:
    """What one check decided: hosts to write off now, and whether the watch
    is in disruption mode (``changed``: it entered or left it at this check)."""

    down: list[int]
    disrupted: bool = False
    changed: bool = False
    silent: int = 0  # suspects: hosts silent past the timeout
    live: int = 0  # hosts not already down


class HostWatch:
    """When each host was last heard from, and the rules above.

    ``timeout``, ``give_up`` and ``confirm`` are emulated seconds: a host
    silent past ``timeout`` is a suspect, written off past ``timeout +
    confirm`` unless the watch is in disruption mode."""

    def __init__(self, hosts: int, timeout: float, spec: LivenessSpec = LivenessSpec(), give_up: float = 0.0,
                 confirm: float = 0.0) -> None:
        self.timeout = timeout
        self.hosts = hosts
        self.spec = spec
        self.give_up = give_up
        self.confirm = confirm
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

    def silent(self, now: float, down: set[int], longer: float = 0.0) -> list[int]:
        """Hosts not down and silent past the timeout (plus ``longer``)."""
        return sorted(h for h, t in self.last.items() if now - t > self.timeout + longer and h not in down)

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
        if self.disrupted and not disrupted:  # recovered: the stragglers' clocks start now
            self.last.update((h, now) for h in silent)
            return self._verdict([], False, len(silent), live)
        return self._verdict([] if disrupted else self.silent(now, down, self.confirm), disrupted, len(silent), live)

    def _verdict(self, hosts: list[int], disrupted: bool, silent: int, live: int) -> Verdict:
        changed = disrupted != self.disrupted
        self.disrupted = disrupted
        return Verdict(hosts, disrupted, changed, silent, live)
