"""DefaultPreemption in the scheduling cycle: a pod that fits nowhere
preempts on the node whose victims rank lowest, only lower priorities,
as few as needed, honouring disruption budgets; the view is left as it was."""
from __future__ import annotations

from schedlab.schedulers.archs.kubernetes.cluster_view import ClusterView
from schedlab.schedulers.archs.kubernetes.framework import schedule_one
from schedlab.schedulers.archs.kubernetes.objects import HOSTNAME, RACK, Node, Pod, Selector, SpreadConstraint, labels
from schedlab.schedulers.archs.kubernetes.plugins.default_preemption import PDB_ALLOWED, victims_of
from schedlab.schedulers.archs.kubernetes.registry import default_profile


def view_with(pods_per_node: list[list[Pod]], cap: tuple[float, float] = (4.0, 8.0)) -> ClusterView:
    nodes = [Node(i, f"n{i}", cap, labels({HOSTNAME: f"n{i}", RACK: f"r{i}"})) for i in range(len(pods_per_node))]
    return ClusterView(nodes, [(p, i) for i, ps in enumerate(pods_per_node) for p in ps])


def p(job: int, task: int, cpu: float, prio: int, owner: str = "") -> Pod:
    return Pod((job, task), (cpu, 1.0), priority=prio, owner=owner)


def _snapshot(view: ClusterView) -> tuple:
    return tuple(sorted(view.pods)), view.requested.tobytes()


def test_a_high_priority_pod_preempts_on_the_node_whose_victims_rank_lowest() -> None:
    # Two full 4-cpu nodes. Node 0: two 2-cpu pods of priority 10. Node 1:
    # a 2-cpu pod and two 1-cpu pods, all of priority 5. A 2-cpu pod of
    # priority 100 fits nowhere. Node 0 would lose a pod of priority 10,
    # node 1 pods of priority 5: the lower highest-victim priority wins,
    # node 1. There, as upstream, the reprieve puts pods back greedily, the
    # most important first (equal priority and start: in key order): (2, 0)
    # is kept (2 of 4 cpu used, the preemptor still fits), then neither
    # 1-cpu pod can be, so both are victims.
    view = view_with([[p(1, 0, 2, 10), p(1, 1, 2, 10)], [p(2, 0, 2, 5), p(3, 0, 1, 5), p(3, 1, 1, 5)]])
    before = _snapshot(view)
    prof = default_profile()
    r = schedule_one(prof, Pod((9, 0), (2.0, 1.0), priority=100), view)
    assert r.node is None and r.nominated_node == 1
    assert [v.key for v in victims_of(r.post_filter)] == [(3, 0), (3, 1)]
    assert _snapshot(view) == before  # the dry run put every pod back


def test_never_a_victim_of_equal_or_higher_priority() -> None:
    view = view_with([[p(1, 0, 4, 100)], [p(2, 0, 4, 200)]])
    r = schedule_one(default_profile(), Pod((9, 0), (2.0, 1.0), priority=100), view)
    assert r.node is None and r.nominated_node is None
    assert r.post_filter is not None and not r.post_filter.status.ok


def test_a_pod_with_policy_never_preempts_nothing() -> None:
    view = view_with([[p(1, 0, 4, 0)]])
    r = schedule_one(default_profile(), Pod((9, 0), (2.0, 1.0), priority=100, preemption_policy="Never"), view)
    assert r.nominated_node is None


def test_a_disruption_budget_steers_the_choice() -> None:
    # Both nodes would lose one priority-1 pod; node 0's belongs to "web",
    # whose budget allows no disruption now: node 1 is chosen.
    view = view_with([[p(1, 0, 4, 1, owner="web")], [p(2, 0, 4, 1, owner="batch")]])
    prof = default_profile()
    r = schedule_one(prof, Pod((9, 0), (2.0, 1.0), priority=50), view)
    assert r.nominated_node == 0  # without a budget, the first candidate in index order
    view2 = view_with([[p(1, 0, 4, 1, owner="web")], [p(2, 0, 4, 1, owner="batch")]])
    r2 = schedule_one(prof, Pod((9, 1), (2.0, 1.0), priority=50), view2,
                      context={PDB_ALLOWED: {"web": 0, "batch": 1}})
    assert r2.nominated_node == 1 and victims_of(r2.post_filter)[0].owner == "batch"


def test_preemption_reruns_the_spread_filter_with_victims_removed() -> None:
    # A 1-cpu pod with a hard spread of skew 1 over racks, whose own app
    # already has 2 pods on rack 0 and 1 on rack 1 (node 1 is full of
    # low-priority pods): only node 1 keeps the skew, so preemption must
    # choose node 1, evicting a low-priority pod there.
    app = labels({"app": "web"})
    sel = Selector.of_labels({"app": "web"})
    spread = (SpreadConstraint(1, RACK, sel),)
    web = [Pod((1, t), (1.0, 1.0), priority=50, labels=app) for t in range(3)]
    view = view_with([[web[0], web[1]], [web[2], p(5, 0, 3, 1)]])
    r = schedule_one(default_profile(), Pod((1, 3), (1.0, 1.0), priority=50, labels=app, spread=spread), view)
    assert r.node is None and r.nominated_node == 1
    assert [v.key for v in victims_of(r.post_filter)] == [(5, 0)]
