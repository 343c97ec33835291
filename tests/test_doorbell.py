"""The substrate moves on change: a host's exchange clock (pure) and a
keeper's doorbells (coalesced rings), without Ray."""
from __future__ import annotations

import math
from typing import Any

from schedlab.actors.common.doorbell import Doorbells
from schedlab.actors.common.host_watch import MISSED_HEARTBEATS, host_timeout
from schedlab.schedulers.model.exchange_clock import ExchangeClock


def test_first_exchange_is_at_once() -> None:
    assert ExchangeClock(0.1, 10.0).due(5.0) == -math.inf


def test_idle_host_exchanges_once_per_heartbeat() -> None:
    c = ExchangeClock(0.1, 10.0)
    c.began(3.0)
    assert c.due(3.5) == 13.0


def test_a_ring_is_served_at_most_one_interval_after_the_last_exchange() -> None:
    c = ExchangeClock(0.5, 10.0)
    c.began(3.0)
    assert c.due(3.1, rung=True) == 3.5  # batched: not before the interval is up
    assert c.due(7.0, rung=True) == 7.0  # long after: at once


def test_a_task_end_is_served_when_it_ends_batched() -> None:
    c = ExchangeClock(0.5, 10.0)
    c.began(3.0)
    assert c.due(3.1, next_end=6.0) == 6.0
    assert c.due(3.1, next_end=3.2) == 3.5
    assert c.due(3.1, next_end=50.0) == 13.0  # the heartbeat comes first


def test_undelivered_work_is_retried_after_one_interval() -> None:
    c = ExchangeClock(0.5, 10.0)
    c.began(3.0)
    assert c.due(3.0, retry=True) == 3.5


def test_heartbeat_shorter_than_the_interval_wins() -> None:
    c = ExchangeClock(1.0, 0.25)
    c.began(0.0)
    assert c.due(0.0, rung=True) == 0.25


class FakeRt:
    def __init__(self, up: set[str]) -> None:
        self.up = up
        self.sent: list[tuple[Any, str]] = []
        self.lookups = 0

    def lookup(self, name: str) -> Any:
        self.lookups += 1
        return ("handle", name) if name in self.up else None

    def send(self, handle: Any, method: str, *args: Any) -> None:
        self.sent.append((handle, method))


def test_rings_coalesce_until_the_host_is_heard() -> None:
    rt = FakeRt({"machine-host-0", "machine-host-1"})
    bells = Doorbells(rt)  # type: ignore[arg-type]
    bells.ring([0, 1, 0])
    bells.ring([0])
    assert rt.sent == [(("handle", "machine-host-0"), "ring"), (("handle", "machine-host-1"), "ring")]
    bells.heard(0)
    bells.ring([0, 1])
    assert len(rt.sent) == 3 and rt.sent[-1][0] == ("handle", "machine-host-0")
    assert rt.lookups == 2  # handles are cached


def test_a_host_not_up_is_not_rung_and_a_rejoined_one_is_looked_up_again() -> None:
    rt = FakeRt({"machine-host-1"})
    bells = Doorbells(rt)  # type: ignore[arg-type]
    bells.ring([0])
    assert rt.sent == [] and 0 not in bells.rung
    bells.ring([1])
    bells.rejoined(1)
    bells.ring([1])
    assert len(rt.sent) == 2 and rt.lookups == 3


def test_a_new_leader_forgets_old_rings() -> None:
    rt = FakeRt({"machine-host-0"})
    bells = Doorbells(rt)  # type: ignore[arg-type]
    bells.ring([0])
    bells.forget_rings()
    bells.ring([0])
    assert len(rt.sent) == 2


def test_host_timeout_covers_missed_heartbeats_and_the_wall_floor() -> None:
    assert host_timeout(50.0, None) == 50.0
    assert host_timeout(50.0, 10.0) == 50.0
    assert host_timeout(2.0, 10.0) == MISSED_HEARTBEATS * 10.0
