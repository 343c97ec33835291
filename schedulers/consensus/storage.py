"""What a node persists, and the one way a ``Ready`` is applied to it.

``Storage`` is an in-memory stand-in for the disk a coordinator actor will
write; the actor can keep this shape and swap the lists for files. A node is
restarted with ``RaftNode.restore(..., storage.hard_state, storage.snapshot,
storage.entries)``.
"""
from __future__ import annotations

import bisect
from dataclasses import dataclass, field

from schedlab.schedulers.consensus.messages import HardState, LogEntry, Ready, Snapshot


def _index(e: LogEntry) -> int:
    return e.index


@dataclass
class Storage:
    hard_state: HardState | None = None
    snapshot: Snapshot | None = None
    entries: list[LogEntry] = field(default_factory=list)

    def persist(self, ready: Ready) -> None:
        """Apply a Ready's durable part (see ``Ready`` for the order)."""
        if ready.snapshot is not None:
            self.snapshot = ready.snapshot
        if ready.truncate_from is not None:
            # Entries are in index order: cut by bisection, not a scan per append.
            self.entries = self.entries[:bisect.bisect_left(self.entries, ready.truncate_from, key=_index)]
            self.entries.extend(ready.entries)
        if self.snapshot is not None and self.entries and self.entries[0].index <= self.snapshot.index:
            self.entries = [e for e in self.entries if e.index > self.snapshot.index]
        if ready.hard_state is not None:
            self.hard_state = ready.hard_state
