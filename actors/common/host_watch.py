"""The shells' side of the host watch (the rules are schedulers.faults.liveness):
the events a watcher logs. Shared by every architecture's keeper of the
cell's state (a cell-state actor or a replicated leader, a master).
"""
from __future__ import annotations

from typing import Any

from schedlab.actors.common.events import EventLog
from schedlab.schedulers.events.shared import MACHINES_DOWN, TASKS_LOST, WATCH_DISRUPTED
from schedlab.schedulers.faults.liveness import (HOST_CALL_MAX_WALL_S, HOST_CALL_WALL_S, HOST_CONFIRM_WALL_S, HOST_TIMEOUT_WALL_S,
                                                HostWatch, LivenessSpec)

__all__ = ["HOST_CALL_MAX_WALL_S", "HOST_CALL_WALL_S", "HOST_TIMEOUT_WALL_S", "HostWatch", "LivenessSpec", "host_of_command",
           "host_timeout", "judge", "report_down", "watch_for"]

# Heartbeats a healthy host may miss before its silence counts: a heartbeat
# is due ``heartbeat`` after the last exchange and arrives a call later.
MISSED_HEARTBEATS = 3


def host_timeout(scale: float, heartbeat: float | None) -> float:
    """How long (emulated s) a host may stay silent before it is a suspect:
    ``HOST_TIMEOUT_WALL_S`` of wall (a poll late on busy cores), and never
    under ``MISSED_HEARTBEATS`` of its heartbeats (None: it polls every
    batch interval), so a host that exchanges only on change and heartbeat
    is never written off healthy, and one that stopped is in bounded time."""
    floor = HOST_TIMEOUT_WALL_S * scale
    return floor if heartbeat is None else max(floor, MISSED_HEARTBEATS * heartbeat)


def watch_for(hosts: int, timeout: float, spec: LivenessSpec, scale: float) -> HostWatch:
    """A watch whose new-leader grace covers a host stuck on its longest
    call to an unanswering leader (``HOST_CALL_MAX_WALL_S``) and a moment to
    find the new one, and whose suspects wait ``HOST_CONFIRM_WALL_S``."""
    return HostWatch(hosts, timeout, spec, give_up=2 * HOST_CALL_MAX_WALL_S * scale, confirm=HOST_CONFIRM_WALL_S * scale)


def silence_span(watch: HostWatch) -> float:
    """The longest silence (emulated s) the watch allows a host before writing it off."""
    return round(watch.timeout + watch.give_up + watch.confirm, 6)


def judge(watch: HostWatch, log: EventLog, now: float, down: set[int]) -> list[int]:
    """Hosts to write off now; logs entering and leaving disruption mode
    (``watch_disrupted``), so a run shows why silent hosts were spared."""
    v = watch.check(now, down)
    if v.changed:
        log.emit(WATCH_DISRUPTED, on=v.disrupted, silent=v.silent, live=v.live, share=watch.spec.disruption_share)
    return v.down


def report_down(log: EventLog, hosts: list[int], lost: list, unpulled: list, *, by: str, watch: HostWatch | None = None) -> None:
    """The events the invariant checker reads: tasks that were running are
    lost with their machines; launches never pulled were never started.
    ``watch``: the watcher that judged them silent (None: a host's own
    rejoin); its timeout tells the collateral check how far back a fault on
    the host could have caused the silence."""
    extra = {} if watch is None else {"timeout_s": silence_span(watch)}
    log.emit(MACHINES_DOWN, hosts=hosts, tasks_lost=len(lost), lost=lost, unpulled=len(unpulled), **extra)
    if unpulled:
        log.emit(TASKS_LOST, framework=by, reason="machine_down", tasks=unpulled, requeued_jobs=[])


def host_of_command(command: Any) -> int | None:
    """The host a cell-state command or query comes from (its poll), if any."""
    if isinstance(command, (list, tuple)) and len(command) > 1 and command[0] in ("exchange", "pending", "rejoin"):
        return int(command[1])
    return None
