"""Mesos master election as a replicated state machine on the coordinator group.

The group plays ZooKeeper's part: masters campaign for a lease, the holder
renews it, and a standby wins only once the lease has run out. Each new
holder gets a higher ``epoch``; agents and frameworks re-register when the
epoch they know changes. Commands carry the proposer's emulated time, so
applying them is deterministic on every replica.
"""
from __future__ import annotations

from typing import Any

import msgpack


class LeaseMachine:
    """Commands: ``("campaign", name, now, lease)`` -> ``[holder, epoch, expires]``
    (the caller holds the lease iff holder == name). Queries: ``("leader",)``
    -> the same triple (holder None before any campaign)."""

    def __init__(self) -> None:
        self.holder: str | None = None
        self.epoch = 0
        self.expires = 0.0

    def apply(self, command: Any) -> Any:
        op, name, now, lease = command
        if op != "campaign":
            raise ValueError(f"unknown lease command {op!r}")
        if self.holder == name and now < self.expires:
            self.expires = max(self.expires, now + lease)
        elif self.holder is None or now >= self.expires:
            # A lapsed lease starts a new epoch even for the same master: it
            # stepped down meanwhile, so everyone must re-register.
            self.epoch += 1
            self.holder, self.expires = name, now + lease
        return [self.holder, self.epoch, self.expires]

    def query(self, command: Any) -> Any:
        if command[0] != "leader":
            raise ValueError(f"unknown lease query {command[0]!r}")
        return [self.holder, self.epoch, self.expires]

    def snapshot(self) -> bytes:
        return msgpack.packb([self.holder, self.epoch, self.expires], use_bin_type=True)

    def restore(self, data: bytes) -> None:
        self.holder, self.epoch, self.expires = msgpack.unpackb(data, raw=False)


def campaign_wait(me: str, holder: str | None, expires: float, now: float, lease: float) -> float:
    """Emulated seconds until a member campaigns again (every campaign is a
    replicated write). The holder renews every quarter lease, so three
    renewals in a row may be late before it lapses. A standby can win only
    once the holder's lease ran out: it asks again then, not every quarter
    lease; ``holder`` None (nobody, or the group could not say) asks again
    after a quarter lease."""
    if holder is None or holder == me:
        return lease / 4
    return max(lease / 4, expires - now)


class LeaseMachineFactory:
    def __call__(self) -> LeaseMachine:
        return LeaseMachine()
