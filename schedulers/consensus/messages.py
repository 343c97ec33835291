"""Raft messages, log entries and the ``Ready`` batch, as frozen dataclasses.

Every message names its sender and destination so a ``Ready`` is a flat list
of envelopes. ``to_wire``/``from_wire`` turn any message into a plain tuple
(tag first) and back, and ``encode``/``decode`` wrap that in msgpack, so the
same values can cross Ray (or a socket) later without pickling our classes.
Commands and results must themselves be msgpack-able; decoding uses tuples
for arrays, so a tuple command survives the round trip unchanged.
"""
from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any

import msgpack

NodeId = int


@dataclass(frozen=True)
class LogEntry:
    """One slot of the replicated log. ``client_id is None`` for the leader's
    no-op; otherwise (client_id, request_id) identifies the client request so
    the state machine can apply it exactly once."""

    term: int
    index: int
    command: Any
    client_id: str | None = None
    request_id: int = 0


@dataclass(frozen=True)
class RequestVote:
    """With ``pre_vote`` the sender asks "would you vote for me in ``term``?"
    without having moved to ``term``; receivers do not change state."""

    term: int
    src: NodeId
    dst: NodeId
    last_log_index: int
    last_log_term: int
    pre_vote: bool = False


@dataclass(frozen=True)
class RequestVoteReply:
    term: int
    src: NodeId
    dst: NodeId
    granted: bool
    pre_vote: bool = False


@dataclass(frozen=True)
class AppendEntries:
    term: int
    src: NodeId
    dst: NodeId
    prev_log_index: int
    prev_log_term: int
    entries: tuple[LogEntry, ...]
    leader_commit: int


@dataclass(frozen=True)
class AppendEntriesReply:
    """On success ``match_index`` is the last index the follower now shares
    with the leader. On failure (conflict_index, conflict_term) is the fast
    backtracking hint: the follower's first index of its conflicting term, or
    its last index + 1 when its log is too short (conflict_term None)."""

    term: int
    src: NodeId
    dst: NodeId
    success: bool
    match_index: int = 0
    conflict_index: int = 0
    conflict_term: int | None = None


@dataclass(frozen=True)
class InstallSnapshot:
    term: int
    src: NodeId
    dst: NodeId
    last_included_index: int
    last_included_term: int
    data: bytes


@dataclass(frozen=True)
class InstallSnapshotReply:
    term: int
    src: NodeId
    dst: NodeId
    match_index: int


@dataclass(frozen=True)
class ClientRequest:
    """A client's command. A client has at most one request outstanding and
    numbers them 1, 2, ...; a retry reuses the request_id."""

    client_id: str
    request_id: int
    command: Any


@dataclass(frozen=True)
class ClientReply:
    """``ok`` with the command's result, or not ok with ``error`` one of
    ``"not_leader"`` (retry at ``leader_hint`` if known), ``"leadership_lost"``
    (the request may still commit: retry, it applies once) or ``"stale"``
    (the client already moved past this request_id)."""

    client_id: str
    request_id: int
    ok: bool
    result: Any = None
    error: str | None = None
    leader_hint: NodeId | None = None


@dataclass(frozen=True)
class HardState:
    """What must be on disk before any message reflecting it is sent."""

    term: int
    voted_for: NodeId | None


@dataclass(frozen=True)
class Snapshot:
    """The state machine (with its exactly-once table) as of ``index``."""

    index: int
    term: int
    data: bytes


@dataclass(frozen=True)
class Applied:
    """A committed entry the node just applied. ``duplicate`` marks a retried
    client request whose original result is returned without re-applying."""

    entry: LogEntry
    result: Any
    duplicate: bool = False


Message = (RequestVote | RequestVoteReply | AppendEntries | AppendEntriesReply
           | InstallSnapshot | InstallSnapshotReply)

@dataclass(frozen=True)
class Ready:
    """Everything a node produced since the previous ``RaftNode.ready()``.

    The caller must, in this order: persist ``snapshot`` (if any), then the
    log change (drop persisted entries with index >= ``truncate_from``, append
    ``entries``, drop persisted entries covered by the newest snapshot), then
    ``hard_state`` (if any) — atomically or in that order — and only then send
    ``messages`` and deliver ``replies``. ``committed`` is informational: the
    node has already applied those entries to its state machine.
    ``storage.Storage.persist`` implements exactly this.
    """

    messages: tuple[Message, ...] = ()
    hard_state: HardState | None = None
    truncate_from: int | None = None
    entries: tuple[LogEntry, ...] = ()
    snapshot: Snapshot | None = None
    committed: tuple[Applied, ...] = ()
    replies: tuple[ClientReply, ...] = ()

    def is_empty(self) -> bool:
        return not (self.messages or self.hard_state or self.truncate_from is not None
                    or self.snapshot or self.committed or self.replies)


_TAGS: dict[type, int] = {
    RequestVote: 1, RequestVoteReply: 2, AppendEntries: 3, AppendEntriesReply: 4,
    InstallSnapshot: 5, InstallSnapshotReply: 6, ClientRequest: 7, ClientReply: 8,
    LogEntry: 9, HardState: 10, Snapshot: 11,
}
_TYPES = {tag: cls for cls, tag in _TAGS.items()}


def _entry_tuple(e: LogEntry) -> tuple:
    return (e.term, e.index, e.command, e.client_id, e.request_id)


def to_wire(obj: Any) -> tuple:
    """A plain tuple of msgpack-able values: (tag, *fields in declared order)."""
    values = []
    for f in fields(obj):
        v = getattr(obj, f.name)
        if f.name == "entries":
            v = tuple(_entry_tuple(e) for e in v)
        values.append(v)
    return (_TAGS[type(obj)], *values)


def from_wire(t: tuple | list) -> Any:
    cls = _TYPES[t[0]]
    values = list(t[1:])
    if cls is AppendEntries:
        # entries is field 5 (term, src, dst, prev_index, prev_term, entries, ...)
        values[5] = tuple(LogEntry(*e) for e in values[5])
    return cls(*values)


def encode(obj: Any) -> bytes:
    return msgpack.packb(to_wire(obj), use_bin_type=True)


def decode(blob: bytes) -> Any:
    return from_wire(msgpack.unpackb(blob, raw=False, use_list=False))
