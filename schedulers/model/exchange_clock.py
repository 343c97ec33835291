"""When a machine host next exchanges with its keeper (the cell state, a
master, a head): the substrate moves on change, plus a liveness heartbeat.

A host exchanges when there is something to exchange: its keeper rang its
doorbell (a launch or a kill waits for it), one of its tasks ended, or an
earlier exchange left something undelivered. Such a trigger is served at
most one batch interval after the previous exchange began and never
earlier, so launches and returns still travel in batches, at most one
interval late. With nothing to exchange, the host still exchanges once per
heartbeat: the keeper's host watch hears it, and a ring that was lost is
made good within one heartbeat.

Pure: no clock, no I/O; times are the caller's (emulated seconds).
"""
from __future__ import annotations

import math
from dataclasses import dataclass


@dataclass
class ExchangeClock:
    """``interval``: the batch interval; ``heartbeat``: the longest a host
    stays silent with nothing to exchange (both emulated s). ``last``: when
    the latest exchange began (-inf: none yet, so the first is due at once)."""

    interval: float
    heartbeat: float
    last: float = -math.inf

    def due(self, now: float, *, rung: bool = False, next_end: float | None = None, retry: bool = False) -> float:
        """When the next exchange is due: ``rung``: the doorbell rang since
        the last exchange began; ``next_end``: the earliest end of a task
        still running (None: none); ``retry``: something the last exchange
        did not deliver (returns, a rejoin) waits to be sent again."""
        beat = self.last + self.heartbeat
        wants = now if (rung or retry) else next_end
        if wants is None:
            return beat
        return min(beat, max(wants, self.last + self.interval))

    def began(self, now: float) -> None:
        """An exchange begins now."""
        self.last = now
