"""The RM state store's pure parts: the mirror that folds the RM core's
events into application records, and the replicated machine that holds
them beside the lease, fenced by the lease epoch."""
from __future__ import annotations

from hypothesis import given, strategies as st

from schedlab.schedulers.archs.yarn.state_store import StoredApp, StoreMirror
from schedlab.schedulers.consensus.fenced_store import FencedStoreMachine as RMStoreMachine


def _ev(kind: str, app: int, **kw: object) -> dict:
    return {"event": kind, "app": app, **kw}


def test_the_mirror_keeps_attempt_failures_am_and_end_state() -> None:
    m = StoreMirror()
    m.fold(_ev("app_submitted", 7, queue="root.a"))
    assert m.apps[7] == StoredApp()
    m.fold(_ev("am_launched", 7, attempt=1, container=3, node=2))
    assert m.apps[7] == StoredApp(attempt=1, am_launched=True)
    m.fold(_ev("am_attempt", 7, attempt=2, reason="am_expired", counted=True, failures=1))
    assert m.apps[7] == StoredApp(attempt=2, failures=1, am_launched=False)
    m.fold(_ev("am_launched", 7, attempt=2, container=9, node=4))
    m.mark_scheduled(7)
    m.fold(_ev("app_failed", 7, attempt=2))
    assert m.apps[7] == StoredApp(attempt=2, failures=1, am_launched=True, final="failed", scheduled=True)
    # An ended application's record is final.
    m.fold(_ev("am_attempt", 7, attempt=3, reason="x", counted=True, failures=2))
    assert m.apps[7].final == "failed" and m.apps[7].attempt == 2
    # Events that say nothing the store keeps change nothing.
    m.take_dirty()
    m.fold(_ev("container_allocated", 7, task=1))
    assert not m.dirty


def test_dirty_records_are_written_once_and_put_back_when_a_write_fails() -> None:
    m = StoreMirror()
    m.fold(_ev("app_submitted", 1))
    m.fold(_ev("app_submitted", 2))
    first = m.take_dirty()
    assert sorted(first) == [1, 2] and not m.take_dirty()
    m.fold(_ev("am_launched", 2, attempt=1))
    m.put_back(first)  # the first write did not land
    again = m.take_dirty()
    assert sorted(again) == [1, 2] and again[2] == StoredApp(am_launched=True).to_wire()  # the newest value


def _campaign(sm: RMStoreMachine, who: str, now: float, lease: float = 10.0) -> int:
    holder, epoch, _ = sm.apply(("campaign", who, now, lease))
    assert holder == who
    return epoch


def test_writes_are_fenced_by_the_lease_epoch() -> None:
    sm = RMStoreMachine()
    e1 = _campaign(sm, "rm-0@1", 0.0)
    assert sm.apply(("put", e1, [[5, StoredApp(attempt=1).to_wire()]])) is True
    # rm-0's lease lapses; rm-1 takes over with a new epoch.
    e2 = _campaign(sm, "rm-1@1", 20.0)
    assert e2 == e1 + 1
    # The deposed RM's late write is refused, not applied over its successor's.
    assert sm.apply(("put", e1, [[5, StoredApp(attempt=9).to_wire()]])) is False
    assert sm.apply(("load", e1)) is None
    assert sm.apply(("load", e2)) == [[5, StoredApp(attempt=1).to_wire()]]
    assert sm.apply(("put", e2, [[5, StoredApp(attempt=2, failures=1).to_wire()]])) is True
    assert StoredApp.from_wire(sm.apply(("load", e2))[0][1]) == StoredApp(attempt=2, failures=1)
    # The lease half answers as the lease machine does.
    assert sm.query(("leader",))[:2] == ["rm-1@1", e2]


def test_a_snapshot_with_int_keyed_records_restores() -> None:
    sm = RMStoreMachine()
    e = _campaign(sm, "rm-0@1", 0.0)
    sm.apply(("put", e, [[3, StoredApp(final="finished", scheduled=True).to_wire()], [12, StoredApp().to_wire()]]))
    other = RMStoreMachine()
    other.restore(sm.snapshot())
    assert other.apply(("load", e)) == sm.apply(("load", e))
    assert other.query(("leader",)) == sm.query(("leader",))


_events = st.lists(st.tuples(
    st.sampled_from(["app_submitted", "am_launched", "am_attempt", "app_finished", "app_failed", "app_restored"]),
    st.integers(0, 3), st.integers(1, 5), st.integers(0, 4)), max_size=40)


@given(_events)
def test_an_end_state_once_folded_never_changes(seq: list[tuple[str, int, int, int]]) -> None:
    m = StoreMirror()
    ended: dict[int, StoredApp] = {}
    for kind, app, attempt, failures in seq:
        m.fold(_ev(kind, app, attempt=attempt, failures=failures))
        rec = m.apps.get(app)
        if app in ended:
            assert rec == ended[app]
        elif rec is not None and rec.final is not None:
            ended[app] = StoredApp.from_wire(rec.to_wire())
