"""The in-memory Raft log behind a snapshot offset.

Indices start at 1; index ``snap_index`` (0 when there is no snapshot) is the
last entry folded into the snapshot, whose term ``snap_term`` is kept so the
consistency check still works at the boundary. Entries above it are held in a
list where ``entries[i].index == snap_index + 1 + i``.
"""
from __future__ import annotations

from typing import Iterable, Sequence

from schedlab.schedulers.consensus.messages import LogEntry


class RaftLog:
    def __init__(self, snap_index: int = 0, snap_term: int = 0, entries: Iterable[LogEntry] = ()) -> None:
        self.snap_index = snap_index
        self.snap_term = snap_term
        self.entries: list[LogEntry] = []
        self.append(entries)

    @property
    def last_index(self) -> int:
        return self.snap_index + len(self.entries)

    @property
    def last_term(self) -> int:
        return self.entries[-1].term if self.entries else self.snap_term

    def term_at(self, index: int) -> int | None:
        """The term of ``index``, or None if it is compacted away or beyond the end."""
        if index == self.snap_index:
            return self.snap_term
        if self.snap_index < index <= self.last_index:
            return self.entries[index - self.snap_index - 1].term
        return None

    def entry(self, index: int) -> LogEntry:
        return self.entries[index - self.snap_index - 1]

    def slice(self, lo: int, hi: int) -> list[LogEntry]:
        """Entries with lo <= index < hi (lo must be above the snapshot)."""
        assert lo > self.snap_index, (lo, self.snap_index)
        return self.entries[lo - self.snap_index - 1: max(0, hi - self.snap_index - 1)]

    def append(self, entries: Iterable[LogEntry]) -> None:
        for e in entries:
            # A gap or a wrong index here would silently corrupt every later
            # consistency check, so fail loudly instead.
            assert e.index == self.last_index + 1, (e.index, self.last_index)
            self.entries.append(e)

    def truncate_from(self, index: int) -> None:
        """Drop every entry with index >= ``index``."""
        assert index > self.snap_index
        del self.entries[index - self.snap_index - 1:]

    def compact(self, index: int, term: int) -> None:
        """Fold entries up to ``index`` into a snapshot boundary. If the log
        does not hold ``index`` with ``term`` the whole log is discarded (Raft
        §7: a snapshot that disagrees with the log supersedes it)."""
        if self.term_at(index) == term and index <= self.last_index:
            del self.entries[:index - self.snap_index]
        else:
            self.entries = []
        self.snap_index, self.snap_term = index, term

    def first_index_of_term(self, index: int) -> int:
        """The first index of the run of ``term_at(index)`` ending at ``index``
        (not below the snapshot boundary): the follower's backtracking hint."""
        term = self.term_at(index)
        i = index
        while i - 1 > self.snap_index and self.term_at(i - 1) == term:
            i -= 1
        return i

    def last_index_of_term(self, term: int) -> int | None:
        for e in reversed(self.entries):
            if e.term == term:
                return e.index
            if e.term < term:
                break
        return None

    def is_up_to_date(self, last_index: int, last_term: int) -> bool:
        """Raft §5.4.1: is a candidate's log at least as up to date as ours?"""
        return (last_term, last_index) >= (self.last_term, self.last_index)

    def snapshot_view(self) -> tuple[int, int, Sequence[LogEntry]]:
        return self.snap_index, self.snap_term, tuple(self.entries)
