"""The pure seams YARN's live half needs, beyond the RM/AM cores' own
tests: the AM liveness monitor (``RMState.expire_ams``), foreign load (the
run's prefill) on nodes, a restart that knows no attempt (the AMs' resync
tells it) and that finishes applications whose every task is known done,
``AppMasterCore.undo`` for a call that never arrived, and jobs as
application records (``apps.app_record``)."""
from __future__ import annotations

import math

import numpy as np
import pytest
from schedlab.schedulers.archs.yarn.app_master import AppMasterCore
from schedlab.schedulers.archs.yarn.apps import app_record, pool_of
from schedlab.schedulers.archs.yarn.messages import AM_TASK, RunningReport
from schedlab.schedulers.archs.yarn.rm_books import APP_FINISHED, RUNNING
from schedlab.schedulers.archs.yarn.rm_state import RMState
from schedlab.schedulers.archs.yarn.spec import YarnQueueSpec, YarnSpec
from schedlab.schedulers.model.jobs import Job, JobKind
from tests.test_yarn_rm_state import Loop, fresh, make_scheduler, record


def _run_until_am(loop: Loop, app: int) -> None:
    while app not in loop.ams:
        loop.tick()


def test_a_silent_am_expires_and_a_new_attempt_completes_the_app() -> None:
    loop = fresh("capacity", seed=1)
    loop.submit(record(1, "a", 4, duration=5.0))
    _run_until_am(loop, 1)
    loop.tick()
    assert loop.rm.expire_ams(loop.now, 30.0) == []  # it calls every tick
    loop.ams.pop(1)  # its pool died: the AM container still runs, nobody calls
    heard = loop.rm.am_heard[1]
    assert loop.rm.expire_ams(heard + 29.0, 30.0) == []
    assert loop.rm.expire_ams(heard + 30.0, 30.0) == [1]
    loop.drain()
    assert [e["reason"] for e in loop.kinds("am_attempt")] == ["am_expired"]
    assert loop.kinds("am_expired")[0]["attempt"] == 1
    assert (loop.rm.attempt(1), loop.rm.apps[1].failures) == (2, 1)
    loop.now = heard + 30.0
    loop.run(until=loop.now + 200)
    assert loop.done_apps == {1}


def test_a_span_the_rm_itself_was_deaf_is_not_an_ams_silence() -> None:
    # The RM frozen for 25 s: its monitor then credits every AM that span
    # (never past now), so an AM heard just before is not expired at the
    # thaw; one silent on its own still is, that much later.
    loop = fresh("capacity", seed=1)
    loop.submit(record(1, "a", 4, duration=50.0))
    _run_until_am(loop, 1)
    loop.tick()
    heard = loop.rm.am_heard[1]
    loop.rm.deaf(25.0, heard + 31.0)
    assert loop.rm.am_heard[1] == heard + 25.0
    assert loop.rm.expire_ams(heard + 31.0, 30.0) == []
    assert loop.rm.expire_ams(heard + 55.0, 30.0) == [1]
    loop.rm.am_heard[2] = 10.0
    loop.rm.deaf(100.0, 40.0)  # never into the future
    assert loop.rm.am_heard[2] == 40.0


def test_no_expiry_during_a_recovery_window_or_before_the_am_runs() -> None:
    rm = RMState(make_scheduler("capacity"), epoch=1, recovering=True)
    rm.restore_app(record(1, "a", 2), 0.0, attempt=None, am_launched=False)
    assert rm.expire_ams(1e6, 1.0) == []
    fresh_rm = RMState(make_scheduler("capacity"))
    fresh_rm.submit(record(2, "a", 2), 0.0)
    assert fresh_rm.expire_ams(1e6, 1.0) == []  # accepted, AM not launched: not the monitor's business


def test_foreign_load_takes_room_until_it_ends_and_dies_with_its_node() -> None:
    rm = RMState(make_scheduler("fifo", nodes=2, node=(4.0, 8.0)))
    rm.add_foreign(0, (-1, 0), [3.0, 2.0])
    assert rm.state.free[0].tolist() == [1.0, 6.0]
    assert rm.utilization()[0] == pytest.approx(3.0 / 8.0)
    rm.node_heartbeat(0, [(-1, 0)], 1.0)  # it ended
    assert rm.state.free[0].tolist() == [4.0, 8.0] and not rm.foreign[0]
    rm.add_foreign(1, (-1, 1), [4.0, 1.0])
    rm.node_lost(1, 2.0)
    assert 1 not in rm.foreign
    rm.node_heartbeat(1, [], 3.0)  # back empty (reset)
    assert rm.state.free[1].tolist() == [4.0, 8.0]


def test_a_restarted_rm_keeps_foreign_load_the_node_reports() -> None:
    rm = RMState(make_scheduler("fifo", nodes=2), epoch=1, recovering=True)
    rm.recover_node(0, [], 0.0, foreign=[((-1, 3), [2.0, 2.0])])
    assert rm.state.free[0].tolist() == [2.0, 6.0]


def test_restore_without_an_attempt_takes_the_ams_and_reconciles() -> None:
    loop = fresh("capacity", seed=2)
    loop.submit(record(1, "a", 4, duration=30.0))
    _run_until_am(loop, 1)
    # The AM is on its second attempt when the RM restarts.
    loop.rm.apps[1].attempt = 2
    loop.ams[1].attempt = 2
    for _ in range(4):
        loop.tick()
    old = loop.rm
    new = RMState(make_scheduler("capacity"), epoch=old.epoch + 1, recovering=True)
    new.restore_app(loop.records[1], loop.now, attempt=None, am_launched=False)
    loop.rm = new
    loop.tick()  # nodes re-register; the AM's call is answered RESYNC and it resyncs with attempt 2
    assert new.apps[1].attempt == 2 and new.apps[1].attempt_known and new.apps[1].synced
    new.settle_recovery(loop.now)
    assert new.apps[1].state == RUNNING
    loop.run(until=loop.now + 300)
    assert loop.done_apps == {1}


def test_settling_finishes_an_app_whose_every_task_is_known_done() -> None:
    rm = RMState(make_scheduler("capacity"), epoch=1, recovering=True)
    rec = record(1, "a", 2)
    rm.restore_app(rec, 0.0, attempt=None, am_launched=False, finished=[0, 1])
    rm.settle_recovery(1.0)
    assert rm.app_state(1) == APP_FINISHED
    assert [e["event"] for e in rm.take_events()][-2:] == ["app_finished", "recovery_settled"]


def test_scheduled_tasks_are_the_started_and_the_finished() -> None:
    loop = fresh("fifo", seed=3)
    loop.submit(record(1, "a", 3, duration=4.0))
    while loop.rm.apps.get(1) is None or len(loop.rm.scheduled_tasks(1)) < 3:
        loop.tick()
    assert loop.rm.scheduled_tasks(1) == {0, 1, 2}
    loop.run()
    assert loop.done_apps == {1}


def test_undo_puts_a_lost_call_back() -> None:
    rec = record(1, "a", 3)
    am = AppMasterCore(rec)
    call = am.next_call()
    assert len(call.asks) == 3 and not am.to_ask
    am.undo(call)
    again = am.next_call()
    assert sorted(a.task_id for a in again.asks) == [0, 1, 2]


def test_jobs_become_records_with_stable_input_locations() -> None:
    spec = YarnSpec(queues=(YarnQueueSpec("root.q", classes=("batch",), users=2, data_replicas=2),))
    job = Job(7, "batch", JobKind.BATCH, 0, 1.0, (0.5, 1.0), (3.0, math.inf))
    a = app_record(spec, job, 10, seed=4, now=2.0)
    b = app_record(spec, job, 10, seed=4, now=2.0)
    assert a == b and a.queue == "root.q" and a.user == "u1" and a.submitted_at == 2.0
    assert [t.duration for t in a.tasks] == [3.0, math.inf]
    assert all(len(set(t.preferred)) == 2 and all(0 <= n < 10 for n in t.preferred) for t in a.tasks)
    assert a.am_resources == spec.am
    assert {pool_of(i, 3) for i in range(6)} == {0, 1, 2}


def test_an_am_container_reported_on_restart_gives_its_am_until_the_expiry() -> None:
    """Counted from the window's close: while it was open the AM's calls
    were told to wait, not heard. A window longer than the expiry (here 90
    s against 30) must not fail the AM that waited it out."""
    rm = RMState(make_scheduler("capacity"), epoch=1, recovering=True)
    rm.restore_app(record(1, "a", 2), 0.0, attempt=None, am_launched=False)
    rm.recover_node(0, [RunningReport(5, 1, AM_TASK, (1.0, 1.0))], 10.0)
    rm.settle_recovery(100.0)
    assert rm.apps[1].state == RUNNING and rm.am_heard[1] == 100.0
    assert rm.expire_ams(129.0, 30.0) == [] and rm.expire_ams(130.0, 30.0) == [1]
    assert np.all(rm.state.free >= 0)


def test_the_prefill_added_at_once_is_the_prefill_added_row_by_row() -> None:
    # An RM starting on a large cell adds tens of thousands of rows: in one
    # go (each node's capacity set once), with the same books as one by one.
    rows = [(n % 5, (-1, i), [0.5 + (i % 3) * 0.25, 1.0]) for i, n in enumerate(range(23))]
    one = RMState(make_scheduler("capacity", nodes=6, node=(8.0, 16.0)))
    for node, key, req in rows:
        one.add_foreign(node, key, req)
    many = RMState(make_scheduler("capacity", nodes=6, node=(8.0, 16.0)))
    many.add_foreign_many(rows)
    assert np.array_equal(one.state.free, many.state.free) and np.array_equal(one.state.capacity, many.state.capacity)
    assert one.state.total.tolist() == many.state.total.tolist() == many.state.capacity.sum(axis=0).tolist()
    assert many.state.free[5].tolist() == [8.0, 16.0]  # untouched
    assert {n: sorted(d) for n, d in one.foreign.items()} == {n: sorted(d) for n, d in many.foreign.items()}


def test_node_capacities_set_at_once_keep_the_total_and_refuse_as_one_at_a_time_does() -> None:
    state = make_scheduler("fifo", nodes=4, node=(4.0, 8.0)).state
    state.set_node_capacities([0, 2], [[2.0, 4.0], [0.0, 0.0]])
    assert state.total.tolist() == [10.0, 20.0]
    state.set_node_capacity(2, np.array([4.0, 8.0]))
    assert state.total.tolist() == [14.0, 28.0]
    with pytest.raises(ValueError, match="finite numbers"):
        state.set_node_capacities([1, 3], [[1.0, 1.0], [-1.0, 0.0]])
    assert state.capacity[1].tolist() == [4.0, 8.0]  # nothing changed
