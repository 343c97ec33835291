"""The coordinator group's Raft timing: ``[coordinator] heartbeat_ms`` and
``election_ms`` (emulated ms) turned into the core's ticks.

One core tick is one emulated millisecond. The shell never ticks: it sleeps
until ``RaftNode.ticks_until_due`` and then advances the core by the ticks
that passed, so the tick's size sets only the timers' resolution, not what
the group costs.

A wall floor guards live runs: a Ray message round trip is ~1-4 ms wall and
an async timer fires up to ~25 ms late under load, so a heartbeat below
``HEARTBEAT_FLOOR_WALL_S`` or an election timeout below
``ELECTION_FLOOR_WALL_S`` would have followers time out on a healthy
leader. Both engines apply it (through ``time_scale``), so a scenario runs
the same timers on sim and live; ``raised`` says when it changed a setting.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

TICK_S = 0.001  # emulated seconds per core tick
HEARTBEAT_FLOOR_WALL_S = 0.010
ELECTION_FLOOR_WALL_S = 0.100  # ten floor heartbeats


@dataclass(frozen=True)
class RaftTiming:
    heartbeat_ticks: int
    election_ticks: tuple[int, int]  # inclusive, as RaftNode draws them
    raised: str | None = None  # what the wall floor raised, for the run's log


def election_range(election_ms: float | tuple[float, float]) -> tuple[float, float]:
    """``election_ms`` as (low, high) emulated ms: a number is etcd's
    randomized [x, 2x); a pair is the range itself (the Raft paper's)."""
    if isinstance(election_ms, (int, float)):
        return float(election_ms), 2.0 * float(election_ms)
    lo, hi = election_ms
    return float(lo), float(hi)


def raft_timing(heartbeat_ms: float, election_ms: float | tuple[float, float], time_scale: float) -> RaftTiming:
    """Ticks for ``RaftNode``; the floor raises a heartbeat to
    HEARTBEAT_FLOOR_WALL_S and an election range (both ends, keeping their
    ratio) to ELECTION_FLOOR_WALL_S, in emulated ms at ``time_scale``."""
    lo, hi = election_range(election_ms)
    single = isinstance(election_ms, (int, float))
    hb_floor = HEARTBEAT_FLOOR_WALL_S * time_scale * 1e3
    el_floor = ELECTION_FLOOR_WALL_S * time_scale * 1e3
    raised = []
    if heartbeat_ms < hb_floor:
        raised.append(f"heartbeat_ms {heartbeat_ms:g} -> {hb_floor:g}")
        heartbeat_ms = hb_floor
    if lo < el_floor:
        raised.append(f"election_ms {lo:g}-{hi:g} -> {el_floor:g}-{hi * el_floor / lo:g}")
        lo, hi = el_floor, hi * el_floor / lo
    hb = max(1, math.ceil(heartbeat_ms * 1e-3 / TICK_S - 1e-9))
    lo_t = max(hb + 1, math.ceil(lo * 1e-3 / TICK_S - 1e-9))
    # etcd draws in [x, 2x): the high end is exclusive there, inclusive here.
    hi_t = max(lo_t, math.ceil(hi * 1e-3 / TICK_S - 1e-9) - (1 if single else 0))
    note = None
    if raised:
        note = (f"[coordinator] {'; '.join(raised)} emulated ms: at time_scale {time_scale:g} a heartbeat must be "
                f">= {HEARTBEAT_FLOOR_WALL_S * 1e3:g} wall ms and an election timeout >= "
                f"{ELECTION_FLOOR_WALL_S * 1e3:g} wall ms (message round trips and timer lateness)")
    return RaftTiming(hb, (lo_t, hi_t), note)
