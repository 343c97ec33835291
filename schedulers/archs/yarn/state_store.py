"""YARN's RM state store on the coordinator group (Hadoop's ZKRMStateStore,
the group playing ZooKeeper's part).

Why: the books a new active RM cannot rebuild from the NodeManagers and the
AMs are the applications' own: which attempt each is on, how many counted
AM failures it has had, whether its AM ever ran, and whether it already
ended (finished, failed, killed). Without them an application that failed
before a failover runs again and counted failures restart from 0.

The records live in ``schedulers.consensus.fenced_store`` beside the RMs'
lease, so a write is fenced by the lease epoch exactly (Hadoop fences the
store with a ZooKeeper ACL the active RM owns): a deposed RM's late write
is refused, never applied over its successor's.

Pure: ``StoreMirror`` folds the RM core's events into records and says
which changed since the last write.
"""
from __future__ import annotations

from dataclasses import dataclass

from schedlab.schedulers.archs.yarn.events import (
    AM_ATTEMPT, AM_LAUNCHED, APP_ENDED, APP_RESTORED, APP_RESYNCED, APP_SUBMITTED,
)
from schedlab.schedulers.archs.yarn.rm_books import TERMINAL


@dataclass
class StoredApp:
    """An application's record in the store (ApplicationStateData with its
    current ApplicationAttemptStateData). ``final``: its end state, None
    while it runs. ``scheduled``: every task of it had started once (what
    the run's job accounting needs of an application that ended: a failed
    one that never was is abandoned)."""

    attempt: int = 1
    failures: int = 0
    am_launched: bool = False
    final: str | None = None
    scheduled: bool = False

    def to_wire(self) -> list:
        return [self.attempt, self.failures, self.am_launched, self.final, self.scheduled]

    @staticmethod
    def from_wire(w: list) -> StoredApp:
        return StoredApp(int(w[0]), int(w[1]), bool(w[2]), w[3], bool(w[4]))


class StoreMirror:
    """The active RM's copy of what the store holds for its applications,
    kept from the core's events. ``dirty`` collects the records changed
    since the last ``take_dirty``: the shell writes them (newest value per
    application: a write carries the whole record, so writes may merge)."""

    def __init__(self, apps: dict[int, StoredApp] | None = None) -> None:
        self.apps: dict[int, StoredApp] = dict(apps or {})
        self.dirty: set[int] = set()

    def fold(self, e: dict) -> None:
        """One core event (``event`` key included)."""
        kind = e["event"]
        if kind not in _FOLDS:
            return
        app = int(e["app"])
        rec = self.apps.get(app)
        if rec is None:
            rec = self.apps[app] = StoredApp()
        if rec.final is not None:
            return  # an ended application's record is final
        _FOLDS[kind](rec, e)
        self.dirty.add(app)

    def mark_scheduled(self, app: int) -> None:
        rec = self.apps.setdefault(app, StoredApp())
        if not rec.scheduled:
            rec.scheduled = True
            self.dirty.add(app)

    def take_dirty(self) -> dict[int, list]:
        out = {a: self.apps[a].to_wire() for a in sorted(self.dirty)}
        self.dirty.clear()
        return out

    def put_back(self, updates: dict[int, list]) -> None:
        """A write that did not land: its records are written again with
        the next one (their newest values)."""
        self.dirty.update(updates)


def _submitted(rec: StoredApp, e: dict) -> None:
    pass  # the record's existence is the news


def _launched(rec: StoredApp, e: dict) -> None:
    rec.attempt, rec.am_launched = int(e["attempt"]), True


def _new_attempt(rec: StoredApp, e: dict) -> None:
    rec.attempt, rec.failures, rec.am_launched = int(e["attempt"]), int(e["failures"]), False


def _attempt_learned(rec: StoredApp, e: dict) -> None:
    rec.attempt = int(e["attempt"])


def _ended(rec: StoredApp, e: dict) -> None:
    rec.final = _FINAL_STATE[e["event"]]


_FINAL_STATE = {event: state for state, event in APP_ENDED.items()}
_FOLDS = {
    APP_SUBMITTED: _submitted,
    APP_RESTORED: _attempt_learned,
    APP_RESYNCED: _attempt_learned,
    AM_LAUNCHED: _launched,
    AM_ATTEMPT: _new_attempt,
    **{APP_ENDED[state]: _ended for state in TERMINAL},
}
