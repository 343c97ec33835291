"""A coordinator replica's durable state on local disk (msgpack files).

Layout in the replica's directory: ``hard_state`` and ``snapshot`` are
rewritten atomically (write, then rename); ``log`` is an append-only stream
of entries, rewritten whole only when a leader truncates this replica's log.
``applied`` is an append-only record of every entry the replica applied
(index, term, client id, request id, duplicate?), with a marker
(index, term, None, None, "snapshot") wherever a snapshot took over: the
"nothing lost" checker reads it.

Ray kills processes, not machines, so a flush to the OS is durable enough
here; fsync would only slow the emulation.
"""
from __future__ import annotations

import bisect
import os
from pathlib import Path
from typing import Any, Iterable

import msgpack

from schedlab.schedulers.consensus.messages import HardState, LogEntry, Ready, Snapshot


def _index(e: LogEntry) -> int:
    return e.index


def _entry(e: LogEntry) -> tuple:
    return (e.term, e.index, e.command, e.client_id, e.request_id)


def _read_stream(path: Path) -> list[Any]:
    if not path.exists():
        return []
    with path.open("rb") as f:
        # A crash mid-append can leave a torn last record: keep what parses.
        out = []
        try:
            for item in msgpack.Unpacker(f, raw=False, use_list=False):
                out.append(item)
        except (msgpack.exceptions.ExtraData, ValueError, msgpack.exceptions.UnpackException):
            pass
        return out


def read_applied(directory: str | Path) -> list[tuple]:
    """A replica's applied record, read without opening anything for writing
    (for checking a saved run)."""
    return list(_read_stream(Path(directory) / "applied"))


def _load(directory: Path) -> tuple[HardState | None, Snapshot | None, list[LogEntry]]:
    """What a replica's directory holds: hard state, snapshot, and the log
    entries past the snapshot (a later record for an index supersedes)."""
    hard_state = snapshot = None
    hs = directory / "hard_state"
    if hs.exists():
        term, voted = msgpack.unpackb(hs.read_bytes(), raw=False)
        hard_state = HardState(term, voted)
    sp = directory / "snapshot"
    if sp.exists():
        index, term, data = msgpack.unpackb(sp.read_bytes(), raw=False)
        snapshot = Snapshot(index, term, data)
    entries: dict[int, LogEntry] = {}
    for t in _read_stream(directory / "log"):
        e = LogEntry(*t)
        # A later record for an index supersedes earlier ones (truncation).
        entries = {i: x for i, x in entries.items() if i < e.index}
        entries[e.index] = e
    floor = snapshot.index if snapshot else 0
    return hard_state, snapshot, [entries[i] for i in sorted(entries) if i > floor]


def applied_state(directory: str | Path, sm: Any) -> Any:
    """``sm`` (a fresh state machine, ExactlyOnce-wrapped as the replica's
    was) brought to the state the replica in ``directory`` had applied when
    it stopped: its snapshot, then its log entries up to its last applied
    index. Read-only: for the driver, about a replica that is dead."""
    d = Path(directory)
    _hs, snapshot, entries = _load(d)
    last = max((r[0] for r in read_applied(d)), default=0)
    if snapshot is not None:
        sm.restore(snapshot.data)
    floor = snapshot.index if snapshot else 0
    for e in entries:
        if floor < e.index <= last:
            sm.apply(e)
    return sm


class DiskStorage:
    def __init__(self, directory: str | Path) -> None:
        self.dir = Path(directory)
        self.dir.mkdir(parents=True, exist_ok=True)
        self.hard_state: HardState | None = None
        self.snapshot: Snapshot | None = None
        self.entries: list[LogEntry] = []
        self._load()
        self._log = (self.dir / "log").open("ab")
        self._applied = (self.dir / "applied").open("ab")

    def _load(self) -> None:
        self.hard_state, self.snapshot, self.entries = _load(self.dir)

    def _atomic(self, name: str, payload: Any) -> None:
        tmp = self.dir / f".{name}.tmp"
        tmp.write_bytes(msgpack.packb(payload, use_bin_type=True))
        os.replace(tmp, self.dir / name)

    def persist(self, ready: Ready) -> None:
        """Write a Ready's durable part, in the order Ready documents."""
        if ready.snapshot is not None:
            s = ready.snapshot
            self._atomic("snapshot", (s.index, s.term, s.data))
            self.snapshot = s
            # A marker in the applied record: everything up to s.index is in
            # this replica's state now, even entries it never applied one by
            # one (a follower caught up by InstallSnapshot).
            self._applied.write(msgpack.packb((s.index, s.term, None, None, "snapshot"), use_bin_type=True))
        if ready.truncate_from is not None:
            # Entries are in index order: cut by bisection, not by a scan of the whole log per append.
            kept = self.entries[:bisect.bisect_left(self.entries, ready.truncate_from, key=_index)]
            if len(kept) < len(self.entries):
                self._rewrite(kept + list(ready.entries))
            else:
                self.entries = kept + list(ready.entries)
                self._append(ready.entries)
        if self.snapshot is not None and self.entries and self.entries[0].index <= self.snapshot.index:
            self.entries = [e for e in self.entries if e.index > self.snapshot.index]
            self._rewrite(self.entries)
        if ready.hard_state is not None:
            self._atomic("hard_state", (ready.hard_state.term, ready.hard_state.voted_for))
            self.hard_state = ready.hard_state
        if ready.committed:
            self._applied.write(b"".join(
                msgpack.packb((a.entry.index, a.entry.term, a.entry.client_id, a.entry.request_id, a.duplicate), use_bin_type=True)
                for a in ready.committed
            ))
            self._applied.flush()

    def _append(self, entries: Iterable[LogEntry]) -> None:
        blob = b"".join(msgpack.packb(_entry(e), use_bin_type=True) for e in entries)
        if blob:
            self._log.write(blob)
            self._log.flush()

    def _rewrite(self, entries: list[LogEntry]) -> None:
        self._log.close()
        tmp = self.dir / ".log.tmp"
        tmp.write_bytes(b"".join(msgpack.packb(_entry(e), use_bin_type=True) for e in entries))
        os.replace(tmp, self.dir / "log")
        self._log = (self.dir / "log").open("ab")
        self.entries = list(entries)

    def applied(self) -> list[tuple]:
        """(index, term, client_id, request_id, duplicate) per applied entry, in order."""
        self._applied.flush()
        return list(_read_stream(self.dir / "applied"))

    def close(self) -> None:
        self._log.close()
        self._applied.close()
