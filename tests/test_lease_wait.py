"""When a lease member campaigns again: each campaign is a replicated write."""
from __future__ import annotations

from schedlab.schedulers.consensus.lease import LeaseMachine, campaign_wait


def test_the_holder_renews_every_quarter_lease() -> None:
    assert campaign_wait("m0", "m0", expires=120.0, now=100.0, lease=20.0) == 5.0


def test_a_standby_asks_again_when_the_lease_would_run_out_and_wins_then() -> None:
    sm = LeaseMachine()
    sm.apply(("campaign", "m0", 100.0, 20.0))
    holder, _epoch, expires = sm.apply(("campaign", "m1", 101.0, 20.0))
    wait = campaign_wait("m1", holder, expires, now=101.0, lease=20.0)
    assert wait == 19.0  # once, not four times, per lease
    assert sm.apply(("campaign", "m1", 101.0 + wait, 20.0))[0] == "m1"  # the holder died: the standby wins at once


def test_nobody_known_or_a_lease_about_to_end_waits_a_quarter_lease() -> None:
    assert campaign_wait("m1", None, expires=0.0, now=50.0, lease=20.0) == 5.0
    assert campaign_wait("m1", "m0", expires=51.0, now=50.0, lease=20.0) == 5.0
