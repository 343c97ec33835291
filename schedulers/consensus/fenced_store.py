"""A store of records beside the coordinator group's lease, every write
fenced by the writer's lease epoch (the group playing ZooKeeper's part for
an active/standby master: Hadoop's ZKRMStateStore, slurmctld's
StateSaveLocation shared with its backup).

Why one replicated machine holds both the lease and the records: a write
can then be fenced by the lease epoch exactly, inside the machine, so a
deposed master's late write is refused, never applied over its
successor's. Records are keyed by integers (application or job ids) and
are opaque lists to the store; writing ``None`` deletes one.
"""
from __future__ import annotations

from typing import Any

import msgpack
from schedlab.schedulers.consensus.lease import LeaseMachine


class FencedStoreMachine:
    """Commands: ``("campaign", name, now, lease)`` as ``LeaseMachine``;
    ``("put", epoch, [[key, record or None], ...])`` -> True if applied
    (only the holder of the current lease epoch writes); ``("load", epoch)``
    -> every record as ``[[key, record], ...]`` (through the log, so it
    reflects every write before it), or None if ``epoch`` is not current.
    Queries: ``("leader",)``."""

    def __init__(self) -> None:
        self.lease = LeaseMachine()
        self.records: dict[int, list] = {}

    def apply(self, command: Any) -> Any:
        op = command[0]
        if op == "campaign":
            return self.lease.apply(command)
        if op == "put":
            _, epoch, records = command
            if int(epoch) != self.lease.epoch:
                return False
            for key, rec in records:
                if rec is None:
                    self.records.pop(int(key), None)
                else:
                    self.records[int(key)] = list(rec)
            return True
        if op == "load":
            return [[k, r] for k, r in sorted(self.records.items())] if int(command[1]) == self.lease.epoch else None
        raise ValueError(f"unknown fenced store command {op!r}")

    def query(self, command: Any) -> Any:
        return self.lease.query(command)

    def snapshot(self) -> bytes:
        # Pairs, not a dict: msgpack refuses int map keys on unpacking.
        return msgpack.packb([self.lease.snapshot(), [[k, r] for k, r in self.records.items()]], use_bin_type=True)

    def restore(self, data: bytes) -> None:
        lease, records = msgpack.unpackb(data, raw=False)
        self.lease.restore(lease)
        self.records = {int(k): list(r) for k, r in records}


class FencedStoreFactory:
    """What a coordinator group is built with (picklable, unlike a class
    object bound late)."""

    def __call__(self) -> FencedStoreMachine:
        return FencedStoreMachine()
