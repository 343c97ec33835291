"""The state-machine protocol, a key-value example, and exactly-once delivery.

A state machine must be deterministic: every replica applies the same
commands in the same order and must reach the same state and results.
Commands, results and snapshots cross the wire, so they are msgpack values.
"""
from __future__ import annotations

import pickle
from typing import Any, Protocol

import msgpack

from schedlab.schedulers.consensus.messages import LogEntry


class StateMachine(Protocol):
    def apply(self, command: Any) -> Any:
        """Apply one committed command; return its (msgpack-able) result."""

    def snapshot(self) -> bytes:
        """The whole state as bytes; ``restore(snapshot())`` must reproduce it."""

    def restore(self, data: bytes) -> None:
        """Replace the whole state with a ``snapshot()``."""

    # Optional: ``held_launches() -> list[list]``, the launches (rows start
    # [job, task, machine]) the state holds for hosts that have not pulled
    # them; a replica reports them when the run stops (in flight, not lost).


class KVStateMachine:
    """A dict of key -> value. Commands: ("set", k, v) -> v, ("incr", k) ->
    the new value (missing keys start at 0), ("get", k) -> value or None,
    ("del", k) -> removed value or None."""

    def __init__(self) -> None:
        self.data: dict[str, Any] = {}

    def apply(self, command: Any) -> Any:
        op, key, *rest = command
        if op == "set":
            self.data[key] = rest[0]
            return rest[0]
        if op == "incr":
            self.data[key] = self.data.get(key, 0) + (rest[0] if rest else 1)
            return self.data[key]
        if op == "get":
            return self.data.get(key)
        if op == "del":
            return self.data.pop(key, None)
        raise ValueError(f"unknown KV command {op!r}")

    def snapshot(self) -> bytes:
        return msgpack.packb(self.data, use_bin_type=True)

    def restore(self, data: bytes) -> None:
        self.data = dict(msgpack.unpackb(data, raw=False, use_list=False, strict_map_key=False))


class ExactlyOnce:
    """Wraps a state machine so a retried client request applies once.

    Per client it keeps the last applied request_id and its result (Raft
    thesis §6.3). Clients have one request outstanding and number them
    upwards, so a request_id at or below the last one is a retry or a stale
    duplicate: it is not applied again, and a retry of the last request gets
    the original result. The table is part of the snapshot, because a replica
    restored from a snapshot must dedup exactly as one that replayed the log.
    """

    def __init__(self, inner: StateMachine) -> None:
        self.inner: Any = inner  # the architecture's own machine: its queries (query, queue, jobs) are its shell's to know
        self.sessions: dict[str, tuple[int, Any]] = {}

    def lookup(self, client_id: str, request_id: int) -> tuple[bool, Any]:
        """(already applied?, its result if it was the client's last request)."""
        last = self.sessions.get(client_id)
        if last is None or request_id > last[0]:
            return False, None
        return True, (last[1] if request_id == last[0] else None)

    def apply(self, entry: LogEntry) -> tuple[Any, bool]:
        """(result, duplicate?) for one committed entry; no-ops yield None."""
        if entry.command is None:
            return None, False
        if entry.client_id is None:
            return self.inner.apply(entry.command), False
        seen, result = self.lookup(entry.client_id, entry.request_id)
        if seen:
            return result, True
        result = self.inner.apply(entry.command)
        self.sessions[entry.client_id] = (entry.request_id, result)
        return result, False

    def snapshot(self) -> bytes:
        # Each kept result is pickled, not packed: a retry must get the
        # original result exactly, and msgpack does not keep a tuple apart
        # from a list (a host told () for [] after its cell's leader was
        # restored from a snapshot could not tell "no launches" from
        # "(launches, kills)", and its poll loop died). Replicas restore
        # only snapshots replicas wrote.
        table = [(c, rid, pickle.dumps(res, protocol=pickle.HIGHEST_PROTOCOL)) for c, (rid, res) in sorted(self.sessions.items())]
        return msgpack.packb((self.inner.snapshot(), table), use_bin_type=True)

    def restore(self, data: bytes) -> None:
        inner, table = msgpack.unpackb(data, raw=False, use_list=False)
        self.inner.restore(inner)
        self.sessions = {c: (rid, pickle.loads(res)) for c, rid, res in table}
