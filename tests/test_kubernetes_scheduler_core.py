"""A kube-scheduler's pure core driven against the API machine, as the
actor drives it: watch, cycle, bind, answer. Two profiles racing for the
same nodes lose binds to each other and retry; nothing is over-committed;
preemption evicts and the preemptor lands once the kill is confirmed."""
from __future__ import annotations

import dataclasses

import numpy as np
from schedlab.schedulers.archs.kubernetes.api_machine import KubeAPIMachine
from schedlab.schedulers.archs.kubernetes.objects import HOSTNAME, Node, Pod, labels
from schedlab.schedulers.archs.kubernetes.registry import default_profile
from schedlab.schedulers.archs.kubernetes.scheduler_core import KubeSchedulerCore
from schedlab.schedulers.archs.kubernetes.status import (
    SKIP,
    SUCCESS,
    Code,
    Status,
    unschedulable,
)

N = 4
CAP = np.array([[4.0, 16.0]] * N)


def nodes() -> list[Node]:
    return [Node(i, f"node-{i}", (4.0, 16.0), labels({HOSTNAME: f"node-{i}"})) for i in range(N)]


def pod_of(value: dict) -> Pod:
    sched = "b" if value["cls"] == "b" else "a"
    return Pod((value["j"], value["t"]), tuple(value["req"]), priority=value["prio"], created=value["created"],
               scheduler_name=sched, labels=labels({"app": value["cls"]}), owner=f"{value['cls']}/{value['j']}")


class Harness:
    def __init__(self, profiles: list[str], budgets: dict[str, int] | None = None) -> None:
        self.m = KubeAPIMachine(CAP, machines_per_host=1)
        self.cores = {p: KubeSchedulerCore(default_profile(p), nodes(), pod_of, seed=1, budgets=budgets)
                      for p in profiles}
        self.since = {p: 0 for p in profiles}
        self.binds = {"ok": 0, "no_room": 0}

    def watch(self, p: str, now: float) -> None:
        w = self.m.query(("watch", ["pods", "nodes"], self.since[p], None))
        self.cores[p].watched(w["events"], now)
        self.since[p] = w["revision"]

    def round(self, now: float) -> None:
        """Every scheduler watches, then all cycle on what they saw (so they
        race), then all bind."""
        for p in self.cores:
            self.watch(p, now)
        pending = []
        for p, core in self.cores.items():
            while (c := core.next_cycle(now)) is not None:
                if c.node is not None:
                    pending.append((p, c))
                elif c.victims:
                    self.m.apply(("evict", [[*v.key, c.nominated] for v in c.victims], now))
        for p, c in pending:
            (status, *_), = self.m.apply(("bind", [[*c.pod.key, c.node, c.version]], now))
            self.binds[status] = self.binds.get(status, 0) + 1
            self.cores[p].bound(c, status, now)

    def kubelets(self, now: float, finish: bool = False) -> None:
        for h in range(N):
            launches, kills, _ = self.m.apply(("exchange", h, [], now))
            done = [[j, t, True] for j, t in kills] + ([[ln[0], ln[1], False] for ln in launches] if finish else [])
            if done:
                self.m.apply(("exchange", h, done, now))

    def used(self) -> np.ndarray:
        return np.array([self.m.query(("get", "nodes", f"node-{i}"))[0]["req"] for i in range(N)])


def test_two_profiles_race_for_the_same_nodes_and_the_loser_retries() -> None:
    h = Harness(["a", "b"])
    # 12 pods of 1 cpu per profile, 16 cpu in all: they cannot all fit.
    h.m.apply(("create", [[1, t, "a", [1.0, 1.0], 60.0, 0, 0.0] for t in range(12)]
                         + [[2, t, "b", [1.0, 1.0], 60.0, 0, 0.0] for t in range(12)]))
    for step in range(30):
        h.round(float(step))
        assert np.all(h.used() <= CAP + 1e-9)
    assert h.binds["ok"] == 16  # the cell is full
    assert h.binds["no_room"] > 0  # and the profiles did collide on nodes
    bound = [v for _n, v, _r in h.m.query(("list", "pods"))["items"] if v["node"] is not None]
    assert len(bound) == 16
    # The 8 that could not fit wait, each in its own profile's scheduler.
    waiting = {(v["j"], v["t"]) for _n, v, _r in h.m.query(("list", "pods"))["items"] if v["node"] is None}
    assert len(waiting) == 8
    assert set().union(*(set(c.versions) for c in h.cores.values())) == waiting
    assert h.cores["a"].pending() | h.cores["b"].pending() == {j for j, _t in waiting}
    # Room comes back as pods finish: everything ends up bound once.
    h.kubelets(30.0, finish=True)
    for step in range(31, 60):
        h.round(float(step))
    assert h.binds["ok"] == 24


def test_a_high_priority_pod_preempts_and_lands_once_the_kill_is_confirmed() -> None:
    h = Harness(["a"])
    h.m.apply(("create", [[1, t, "a", [4.0, 1.0], 600.0, 0, 0.0] for t in range(N)]))
    h.round(0.0)
    h.kubelets(0.5)
    assert h.binds["ok"] == N
    h.m.apply(("create", [[9, 0, "a", [2.0, 1.0], 60.0, 100, 1.0]]))
    h.round(1.0)  # unschedulable: preemption evicts one low-priority pod
    lost_before = h.m.query(("lost", 0))[1]
    assert lost_before == []  # not yet: the kill is not confirmed
    h.kubelets(2.0)  # the kubelet kills it and says so
    assert [x[2] for x in h.m.query(("lost", 0))[1]] == ["evicted"]
    for step in range(3, 20):
        h.round(float(step))
    pod = h.m.query(("get", "pods", "9/0"))[0]
    assert pod["node"] is not None
    assert np.all(h.used() <= CAP + 1e-9)


def test_a_disruption_budget_steers_preemption_to_the_workload_that_can_spare_a_pod() -> None:
    # Nodes 0-1 run the "web" deployment (job 1), whose budget allows no
    # pod down; nodes 2-3 run "batch" (job 2), no budget. Same priority,
    # same size: preemption evicts a batch pod.
    h = Harness(["a"], budgets={"web": 0})
    h.m.apply(("create", [[1, t, "web", [4.0, 1.0], 600.0, 0, 0.0, 2] for t in range(2)]
                         + [[2, t, "batch", [4.0, 1.0], 600.0, 0, 0.0, 2] for t in range(2)]))
    h.round(0.0)
    h.kubelets(0.5)
    assert h.binds["ok"] == N
    h.m.apply(("create", [[9, 0, "x", [2.0, 1.0], 60.0, 100, 1.0, 1]]))
    h.round(1.0)
    h.kubelets(2.0)
    assert [(j, why) for j, _t, why in h.m.query(("lost", 0))[1]] == [(2, "evicted")]
    assert h.cores["a"].budgets_now() == {"web/1": 0}


# -- the binding cycle: Permit's Wait and the Bind plugins ---------------------


class Gate:
    """A gang of ``size`` pods of one job: each waits at Permit until the
    last one arrives, whose Permit allows the others (upstream's
    coscheduling plugin, through the waiting pods)."""

    name = "Gate"

    def __init__(self, size: int, timeout: float = 5.0) -> None:
        self.size, self.timeout = size, timeout
        self.log: list[tuple[str, tuple]] = []

    def reserve(self, state, pod, view, node) -> Status:
        self.log.append(("reserve", pod.key))
        return SUCCESS

    def unreserve(self, state, pod, view, node) -> None:
        self.log.append(("unreserve", pod.key))

    def permit(self, state, pod, view, node) -> tuple[Status, float]:
        waiting = [wp for wp in state.waiting_pods if wp.key[0] == pod.key[0]]
        if len(waiting) + 1 < self.size:
            return Status(Code.WAIT, ("waiting for the gang",)), self.timeout
        for wp in waiting:
            wp.allow(self.name)
        return SUCCESS, 0.0


def gated(gate: Gate, binders: tuple = ()) -> KubeSchedulerCore:
    prof = default_profile("a")
    prof = dataclasses.replace(prof, reserve=(*prof.reserve, gate), permit=(*prof.permit, gate),
                               bind=(*binders, *prof.bind))
    return KubeSchedulerCore(prof, nodes(), pod_of, seed=1)


def feed(m: KubeAPIMachine, core: KubeSchedulerCore, since: int, now: float) -> int:
    w = m.query(("watch", ["pods", "nodes"], since, None))
    core.watched(w["events"], now)
    return int(w["revision"])


def test_a_pod_waiting_at_permit_stays_assumed_and_a_timeout_undoes_it_and_backs_off() -> None:
    # A timed-out Wait must not leave the pod assumed with Reserve not
    # undone: its retry would add it to the view a second time.
    gate = Gate(size=2, timeout=5.0)
    m, core = KubeAPIMachine(CAP, machines_per_host=1), gated(gate)
    m.apply(("create", [[1, 0, "a", [1.0, 1.0], 100.0, 0, 0.0, 2]]))
    feed(m, core, 0, 0.0)
    c = core.next_cycle(0.0)
    assert c.waiting and c.node is None and c.status.code == Code.WAIT
    assert (1, 0) in core.view.node_of and (1, 0) in core.waiting  # assumed: its room is taken
    assert core.next_cycle(4.0) is None  # still waiting, nothing else to do
    assert core.next_cycle(6.0) is None  # timed out: undone, backing off
    assert (1, 0) not in core.view.node_of and (1, 0) not in core.waiting
    assert gate.log == [("reserve", (1, 0)), ("unreserve", (1, 0))]
    assert core.queue.info((1, 0)).state == "backoff" and core.permit_rejected == 1
    c = core.next_cycle(8.0)  # retried after its backoff: waits again, no crash
    assert c.waiting and (1, 0) in core.view.node_of and (1, 0) in core.waiting


def test_preemption_rejects_a_waiting_victim_instead_of_evicting_it() -> None:
    gate = Gate(size=2, timeout=60.0)
    m, core = KubeAPIMachine(CAP, machines_per_host=1), gated(gate)
    m.apply(("create", [[1, t, "a", [4.0, 1.0], 600.0, 0, 0.0, 3] for t in range(3)]))
    since = feed(m, core, 0, 0.0)
    gate.size = 1
    binds = [c for c in iter(lambda: core.next_cycle(0.0), None) if c.node is not None]
    for c in binds:
        core.bound(c, m.apply(("bind", [[*c.pod.key, c.node, c.version]], 0.0))[0][0], 0.0)
    since = feed(m, core, since, 0.5)
    gate.size = 2
    m.apply(("create", [[2, 0, "a", [4.0, 1.0], 600.0, 0, 1.0, 2]]))  # the last node: it waits there
    since = feed(m, core, since, 1.0)
    assert core.next_cycle(1.0).waiting
    at = core.view.node_of[(2, 0)]
    m.apply(("create", [[9, 0, "a", [4.0, 1.0], 60.0, 100, 2.0, 1]]))
    feed(m, core, since, 2.0)
    c = core.next_cycle(2.0)
    # The victim that started last is the waiting pod: rejected, not sent to the store.
    assert c.nominated == at and c.victims == ()
    assert (2, 0) not in core.waiting and (2, 0) not in core.view.node_of
    assert ("unreserve", (2, 0)) in gate.log and core.permit_rejected == 1


def test_the_last_member_of_a_gang_allows_the_waiting_ones_and_all_bind() -> None:
    gate = Gate(size=3, timeout=30.0)
    m, core = KubeAPIMachine(CAP, machines_per_host=1), gated(gate)
    m.apply(("create", [[1, t, "a", [1.0, 1.0], 100.0, 0, 0.0, 3] for t in range(3)]))
    feed(m, core, 0, 0.0)
    cycles = []
    while (c := core.next_cycle(1.0)) is not None:
        cycles.append(c)
    assert [c.waiting for c in cycles[:2]] == [True, True]
    binds = [c for c in cycles if c.node is not None]
    assert sorted(c.pod.key for c in binds) == [(1, 0), (1, 1), (1, 2)]
    assert [c.released for c in binds] == [False, True, True]  # the last's own, then the two allowed
    assert all(c.binder == "DefaultBinder" for c in binds) and not core.waiting
    for c in binds:
        (status, *_), = m.apply(("bind", [[*c.pod.key, c.node, c.version]], 1.0))
        assert status == "ok"
        core.bound(c, status, 1.0)
    assert ("unreserve", (1, 0)) not in gate.log


def test_a_waiting_pod_deleted_or_relisted_is_unreserved() -> None:
    gate = Gate(size=2)
    m, core = KubeAPIMachine(CAP, machines_per_host=1), gated(gate)
    m.apply(("create", [[1, 0, "a", [1.0, 1.0], 100.0, 0, 0.0, 2]]))
    feed(m, core, 0, 0.0)
    assert core.next_cycle(0.0).waiting
    pods = m.query(("list", "pods"))
    core.relisted(pods["items"], m.query(("list", "nodes"))["items"], 1.0)
    assert not core.waiting and (1, 0) not in core.view.node_of and ("unreserve", (1, 0)) in gate.log
    assert core.next_cycle(1.0).waiting  # listed again, cycled again: no crash


class Veto:
    name = "Veto"

    def __init__(self, answer: Status) -> None:
        self.answer = answer

    def bind(self, state, pod, node) -> Status:
        return self.answer


def test_bind_plugins_run_in_order_skip_passes_on_and_a_failure_undoes_the_pod() -> None:
    m = KubeAPIMachine(CAP, machines_per_host=1)
    m.apply(("create", [[1, 0, "a", [1.0, 1.0], 100.0, 0, 0.0, 1]]))
    # Skip: the next Bind plugin (DefaultBinder) binds it.
    core = gated(Gate(size=1), binders=(Veto(SKIP),))
    feed(m, core, 0, 0.0)
    c = core.next_cycle(0.0)
    assert c.node is not None and c.binder == "DefaultBinder"
    # A rejection: not bound, unreserved, un-assumed, backing off.
    gate = Gate(size=1)
    core = gated(gate, binders=(Veto(unschedulable("no binding today")),))
    feed(m, core, 0, 0.0)
    c = core.next_cycle(0.0)
    assert c.node is None and c.status.plugin == "Veto" and c.status.code == Code.UNSCHEDULABLE and not c.reasons
    assert (1, 0) not in core.view.node_of and gate.log[-1] == ("unreserve", (1, 0))
    assert core.queue.info((1, 0)).state == "backoff" and core.bind_failed == 1
    # Success from a plugin of one's own: it is the binder.
    core = gated(Gate(size=1), binders=(Veto(SUCCESS),))
    feed(m, core, 0, 0.0)
    assert core.next_cycle(0.0).binder == "Veto"
    # Every plugin skipping: nobody bound it.
    prof = dataclasses.replace(default_profile("a"), bind=(Veto(SKIP),))
    core = KubeSchedulerCore(prof, nodes(), pod_of, seed=1)
    feed(m, core, 0, 0.0)
    c = core.next_cycle(0.0)
    assert c.node is None and c.status.code == Code.ERROR
