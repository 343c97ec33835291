"""Noticing dead machines: the keeper of a cell's state hears from every
machine host once per batch interval (its poll); a host silent for longer
than ``HOST_TIMEOUT_WALL_S`` is marked down and its tasks written off, to be
placed again by their schedulers. Shared by Omega's cell state (one actor or
the replicated group's leader) and the Mesos master; the Borgmaster has its
own, configurable, poll-based version.
"""
from __future__ import annotations

from typing import Any

from actors.events import EventLog

# Wall seconds, whatever the time scale: on two busy cores a healthy host's
# poll can be a few tenths of a second late; a second means it is gone (or
# paused or cut off long enough to be treated as gone).
HOST_TIMEOUT_WALL_S = 1.0


class HostWatch:
    def __init__(self, hosts: int, timeout: float) -> None:
        self.timeout = timeout  # emulated seconds
        self.hosts = hosts
        self.last: dict[int, float] = {}
        self.checked_at = 0.0

    def grace(self, now: float) -> None:
        """Every host starts (or, under a new leader, restarts) its clock now."""
        self.last = {h: now for h in range(self.hosts)}
        self.checked_at = now

    def heard(self, host: int, now: float) -> None:
        self.last[host] = now

    def silent(self, now: float, down: set[int]) -> list[int]:
        return sorted(h for h, t in self.last.items() if now - t > self.timeout and h not in down)

    def check(self, now: float, down: set[int]) -> list[int]:
        """Hosts silent too long, judged only if this watcher was itself
        awake: after a stall of its own (paused, starved of CPU) longer than
        the timeout it cannot tell a silent host from its own deafness, so
        every host gets a fresh grace period instead (a paused master
        writing off the whole cell is a failure mode worth avoiding)."""
        stalled = now - self.checked_at > self.timeout
        self.checked_at = now
        if stalled:
            self.grace(now)
            return []
        return self.silent(now, down)


def report_down(log: EventLog, hosts: list[int], lost: list, unpulled: list, by: str) -> None:
    """The events the invariant checker reads: tasks that were running are
    lost with their machines; launches never pulled were never started."""
    log.emit("machines_down", hosts=hosts, tasks_lost=len(lost), lost=lost, unpulled=len(unpulled))
    if unpulled:
        log.emit("tasks_lost", framework=by, reason="machine_down", tasks=unpulled, requeued_jobs=[])


def host_of_command(command: Any) -> int | None:
    """The host a cell-state command or query comes from (its poll), if any."""
    if isinstance(command, (list, tuple)) and len(command) > 1 and command[0] in ("exchange", "pending", "rejoin"):
        return int(command[1])
    return None
