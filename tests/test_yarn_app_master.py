"""One application's ApplicationMaster core (schedulers.archs.yarn.app_master):
its asks, what it does with allocations and completion statuses, resync,
and locality per the scenario against a real ResourceManager state."""
from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from schedlab.schedulers.archs.yarn.app_master import AMConfig, AppMasterCore
from schedlab.schedulers.archs.yarn.messages import (
    FINISHED,
    GONE,
    LOST,
    OK,
    PREEMPTED,
    RESYNC,
    STALE,
    AllocateReply,
    Allocation,
    AppRecord,
    ContainerStatus,
    TaskSpec,
)

from tests.test_yarn_rm_state import fresh

REC = AppRecord(1, "a", "u", tuple(TaskSpec(i, (1.0, 2.0), 4.0, preferred=(i % 4, (i + 1) % 4), priority=1 + i % 2)
                                   for i in range(4)), (1.0, 1.0))


def alloc(cid: int, task: int, node: int = 0) -> Allocation:
    return Allocation(cid, task, node, (1.0, 2.0), "node_local")


def done(cid: int, task: int, state: str) -> ContainerStatus:
    return ContainerStatus(cid, task, 0, state, 1.0)


def ok(**kw: object) -> AllocateReply:
    return AllocateReply(OK, 1, **kw)  # type: ignore[arg-type]


def partition_holds(am: AppMasterCore) -> None:
    sets = [set(am.finished), set(am.to_ask), set(am.asked), set(am.holding.values())]
    assert sum(map(len, sets)) == len(am.tasks) and set().union(*sets) == set(am.tasks)


def test_asks_carry_the_data_replicas_and_are_sent_once() -> None:
    am = AppMasterCore(REC)
    call = am.next_call()
    assert [a.task_id for a in call.asks] == [0, 1, 2, 3]
    assert [a.preferred for a in call.asks] == [(0, 1), (1, 2), (2, 3), (3, 0)]
    assert [a.priority for a in call.asks] == [1, 2, 1, 2] and all(a.relax_locality for a in call.asks)
    assert call.attempt == 1 and am.next_call().asks == []


def test_locality_per_scenario() -> None:
    pinned = AppMasterCore(REC, config=AMConfig(relax_locality=False)).next_call().asks
    assert not any(a.relax_locality for a in pinned) and all(a.preferred for a in pinned)
    anywhere = AppMasterCore(REC, config=AMConfig(locality=False)).next_call().asks
    assert all(a.preferred == () and a.relax_locality for a in anywhere)  # no preference: never pinned


def test_allocation_starts_its_task_and_completion_finishes_it() -> None:
    am = AppMasterCore(REC)
    am.next_call()
    am.on_reply(ok(allocated=(alloc(10, 2),)))
    assert am.holding == {10: 2} and 2 not in am.asked
    call = am.next_call()
    assert call.starts == [(10, 2)] and am.next_call().starts == []
    am.on_reply(ok(completed=(done(10, 2, FINISHED),)))
    assert list(am.finished) == [2] and not am.done
    for cid, t in ((11, 0), (12, 1), (13, 3)):
        am.on_reply(ok(allocated=(alloc(cid, t),), completed=()))
        am.on_reply(ok(completed=(done(cid, t, FINISHED),)))
    assert am.done
    partition_holds(am)


def test_unneeded_containers_are_released() -> None:
    am = AppMasterCore(REC, finished=[3])
    am.next_call()
    am.on_reply(ok(allocated=(alloc(10, 0), alloc(11, 0), alloc(12, 3), alloc(13, 99))))
    call = am.next_call()
    assert call.starts == [(10, 0)] and call.releases == [11, 12, 13] and am.released == 3
    partition_holds(am)


def test_preempted_or_lost_tasks_are_asked_again() -> None:
    am = AppMasterCore(REC)
    am.next_call()
    am.on_reply(ok(allocated=(alloc(10, 0), alloc(11, 1))))
    am.on_reply(ok(completed=(done(10, 0, PREEMPTED), done(11, 1, LOST), done(99, 2, LOST))))
    assert set(am.to_ask) == {0, 1} and am.reasked == 2 and not am.holding
    assert {a.task_id for a in am.next_call().asks} == {0, 1}
    partition_holds(am)


def test_a_start_not_sent_yet_is_dropped_when_its_container_ends() -> None:
    am = AppMasterCore(REC)
    am.next_call()
    am.on_reply(ok(allocated=(alloc(10, 0),)))
    am.on_reply(ok(completed=(done(10, 0, PREEMPTED),)))
    call = am.next_call()
    assert call.starts == [] and [a.task_id for a in call.asks] == [0]


def test_refused_start_is_asked_again() -> None:
    am = AppMasterCore(REC)
    am.next_call()
    am.on_reply(ok(allocated=(alloc(10, 0),)))
    am.next_call()
    am.on_reply(ok(refused_starts=(10,)))
    assert am.to_ask == {0: None} and not am.holding


def test_statuses_stop_or_resync() -> None:
    for status in (STALE, GONE):
        am = AppMasterCore(REC)
        assert am.on_reply(AllocateReply(status)) == status and am.stopped
    am = AppMasterCore(REC, attempt=2)
    am.next_call()
    am.on_reply(ok(allocated=(alloc(10, 0),)))
    am.on_reply(ok(completed=(done(10, 0, FINISHED),)))
    am.on_reply(ok(allocated=(alloc(11, 1),)))
    am.to_ask[3] = None  # pretend 3 is still to ask
    am.asked.pop(3)
    assert am.on_reply(AllocateReply(RESYNC)) == RESYNC and am.needs_resync and not am.stopped
    r = am.resync()
    assert r.attempt == 2 and r.containers == {11: 1} and r.finished == (0,)
    assert sorted(a.task_id for a in r.asks) == [2, 3] and not am.to_ask and not am.needs_resync
    partition_holds(am)


def test_new_attempt_asks_only_for_unfinished_tasks() -> None:
    am = AppMasterCore(REC, attempt=2, finished=[0, 2])
    assert [a.task_id for a in am.next_call().asks] == [1, 3]
    assert AppMasterCore(REC, finished=[0, 1, 2, 3]).done


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["alloc", "finish", "preempt", "lost", "refuse", "call"]),
                          st.integers(0, 3), st.integers(0, 5)), max_size=60))
def test_every_task_is_in_exactly_one_state(ops: list[tuple[str, int, int]]) -> None:
    """Whatever the RM answers (even nonsense: allocations for tasks not
    asked, statuses for unknown containers), a task is finished, to ask,
    asked or held, never two of these; a held task has one container."""
    am = AppMasterCore(REC)
    next_cid = 100
    for op, task, pick in ops:
        held = sorted(am.holding)
        if op == "call":
            am.next_call()
        elif op == "alloc":
            am.on_reply(ok(allocated=(alloc(next_cid, task),)))
            next_cid += 1
        elif op == "refuse" and held:
            am.on_reply(ok(refused_starts=(held[pick % len(held)],)))
        elif held:
            cid = held[pick % len(held)]
            state = {"finish": FINISHED, "preempt": PREEMPTED, "lost": LOST}[op] if op != "refuse" else LOST
            am.on_reply(ok(completed=(done(cid, am.holding[cid], state),)))
        partition_holds(am)
        assert len(set(am.holding.values())) == len(am.holding)
    assert am.done == (len(am.finished) == 4)


# ------------------------------------------------------------ against the RM

def test_pinned_tasks_only_run_on_their_data_nodes() -> None:
    loop = fresh("capacity", seed=9)
    loop.am_config = AMConfig(relax_locality=False)
    recs = [AppRecord(a, "a", "u", tuple(TaskSpec(i, (1.0, 2.0), 2.0, preferred=((a + i) % 4,)) for i in range(5)),
                      (1.0, 1.0), submitted_at=float(a)) for a in (1, 2)]
    for r in recs:
        loop.submit(r)
    loop.run()
    assert loop.done_apps == {1, 2}
    allocs = loop.kinds("container_allocated")
    assert len(allocs) == 10 and {e["locality"] for e in allocs} == {"node_local"}
    pref = {(r.app_id, t.task_id): t.preferred[0] for r in recs for t in r.tasks}
    assert all(e["node"] == pref[(e["app"], e["task"])] for e in allocs)


def test_relaxed_asks_may_leave_their_data_nodes_under_pressure() -> None:
    loop = fresh("fifo", seed=9)  # FIFO: no locality delay
    rec = AppRecord(1, "a", "u", tuple(TaskSpec(i, (1.0, 2.0), 3.0, preferred=(0,)) for i in range(8)), (1.0, 1.0))
    loop.submit(rec)
    loop.run()
    nodes = {e["node"] for e in loop.kinds("container_allocated")}
    assert loop.done_apps == {1} and len(nodes) > 1
    loop.tick()  # the finished app's AM container is killed at its node's next heartbeat
    assert np.all(np.array([n.used() for n in loop.nodes]) == 0)


def test_the_am_and_the_rm_books_agree_call_by_call() -> None:
    # What a run's request accounting compares (tests/test_run_yarn.py):
    # the AM's books and the RM's open books, each counting the calls it
    # answered, agree after every call; an allocation the AM has not heard
    # yet is the RM's undelivered one.
    from schedlab.schedulers.archs.yarn.rm_state import RMState

    from tests.test_yarn_rm_state import make_scheduler, record

    rm = RMState(make_scheduler("fifo", nodes=2))
    rec = record(1, "a", 3, nodes=2)
    rm.submit(rec, 0.0)
    rm.node_heartbeat(0, [], 1.0)  # the AM container starts
    am = AppMasterCore(rec)

    def books() -> tuple[list, list]:
        (b,) = rm.open_books()
        return b, am.books()

    call = am.next_call()
    am.on_reply(rm.am_allocate(1, call.asks, call.releases, call.starts, 2.0, attempt=1))
    b, a = books()
    assert b[7] == a[6] == 1 and b[3] == a[2] == [0, 1, 2] and b[5] == []
    rm.node_heartbeat(1, [], 3.0)  # containers for some tasks, not told the AM yet
    b, a = books()
    told = {str(c): t for c, t in b[5]}
    assert told and a[2] == [0, 1, 2] and sorted(b[3] + list(told.values())) == [0, 1, 2]
    call = am.next_call()
    am.on_reply(rm.am_allocate(1, call.asks, call.releases, call.starts, 4.0, attempt=1))
    b, a = books()
    assert b[7] == a[6] == 2 and b[5] == [] and a[2] == b[3] and a[4] == b[4] == told
    assert a[3] == a[7] == [] and sorted(a[2] + list(a[4].values())) == [0, 1, 2]
