"""The Kubernetes API machine: the apiserver's verbs over the store, as the
coordinator group applies them (binds that lose to another scheduler,
kubelet syncs, node write-offs, evictions), and its snapshots."""
from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from schedlab.schedulers.archs.kubernetes.api_machine import KubeAPIMachine, node_name, pod_name

CAP = np.array([[4.0, 8.0]] * 4)  # 4 machines, 2 per host


def machine() -> KubeAPIMachine:
    return KubeAPIMachine(CAP, machines_per_host=2)


def pod(job: int, task: int, cpu: float = 1.0, prio: int = 0) -> list:
    return [job, task, "web", [cpu, 1.0], 60.0, prio, 0.0]


def version(m: KubeAPIMachine, job: int, task: int) -> int:
    return int(m.query(("get", "pods", pod_name(job, task)))[1])


def test_created_pods_wait_unbound_and_a_bind_queues_the_launch_for_the_kubelet() -> None:
    m = machine()
    assert m.apply(("create", [pod(1, 0), pod(1, 1)])) == ["ok", "ok"]
    assert m.apply(("create", [pod(1, 0)])) == ["exists"]
    unbound = m.query(("list", "pods", {"node": None}))["items"]
    assert [name for name, _v, _r in unbound] == ["1/0", "1/1"]
    r = m.apply(("bind", [[1, 0, 3, version(m, 1, 0)]], 5.0))
    assert r[0][0] == "ok"
    assert m.query(("get", "nodes", node_name(3)))[0]["req"] == [1.0, 1.0]
    assert m.query(("pending", 1)) and not m.query(("pending", 0))
    launches, kills, reset = m.apply(("exchange", 1, [], 6.0))
    assert launches == [[1, 0, 3, [1.0, 1.0], 60.0, 5.0]] and kills == [] and reset is False
    assert not m.query(("pending", 1))
    # Finished: the pod is gone and its room free.
    m.apply(("exchange", 1, [[1, 0, False]], 70.0))
    assert m.query(("get", "pods", "1/0")) is None
    assert m.query(("get", "nodes", node_name(3)))[0]["req"] == [0.0, 0.0]
    assert m.query(("lost", 0)) == [0, []]


def test_the_prefill_holds_its_room_a_done_task_is_not_made_again_and_progress_counts() -> None:
    m = KubeAPIMachine(CAP, machines_per_host=2, standing=[[-1, 0, 0, [3.0, 2.0]]])
    assert m.query(("get", "nodes", node_name(0)))[0]["req"] == [3.0, 2.0]
    m.apply(("create", [pod(1, 0, cpu=2.0), pod(1, 1)]))
    assert m.apply(("bind", [[1, 0, 0, None]], 1.0))[0][0] == "no_room"  # 3 of 4 cpu are the prefill's
    m.apply(("exchange", 0, [[-1, 0, False]], 2.0))  # the standing task ends
    assert m.apply(("bind", [[1, 0, 0, None]], 3.0))[0][0] == "ok"
    assert m.query(("progress", [1, 2])) == [[1, 1], [2, 0]]
    m.apply(("exchange", 0, [], 3.5))
    m.apply(("exchange", 0, [[1, 0, False]], 4.0))  # done
    assert m.query(("progress", [1])) == [[1, 1]]
    assert m.apply(("create", [pod(1, 0)])) == ["done"]  # a restarted controller does not run it again


def test_two_schedulers_racing_for_one_node_the_loser_is_refused() -> None:
    m = machine()
    m.apply(("create", [pod(1, 0, cpu=3.0), pod(2, 0, cpu=3.0)]))
    v1, v2 = version(m, 1, 0), version(m, 2, 0)
    # Both saw node 0 empty; the first bind takes 3 of its 4 cpu.
    assert m.apply(("bind", [[1, 0, 0, v1]], 1.0))[0][0] == "ok"
    assert m.apply(("bind", [[2, 0, 0, v2]], 1.0))[0][0] == "no_room"
    assert m.query(("get", "pods", "2/0"))[0]["node"] is None  # still pending: it is retried
    # A bind with a stale pod version conflicts; a second bind of a bound pod is refused.
    assert m.apply(("bind", [[2, 0, 1, v2 - 1]], 1.0))[0][0] == "conflict"
    assert m.apply(("bind", [[1, 0, 1, None]], 1.0))[0][0] == "bound"
    assert m.apply(("bind", [[9, 0, 1, None]], 1.0))[0][0] == "gone"


def test_a_written_off_host_loses_its_pods_and_comes_back_empty() -> None:
    m = machine()
    m.apply(("create", [pod(1, 0), pod(1, 1)]))
    m.apply(("bind", [[1, 0, 0, None]], 1.0))
    m.apply(("exchange", 0, [], 2.0))  # pulled: running
    m.apply(("bind", [[1, 1, 1, None]], 3.0))  # not pulled yet
    lost, unpulled = m.apply(("down", [0], 10.0))
    assert lost == [[1, 0]] and unpulled == [[1, 1]]
    assert m.query(("lost", 0))[1] == [[1, 0, "node_lost"], [1, 1, "node_lost"]]
    assert m.query(("get", "pods", "1/0")) is None
    assert not m.query(("get", "nodes", node_name(0)))[0]["ready"]
    # Nothing binds to a NotReady node.
    m.apply(("create", [pod(2, 0)]))
    assert m.apply(("bind", [[2, 0, 1, None]], 11.0))[0][0] == "not_ready"
    # Its next sync brings it back, told to start over empty.
    launches, kills, reset = m.apply(("exchange", 0, [[1, 0, False]], 12.0))
    assert reset is True and launches == [] and m.query(("get", "nodes", node_name(0)))[0]["ready"]
    assert m.query(("get", "nodes", node_name(0)))[0]["req"] == [0.0, 0.0]


def test_a_restarted_kubelet_rejoining_is_written_off_as_down() -> None:
    # The kubelets' endpoint is the Borglets' (one ``rejoin`` command for both stores).
    m = machine()
    m.apply(("create", [pod(1, 0)]))
    m.apply(("bind", [[1, 0, 0, None]], 1.0))
    m.apply(("exchange", 0, [], 2.0))
    assert m.apply(("rejoin", 0, 5.0)) == [[[1, 0]], []]
    assert not m.query(("get", "nodes", node_name(0)))[0]["ready"]


def test_an_eviction_holds_the_room_until_the_kubelet_confirms_the_kill() -> None:
    m = machine()
    m.apply(("create", [pod(1, 0, cpu=4.0), pod(2, 0, cpu=4.0)]))
    m.apply(("bind", [[1, 0, 2, None]], 1.0))
    m.apply(("exchange", 1, [], 2.0))
    # A victim named on another node than its pod's (made again and bound
    # elsewhere since the scheduler chose it) is not this eviction's.
    assert m.apply(("evict", [[1, 0, 3], [7, 7, 2]], 3.0)) == ["gone", "gone"]
    assert m.apply(("evict", [[1, 0, 2]], 3.0)) == ["killing"]
    # The victim still holds the node: the preemptor cannot land yet.
    assert m.apply(("bind", [[2, 0, 2, None]], 3.5))[0][0] == "no_room"
    launches, kills, _ = m.apply(("exchange", 1, [], 4.0))
    assert kills == [[1, 0]]
    m.apply(("exchange", 1, [[1, 0, True]], 5.0))  # the kubelet confirms it
    assert m.query(("lost", 0))[1] == [[1, 0, "evicted"]]
    assert m.apply(("bind", [[2, 0, 2, None]], 5.5))[0][0] == "ok"
    # A victim whose launch was never pulled is withdrawn at once.
    m.apply(("create", [pod(3, 0)]))
    m.apply(("bind", [[3, 0, 0, None]], 6.0))
    assert m.apply(("evict", [[3, 0, 0]], 6.5)) == ["withdrawn"]
    assert m.apply(("exchange", 0, [], 7.0))[0] == []


def test_watching_the_unbound_pods_sees_a_bind_as_their_leaving() -> None:
    m = machine()
    since = m.query(("revision",))["revision"]
    m.apply(("create", [pod(1, 0)]))
    m.apply(("bind", [[1, 0, 1, None]], 1.0))
    w = m.query(("watch", "pods", since, None, {"node": None}))
    assert [(e[1], e[3]) for e in w["events"]] == [("ADDED", "1/0"), ("DELETED", "1/0")]
    w = m.query(("watch", "pods", since, None, {"node": 1}))
    assert [(e[1], e[3]) for e in w["events"]] == [("ADDED", "1/0")]


_ops = st.lists(st.one_of(
    st.tuples(st.just("create"), st.integers(0, 5), st.floats(0.5, 4.0)),
    st.tuples(st.just("bind"), st.integers(0, 5), st.integers(0, 3)),
    st.tuples(st.just("sync"), st.integers(0, 5), st.integers(0, 1)),
    st.tuples(st.just("down"), st.integers(0, 1), st.just(0)),
    st.tuples(st.just("evict"), st.integers(0, 5), st.just(0)),
), max_size=40)


@settings(max_examples=60, deadline=None)
@given(_ops)
def test_no_node_is_ever_overcommitted_and_a_snapshot_answers_the_same(ops: list) -> None:
    m = machine()
    running: dict[int, set[tuple[int, int]]] = {0: set(), 1: set()}
    for i, (op, a, b) in enumerate(ops):
        if op == "create":
            m.apply(("create", [pod(a, 0, cpu=float(b))]))
        elif op == "bind":
            m.apply(("bind", [[a, 0, b, None]], float(i)))
        elif op == "sync":
            launches, kills, reset = m.apply(("exchange", b, [], float(i)))
            if reset:
                running[b] = set()
            running[b] |= {(ln[0], ln[1]) for ln in launches}
            done = {(j, t) for j, t in kills}
            m.apply(("exchange", b, [[j, t, True] for j, t in sorted(done)], float(i)))
            running[b] -= done
        elif op == "down":
            m.apply(("down", [a], float(i)))
        else:
            found = m.query(("get", "pods", pod_name(a, 0)))
            m.apply(("evict", [[a, 0, found[0]["node"] if found and found[0]["node"] is not None else 0]], float(i)))
        for n in range(4):
            req = np.asarray(m.query(("get", "nodes", node_name(n)))[0]["req"])
            assert np.all(req <= CAP[n] + 1e-9)
    other = KubeAPIMachine(CAP, machines_per_host=2)
    other.restore(m.snapshot())
    for q in (("lost", 0), ("sample",), ("pending", 0), ("pending", 1), ("list", "pods")):
        assert other.query(q) == m.query(q)
    assert other.snapshot() == m.snapshot()
