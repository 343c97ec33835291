"""Borg's own events (the shared ones: schedlab.schedulers.events.shared)."""
from __future__ import annotations

from schedlab.schedulers.events.contract import EventType, req

BORGMASTER_ELECTED = EventType("borgmaster_elected", "a Borgmaster replica became the leader", (
    req("replica", "int", "the replica"), req("term", "int", "its term"), req("queued", "int", "jobs it found queued")))

EVENTS = (BORGMASTER_ELECTED,)
