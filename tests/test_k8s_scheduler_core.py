"""A kube-scheduler's pure core driven against the API machine, as the
actor drives it: watch, cycle, bind, answer. Two profiles racing for the
same nodes lose binds to each other and retry; nothing is over-committed;
preemption evicts and the preemptor lands once the kill is confirmed."""
from __future__ import annotations

import numpy as np

from schedlab.schedulers.archs.kubernetes.api_machine import KubeAPIMachine
from schedlab.schedulers.archs.kubernetes.objects import HOSTNAME, Node, Pod, labels
from schedlab.schedulers.archs.kubernetes.registry import default_profile
from schedlab.schedulers.archs.kubernetes.scheduler_core import KubeSchedulerCore

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
