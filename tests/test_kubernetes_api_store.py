"""The Kubernetes API store's replicated machine (pure): versions and
compare-and-swap, per-op and atomic batches, watches from a revision
(by kind and by node), compaction and relist, snapshot/restore."""
from __future__ import annotations

import pickle
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from schedlab.schedulers.archs.kubernetes.api_store import (
    ABORTED,
    ADDED,
    CONFLICT,
    DELETED,
    INVALID,
    MODIFIED,
    NOT_FOUND,
    OK,
    APIStoreMachine,
    APIStoreMachineFactory,
)

State = dict[tuple[str, str], tuple[Any, int]]


def txn(m: APIStoreMachine, *ops: Any, atomic: bool = False) -> dict:
    return m.apply(("txn", list(ops), atomic))


def pod(node: str | None = None, **extra: Any) -> dict:
    return {"node": node, **extra}


def listed(m: APIStoreMachine, kind: str, where: dict | None = None) -> State:
    q = ("list", kind) if where is None else ("list", kind, where)
    return {(kind, n): (v, r) for n, v, r in m.query(q)["items"]}


def replay(events: list, state: State | None = None) -> State:
    """Fold watch events into a state, checking each type fits what was
    there (ADDED only for an absent object, the others for a present one)."""
    out: State = dict(state or {})
    for rev, typ, kind, name, value in events:
        present = (kind, name) in out
        assert present == (typ != ADDED), (rev, typ, kind, name)
        if typ == DELETED:
            del out[(kind, name)]
        else:
            out[(kind, name)] = (value, rev)
    return out


def watch_all(m: APIStoreMachine, kinds: Any, since: int, where: dict | None = None, limit: int = 3) -> tuple[list, int]:
    """Page through a watch; (events, the revision to resume from)."""
    events: list = []
    while True:
        q = ("watch", kinds, since, limit) if where is None else ("watch", kinds, since, limit, where)
        r = m.query(q)
        assert not r["gone"]
        assert all(e[0] > since for e in r["events"])
        events += r["events"]
        since = r["revision"]
        if not r["more"]:
            return events, since


# -- versions and compare-and-swap ----------------------------------------


def test_create_update_delete_carry_versions() -> None:
    m = APIStoreMachine()
    assert txn(m, ("create", "pods", "a", pod())) == {"revision": 1, "ok": True, "results": [[OK, 1]]}
    assert m.query(("get", "pods", "a")) == [pod(), 1]
    assert txn(m, ("create", "pods", "a", pod()))["results"] == [[CONFLICT, 1]]  # exists
    assert txn(m, ("update", "pods", "a", pod("n1"), 1))["results"] == [[OK, 2]]
    assert txn(m, ("update", "pods", "a", pod("n2"), 1))["results"] == [[CONFLICT, 2]]  # stale version
    assert txn(m, ("update", "pods", "a", pod("n3")))["results"] == [[OK, 3]]  # unconditional
    assert txn(m, ("delete", "pods", "a", 2))["results"] == [[CONFLICT, 3]]
    assert txn(m, ("delete", "pods", "a", 3))["results"] == [[OK, 4]]
    assert m.query(("get", "pods", "a")) is None
    assert txn(m, ("update", "pods", "a", pod()))["results"] == [[NOT_FOUND, None]]
    assert txn(m, ("delete", "pods", "a"))["results"] == [[NOT_FOUND, None]]
    # Failed ops write nothing: the revision counts applied writes only.
    assert m.query(("revision",)) == {"revision": 4, "compacted": 0}


def test_the_second_of_two_racing_binds_fails_with_the_current_version() -> None:
    m = APIStoreMachine()
    txn(m, ("create", "pods", "p", pod()))
    value, version = m.query(("get", "pods", "p"))  # both profiles read version 1
    first = txn(m, ("update", "pods", "p", {**value, "node": "n1"}, version))
    second = txn(m, ("update", "pods", "p", {**value, "node": "n2"}, version))
    assert first["results"] == [[OK, 2]]
    assert second["results"] == [[CONFLICT, 2]] and not second["ok"]
    assert m.query(("get", "pods", "p")) == [pod("n1"), 2]


def test_malformed_ops_are_refused_not_raised_and_unknown_commands_raise() -> None:
    m = APIStoreMachine()
    bad = [
        ("create", "pods", "a"),  # no value
        ("update", "pods", "a", pod(), "7"),  # version not an int
        ("delete", "pods", 3),  # name not a string
        ("bind", "pods", "a"),
        ("create", "pods", "b", {"node": ["n1"]}),  # an indexed field must be a scalar,
        ("create", "pods", "b", {"node": float("nan")}),  # and equal itself
        (["create"], "pods", "b", pod()),
        "create",
    ]
    r = txn(m, *bad, ("create", "pods", "ok", pod()))
    assert r["results"] == [[INVALID, None]] * len(bad) + [[OK, 1]]
    with pytest.raises(ValueError):
        m.apply(("put", "pods", "a", {}))
    with pytest.raises(ValueError):
        m.query(("range", "pods"))
    with pytest.raises(ValueError):
        m.query(("watch", "pods", 0, None, {"phase": "Running"}))  # not indexed


# -- batches ----------------------------------------------------------------


def test_a_per_op_batch_applies_each_op_that_passes_alone() -> None:
    m = APIStoreMachine()
    txn(m, *[("create", "pods", p, pod()) for p in "abc"])
    r = txn(
        m,
        ("update", "pods", "a", pod("n1"), 1),
        ("update", "pods", "b", pod("n1"), 1),  # stale: b is at 2
        ("update", "pods", "c", pod("n2"), 3),
        ("update", "pods", "zz", pod("n2")),
    )
    assert r == {"revision": 5, "ok": False, "results": [[OK, 4], [CONFLICT, 2], [OK, 5], [NOT_FOUND, None]]}
    assert listed(m, "pods", {"node": "n1"}) == {("pods", "a"): (pod("n1"), 4)}


def test_an_atomic_batch_applies_all_or_nothing_and_sees_its_own_earlier_ops() -> None:
    m = APIStoreMachine()
    txn(m, ("create", "pods", "a", pod()))
    failed = txn(m, ("create", "pods", "b", pod()), ("update", "pods", "a", pod("n1"), 9), atomic=True)
    assert failed == {"revision": 1, "ok": False, "results": [[ABORTED, None], [CONFLICT, 1]]}
    assert m.query(("get", "pods", "b")) is None and m.query(("revision",))["revision"] == 1
    assert m.query(("watch", "pods", 1, None))["events"] == []
    # An op may name the version an earlier op of the same batch writes.
    done = txn(m, ("create", "pods", "b", pod()), ("update", "pods", "b", pod("n1"), 2), ("delete", "pods", "a", 1), atomic=True)
    assert done == {"revision": 4, "ok": True, "results": [[OK, 2], [OK, 3], [OK, 4]]}
    assert listed(m, "pods") == {("pods", "b"): (pod("n1"), 3)}
    # A delete earlier in the batch makes a later create of the same name pass.
    again = txn(m, ("delete", "pods", "b"), ("create", "pods", "b", pod()), atomic=True)
    assert again["results"] == [[OK, 5], [OK, 6]] and m.query(("get", "pods", "b")) == [pod(), 6]


# -- watches ----------------------------------------------------------------


def _cluster() -> APIStoreMachine:
    m = APIStoreMachine()
    txn(m, ("create", "nodes", "n1", {"cpu": 4}), ("create", "nodes", "n2", {"cpu": 4}))  # 1, 2
    txn(m, ("create", "pods", "a", pod()), ("create", "pods", "b", pod()))  # 3, 4
    txn(m, ("update", "pods", "a", pod("n1"), 3))  # 5: bind
    txn(m, ("update", "nodes", "n2", {"cpu": 8}))  # 6
    txn(m, ("update", "pods", "a", pod("n1", phase="Running")))  # 7: status, stays on n1
    txn(m, ("update", "pods", "b", pod("n2"), 4))  # 8: bind
    txn(m, ("update", "pods", "a", pod("n2", phase="Pending")))  # 9: moved n1 -> n2
    txn(m, ("delete", "pods", "b"))  # 10
    return m


def test_a_watch_returns_exactly_the_changes_after_a_revision_in_order_by_kind() -> None:
    m = _cluster()
    pods = m.query(("watch", "pods", 4, None))
    assert [(e[0], e[1], e[3]) for e in pods["events"]] == [
        (5, MODIFIED, "a"), (7, MODIFIED, "a"), (8, MODIFIED, "b"), (9, MODIFIED, "a"), (10, DELETED, "b")
    ]
    assert pods["events"][-1][4] == pod("n2")  # a DELETED event carries the last value
    assert pods["revision"] == 10 and not pods["more"]
    both = m.query(("watch", ["nodes", "pods"], 5, None))
    assert [e[0] for e in both["events"]] == [6, 7, 8, 9, 10]
    assert [e[2] for e in both["events"]] == ["nodes", "pods", "pods", "pods", "pods"]
    # A quiet kind's watcher still advances to the current revision.
    assert m.query(("watch", "nodes", 6, None)) == {"gone": False, "events": [], "more": False, "revision": 10}
    # Paging with a limit resumes after the last event and loses nothing.
    events, resume = watch_all(m, ["pods", "nodes"], 0, limit=2)
    assert [e[0] for e in events] == list(range(1, 11)) and resume == 10
    assert replay(events) == {**listed(m, "pods"), **listed(m, "nodes")}


def test_a_node_watch_sees_its_pods_come_change_and_go_and_unbound_pods_leave_on_bind() -> None:
    m = _cluster()
    n1 = m.query(("watch", "pods", 0, None, {"node": "n1"}))["events"]
    assert [(e[0], e[1], e[3]) for e in n1] == [(5, ADDED, "a"), (7, MODIFIED, "a"), (9, DELETED, "a")]
    n2 = m.query(("watch", "pods", 0, None, {"node": "n2"}))["events"]
    assert [(e[0], e[1], e[3]) for e in n2] == [(8, ADDED, "b"), (9, ADDED, "a"), (10, DELETED, "b")]
    unbound = m.query(("watch", "pods", 0, None, {"node": None}))["events"]
    assert [(e[0], e[1], e[3]) for e in unbound] == [(3, ADDED, "a"), (4, ADDED, "b"), (5, DELETED, "a"), (8, DELETED, "b")]
    assert m.query(("watch", "pods", 0, None, {"node": "n9"}))["events"] == []
    for node in ("n1", "n2", None, "n9"):
        events, _ = watch_all(m, "pods", 0, {"node": node}, limit=1)
        assert replay(events) == listed(m, "pods", {"node": node})


def test_a_watcher_ahead_of_a_lagging_replica_is_not_moved_back() -> None:
    m = _cluster()
    assert m.query(("watch", "pods", 25, 10)) == {"gone": False, "events": [], "more": False, "revision": 25}


# -- compaction, gone, relist -----------------------------------------------


def test_a_watcher_behind_the_compaction_is_gone_and_a_relist_then_resume_sees_everything() -> None:
    m = APIStoreMachine(history=4)
    for i in range(6):
        txn(m, ("create", "pods", f"p{i}", pod()))
    cursor = 0
    assert m.query(("watch", "pods", cursor, None)) == {"gone": True, "compacted": 2, "revision": 6}
    mirror = listed(m, "pods")  # the relist
    cursor = m.query(("list", "pods"))["revision"]
    txn(m, ("update", "pods", "p0", pod("n1")), ("delete", "pods", "p5"), ("create", "pods", "q", pod()))
    events, cursor = watch_all(m, "pods", cursor)
    assert replay(events, mirror) == listed(m, "pods") and cursor == 9
    # The edge: watching from exactly the compacted revision is allowed.
    assert not m.query(("watch", "pods", 5, None))["gone"] and m.query(("watch", "pods", 4, None))["gone"]
    # An explicit compaction, never past the present; node buckets follow.
    assert m.apply(("compact", 100)) == {"compacted": 9, "revision": 9}
    assert m.query(("watch", "pods", 9, None, {"node": "n1"}))["events"] == []
    assert m.query(("watch", "pods", 8, None, {"node": "n1"}))["gone"]
    assert not m.bucket_logs and all(len(log) == 0 for log in m.logs.values())


# -- snapshot and restore -----------------------------------------------------


def _same_answers(a: APIStoreMachine, b: APIStoreMachine) -> None:
    for q in [
        ("revision",),
        ("list", "pods"),
        ("list", "nodes"),
        ("list", "pods", {"node": "n1"}),
        ("list", "pods", {"node": None}),
        ("get", "pods", "a"),
        ("watch", ["pods", "nodes"], 0, None),
        ("watch", "pods", 3, 2),
        ("watch", "pods", 0, None, {"node": "n2"}),
        ("watch", "pods", 0, None, {"node": None}),
    ]:
        assert a.query(q) == b.query(q), q


def test_a_restored_machine_answers_as_the_original_now_and_after_further_commands() -> None:
    m = _cluster()
    m.history = 6
    txn(m, ("create", "pods", "c", pod(req={1: 2.0})))  # int map keys inside a value: 11, compacts to 5
    data = m.snapshot()
    r = APIStoreMachineFactory()()
    r.restore(data)
    assert r.snapshot() == data
    _same_answers(m, r)
    assert r.query(("watch", "pods", 4, None))["gone"] and r.history == 6
    for cmd in [
        ("txn", [("update", "pods", "a", pod("n1"), 9), ("update", "pods", "c", pod("n1"), 1)], False),
        ("txn", [("create", "pods", "d", pod()), ("delete", "pods", "a", 12)], True),
        ("txn", [("delete", "nodes", "n1"), ("create", "pods", "a", pod("n2"))], False),
        ("compact", 13),
    ]:
        assert m.apply(cmd) == r.apply(cmd), cmd
        _same_answers(m, r)
    assert r.snapshot() == m.snapshot()


def test_the_factory_pickles_and_builds_configured_machines() -> None:
    f = pickle.loads(pickle.dumps(APIStoreMachineFactory(history=7, indexes=(("pods", ("node", "zone")),))))
    m = f()
    assert m.history == 7 and m.indexes == {"pods": ("node", "zone")}
    txn(m, ("create", "pods", "a", {"node": "n1", "zone": "z1"}))
    assert listed(m, "pods", {"zone": "z1"}) == listed(m, "pods", {"node": "n1"}) != {}
    with pytest.raises(ValueError):
        APIStoreMachine(history=0)


# -- properties -------------------------------------------------------------

NAMES = ["a", "b", "c", "d"]
NODES = [None, "n1", "n2"]


@st.composite
def op_batches(draw: Any) -> list[tuple[list, bool]]:
    batches = []
    for _ in range(draw(st.integers(1, 12))):
        ops = []
        for _ in range(draw(st.integers(1, 4))):
            kind = draw(st.sampled_from(["pods", "pods", "nodes"]))
            name = draw(st.sampled_from(NAMES))
            value = {"node": draw(st.sampled_from(NODES)), "x": draw(st.integers(0, 3))}
            expect = draw(st.one_of(st.none(), st.integers(0, 25)))
            verb = draw(st.sampled_from(["create", "update", "update", "delete"]))
            if verb == "create":
                ops.append(("create", kind, name, value))
            elif verb == "update":
                ops.append(("update", kind, name, value, expect))
            else:
                ops.append(("delete", kind, name, expect))
        batches.append((ops, draw(st.booleans())))
    return batches


def _state(m: APIStoreMachine) -> State:
    return {**listed(m, "pods"), **listed(m, "nodes")}


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(op_batches(), st.integers(1, 5))
def test_replaying_the_watch_from_zero_reconstructs_what_list_returns(batches: list, limit: int) -> None:
    m = APIStoreMachine()
    for ops, atomic in batches:
        r = m.apply(("txn", ops, atomic))
        assert r["ok"] == all(s[0] == OK for s in r["results"])
        if atomic and not r["ok"]:
            assert all(s[0] != OK for s in r["results"])
    events, resume = watch_all(m, ["pods", "nodes"], 0, limit=limit)
    assert [e[0] for e in events] == list(range(1, m.revision + 1))  # one revision per applied write
    assert replay(events) == _state(m) and resume == m.revision
    for node in NODES:
        ev, _ = watch_all(m, "pods", 0, {"node": node}, limit=limit)
        assert replay(ev) == listed(m, "pods", {"node": node})
    r = APIStoreMachine()
    r.restore(m.snapshot())
    assert watch_all(r, ["pods", "nodes"], 0, limit=limit) == (events, resume)


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(op_batches(), st.integers(1, 6), st.integers(1, 3), st.sampled_from(NODES))
def test_a_watcher_that_relists_when_gone_always_mirrors_the_store(batches: list, history: int, every: int, node: Any) -> None:
    """Short history, a watcher polling every few batches: whether it
    keeps up or is told gone and relists, its mirror ends equal to list."""
    m = APIStoreMachine(history=history)
    where = {"node": node}
    mirror: State = {}
    cursor = 0
    for i, (ops, atomic) in enumerate(batches):
        m.apply(("txn", ops, atomic))
        if i % every:
            continue
        r = m.query(("watch", "pods", cursor, None, where))
        if r["gone"]:
            page = m.query(("list", "pods", where))
            mirror = {("pods", n): (v, rv) for n, v, rv in page["items"]}
            cursor = page["revision"]
        else:
            mirror, cursor = replay(r["events"], mirror), r["revision"]
        assert mirror == listed(m, "pods", where)
