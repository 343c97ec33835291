"""The Kubernetes scheduling cycle: filter order and early stop by
percentageOfNodesToScore, normalisation and weights, filtered-out reasons
per plugin, PostFilter on no fit, Reserve/Permit, user plugins by name,
and the property that a chosen node passes every filter."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from schedlab.schedulers.archs.kubernetes.cluster_view import ClusterView
from schedlab.schedulers.archs.kubernetes.framework import (
    SUCCESS,
    Code,
    CycleState,
    PostFilterResult,
    Profile,
    Status,
    num_feasible_nodes_to_find,
    run_filter_plugins,
    run_pre_filter,
    schedule_one,
    unreserve,
    unschedulable,
)
from schedlab.schedulers.archs.kubernetes.objects import (
    HOSTNAME,
    ZONE,
    Node,
    Pod,
    PodAffinityTerm,
    Selector,
    SpreadConstraint,
    Taint,
    Toleration,
    labels,
)
from schedlab.schedulers.archs.kubernetes.plugins.normalize import default_normalize
from schedlab.schedulers.archs.kubernetes.registry import (
    DEFAULT_WEIGHTS,
    build_profile,
    default_profile,
    register_plugin,
    unregister_plugin,
)


def cluster(n: int, cap=(4.0, 8.0)) -> ClusterView:
    return ClusterView([Node(i, f"n{i}", cap, labels({HOSTNAME: f"n{i}", ZONE: f"z{i % 3}"})) for i in range(n)])


def pod(j: int, req=(1.0, 1.0), **kw) -> Pod:
    return Pod((1, j), req, **kw)


class Reject:
    """Filter: rejects nodes ``pred`` holds for; records what it was asked."""

    def __init__(self, name: str, pred, code: Code = Code.UNSCHEDULABLE) -> None:
        self.name, self.pred, self.code, self.seen = name, pred, code, []

    def filter(self, state, pod, view, node):
        self.seen.append(node)
        return Status(self.code, (f"{self.name} says no",)) if self.pred(node) else SUCCESS


class ByIndex:
    """Score: the node's row (raw), normalised so the highest row gets 100."""

    name = "ByIndex"

    def score(self, state, pod, view, node):
        return node

    def normalize_score(self, state, pod, view, nodes, scores):
        return default_normalize(scores)


class Const:
    def __init__(self, name: str, value: int) -> None:
        self.name, self.value = name, value

    def score(self, state, pod, view, node):
        return self.value


# -- how many nodes a cycle looks at -----------------------------------------


@pytest.mark.parametrize(
    "n, pct, want",
    [
        (50, None, 50),  # under 100 nodes: all
        (100, None, 100),  # 50% of 100 = 50, floored at 100
        (1000, None, 420),  # 50 - 1000//125 = 42%
        (5000, None, 500),  # 50 - 40 = 10%
        (6000, None, 300),  # 50 - 48 = 2% -> the 5% floor
        (10000, None, 500),  # 5%
        (1000, 0, 420),  # 0 = adaptive
        (200, 10, 100),  # 20, floored at 100
        (1000, 100, 1000),
    ],
)
def test_num_feasible_nodes_to_find(n, pct, want):
    assert num_feasible_nodes_to_find(pct, n) == want


def test_filter_stops_once_enough_feasible_nodes_and_rotates_the_start():
    view = cluster(400)
    prof = Profile.of("p", [Reject("OddOnly", lambda i: i % 2 == 0), ByIndex()], percentage_of_nodes_to_score=25)
    # 400 * 25% = 100 feasible wanted: odd nodes 1..199; nodes 0..199 examined
    r = schedule_one(prof, pod(0), view, start_index=0, assume=False)
    assert list(r.candidates) == list(range(1, 200, 2))
    assert r.evaluated_nodes == 200 and r.next_start_index == 200
    assert list(r.diagnosis.nodes) == list(range(0, 200, 2))  # nothing past the last kept node
    assert r.node == 199  # ByIndex: the highest row among the candidates
    # the next cycle starts at 200 and wraps around
    r2 = schedule_one(prof, pod(1), view, start_index=r.next_start_index, assume=False)
    assert r2.candidates[0] == 201 and r2.next_start_index == 0
    r3 = schedule_one(prof, pod(2), view, start_index=350, assume=False)
    assert list(r3.candidates[:3]) == [351, 353, 355] and r3.candidates[-1] == 149  # 25 from 351..399, 75 from 1..149


def test_filters_run_in_order_and_a_rejected_node_meets_no_later_filter():
    first = Reject("First", lambda i: i < 3)
    second = Reject("Second", lambda i: i in (1, 4))
    r = schedule_one(Profile.of("p", [first, second, ByIndex()]), pod(0), cluster(6), assume=False)
    assert first.seen == [0, 1, 2, 3, 4, 5] and second.seen == [3, 4, 5]
    assert r.diagnosis.plugin_counts() == {"First": 3, "Second": 1}
    assert r.diagnosis.status(1).plugin == "First" and r.diagnosis.status(4).plugin == "Second"


def test_no_score_plugins_means_the_first_feasible_node():
    r = schedule_one(Profile.of("p", [Reject("R", lambda i: i < 5)]), pod(0), cluster(300), start_index=2, assume=False)
    # upstream: without scoring, one feasible node is enough
    assert r.node == 5 and r.evaluated_nodes == 4 and r.next_start_index == 6


def test_scores_are_normalised_then_weighted_and_summed():
    view = cluster(5)
    prof = Profile.of("p", [ByIndex(), Const("Flat", 7)], weights={"ByIndex": 3, "Flat": 2})
    r = schedule_one(prof, pod(0), view, assume=False)
    # ByIndex raw 0..4 -> 0, 25, 50, 75, 100 (x3); Flat 7 (x2)
    assert list(r.plugin_scores["ByIndex"]) == [0, 25, 50, 75, 100]
    assert list(r.scores) == [s * 3 + 14 for s in (0, 25, 50, 75, 100)]
    assert r.node == 4


def test_a_score_outside_0_100_is_an_error():
    r = schedule_one(Profile.of("p", [Const("Huge", 101)]), pod(0), cluster(3), assume=False)
    assert r.status.code == Code.ERROR and r.node is None and "Huge" in r.status.message


def test_weights_must_be_positive_integers():
    for bad in (0, -1, 1.5, True):
        with pytest.raises(ValueError, match="weight of Flat"):
            Profile.of("p", [Const("Flat", 1)], weights={"Flat": bad})


def test_ties_by_scan_order_without_rng_and_spread_by_rng():
    view = cluster(6)
    prof = Profile.of("p", [Const("Flat", 5)])
    assert schedule_one(prof, pod(0), view, start_index=4, assume=False).node == 4
    picks = {schedule_one(prof, pod(0), view, rng=np.random.default_rng(s), assume=False).node for s in range(60)}
    assert picks == set(range(6))


def test_one_feasible_node_is_taken_without_scoring():
    r = schedule_one(Profile.of("p", [Reject("R", lambda i: i != 2), ByIndex()]), pod(0), cluster(5), assume=False)
    assert r.node == 2 and r.plugin_scores == {} and r.feasible_nodes == 1


def test_no_fit_runs_post_filter_with_the_per_node_statuses():
    seen = {}

    class Preempt:
        name = "Preempt"

        def post_filter(self, state, pod, view, diagnosis):
            seen["statuses"] = diagnosis.statuses()
            seen["candidates"] = list(diagnosis.preemption_candidates())
            return PostFilterResult(SUCCESS, nominated_node=1)

    hard = Reject("Hard", lambda i: i == 0, Code.UNSCHEDULABLE_AND_UNRESOLVABLE)
    soft = Reject("Soft", lambda i: True)
    r = schedule_one(Profile.of("p", [hard, soft, Preempt()]), pod(0), cluster(3))
    assert r.node is None and r.status.code == Code.UNSCHEDULABLE and r.nominated_node == 1
    assert {i: s.plugin for i, s in seen["statuses"].items()} == {0: "Hard", 1: "Soft", 2: "Soft"}
    assert seen["candidates"] == [1, 2]  # preemption cannot help where Unresolvable
    assert r.status.message == "0/3 nodes are available: 1 Hard says no, 2 Soft says no."
    assert r.diagnosis.reason_counts() == {"Hard says no": 1, "Soft says no": 2}


def test_a_pre_filter_rejection_marks_every_node():
    class NoWay:
        name = "NoWay"

        def pre_filter(self, state, pod, view):
            return unschedulable("never", unresolvable=True)

        def filter(self, state, pod, view, node):  # pragma: no cover - must not run
            raise AssertionError("Filter after a PreFilter rejection")

    r = schedule_one(Profile.of("p", [NoWay()]), pod(0), cluster(4))
    assert r.node is None and r.diagnosis.plugin_counts() == {"NoWay": 4}
    assert len(r.diagnosis.statuses()) == 4 and list(r.diagnosis.preemption_candidates()) == []


def test_default_profile_reasons_counted_per_plugin():
    nodes = [
        Node(0, "n0", (4.0, 8.0), unschedulable=True),
        Node(1, "n1", (4.0, 8.0), taints=(Taint("gpu", "yes"),)),
        Node(2, "n2", (0.5, 8.0)),
        Node(3, "n3", (4.0, 8.0), labels({"disk": "hdd"})),
    ]
    r = schedule_one(default_profile(), pod(0, node_selector=labels({"disk": "ssd"})), ClusterView(nodes))
    assert r.node is None
    assert r.diagnosis.plugin_counts() == {"NodeUnschedulable": 1, "TaintToleration": 1, "NodeAffinity": 2}
    # without the selector, only n2 (too small) and n0, n1 fail: n3 wins
    r = schedule_one(default_profile(), pod(1), ClusterView(nodes))
    assert r.node == 3 and r.diagnosis.plugin_counts() == {"NodeUnschedulable": 1, "TaintToleration": 1, "NodeResourcesFit": 1}


def test_default_profile_mirrors_upstream_weights():
    prof = default_profile()
    assert [p.name for p in prof.filter][:4] == ["NodeUnschedulable", "TaintToleration", "NodeAffinity", "NodeResourcesFit"]
    assert {p.name: prof.weight(p.name) for p in prof.score} == dict(DEFAULT_WEIGHTS)
    assert DEFAULT_WEIGHTS["TaintToleration"] == 3 and DEFAULT_WEIGHTS["NodeResourcesFit"] == 1
    assert [p.name for p in prof.bind] == ["DefaultBinder"]


def test_assume_adds_the_pod_and_unreserve_takes_it_back():
    view, prof = cluster(3), default_profile()
    r = schedule_one(prof, pod(0), view)
    assert r.status.ok and view.node_of[pod(0).key] == r.node and view.requested[r.node].tolist() == [1.0, 1.0]
    unreserve(prof, r.state, r.pod, view, r.node)  # the bind failed
    assert pod(0).key not in view.node_of and not view.requested.any()


def test_reserve_failure_unreserves_in_reverse_and_forgets_the_pod():
    log = []

    class Res:
        def __init__(self, name, ok):
            self.name, self.ok = name, ok

        def reserve(self, state, pod, view, node):
            log.append(("reserve", self.name))
            return SUCCESS if self.ok else unschedulable("full")

        def unreserve(self, state, pod, view, node):
            log.append(("unreserve", self.name))

    view = cluster(2)
    r = schedule_one(Profile.of("p", [Res("A", True), Res("B", False)]), pod(0), view)
    assert r.node is None and r.status.plugin == "B" and not r.scheduled
    assert log == [("reserve", "A"), ("reserve", "B"), ("unreserve", "B"), ("unreserve", "A")]
    assert pod(0).key not in view.node_of


def test_permit_wait_keeps_the_node_and_reports_the_timeout():
    class Gate:
        name = "Gate"

        def permit(self, state, pod, view, node):
            return Status(Code.WAIT), 30.0

    r = schedule_one(Profile.of("p", [Gate()]), pod(0), cluster(2))
    assert r.scheduled and r.status.code == Code.WAIT and r.permit_timeout == 30.0


def test_each_waiting_plugin_has_its_own_timeout_capped_at_fifteen_minutes():
    class Wait:
        def __init__(self, name, seconds):
            self.name, self.seconds = name, seconds

        def permit(self, state, pod, view, node):
            return Status(Code.WAIT), self.seconds

    r = schedule_one(Profile.of("p", [Wait("A", 30.0), Wait("B", 5000.0)]), pod(0), cluster(2))
    assert r.permit_waits == {"A": 30.0, "B": 900.0} and r.permit_timeout == 30.0  # the first to fire
    assert r.status.plugin == "A" and r.state.assumed


def test_run_bind_takes_the_first_plugin_that_does_not_skip():
    from schedlab.schedulers.archs.kubernetes.framework import SKIP, run_bind

    class B:
        def __init__(self, name, answer):
            self.name, self.answer = name, answer

        def bind(self, state, pod, node):
            return self.answer

    state = CycleState()
    prof = Profile.of("p", [B("Skipper", SKIP), B("Mine", SUCCESS), B("DefaultBinder", SUCCESS)])
    assert run_bind(prof, state, pod(0), 0).plugin == "Mine"
    prof = Profile.of("p", [B("Skipper", SKIP), B("No", unschedulable("nope"))])
    st = run_bind(prof, state, pod(0), 0)
    assert st.code == Code.UNSCHEDULABLE and st.plugin == "No"
    assert run_bind(Profile.of("p", [B("Skipper", SKIP)]), state, pod(0), 0).code == Code.ERROR
    assert run_bind(default_profile(), state, pod(0), 0).plugin == "DefaultBinder"


def test_nominated_node_is_tried_first():
    prof = Profile.of("p", [ByIndex()])
    r = schedule_one(prof, pod(0), cluster(5), nominated_node=1, start_index=3, assume=False)
    assert r.node == 1 and r.evaluated_nodes == 1 and r.next_start_index == 3


# -- the registry ---------------------------------------------------------------


class OnlyEven:
    name = "OnlyEven"

    def __init__(self, modulus: int = 2) -> None:
        self.modulus = modulus

    def filter(self, state, pod, view, node):
        return SUCCESS if node % self.modulus == 0 else unschedulable("odd")


def test_a_user_plugin_registered_by_name_runs_in_a_profile():
    register_plugin("OnlyEven", OnlyEven)
    try:
        prof = default_profile(enable=["OnlyEven"], plugin_args={"OnlyEven": {"modulus": 3}})
        assert prof.filter[-1].modulus == 3
        view, start = cluster(10), 0
        for j in range(4):
            r = schedule_one(prof, pod(j), view, start_index=start)
            assert r.node % 3 == 0
            start = r.next_start_index
        built = build_profile("mine", ["NodeResourcesFit", "OnlyEven"], weights={"NodeResourcesFit": 4})
        assert [p.name for p in built.filter] == ["NodeResourcesFit", "OnlyEven"] and built.weight("NodeResourcesFit") == 4
    finally:
        unregister_plugin("OnlyEven")


def test_unknown_plugin_and_bad_arguments_name_the_plugin():
    with pytest.raises(ValueError, match="'NoSuchPlugin'"):
        build_profile("p", ["NodeResourcesFit", "NoSuchPlugin"])
    with pytest.raises(ValueError, match="NodeResourcesFit"):
        build_profile("p", ["NodeResourcesFit"], plugin_args={"NodeResourcesFit": {"strategy": "Fancy"}})
    with pytest.raises(ValueError, match="NodeResourcesFit"):
        build_profile("p", ["NodeResourcesFit"], plugin_args={"NodeResourcesFit": {"colour": 1}})
    with pytest.raises(ValueError, match="already registered"):
        register_plugin("NodeResourcesFit", OnlyEven)


# -- a chosen node passes every filter --------------------------------------------

APPS = ("web", "db", "cache")


@st.composite
def scenes(draw):
    n = draw(st.integers(1, 12))
    nodes = []
    for i in range(n):
        ls = {HOSTNAME: f"n{i}", "disk": draw(st.sampled_from(["ssd", "hdd"]))}
        if draw(st.booleans()):
            ls[ZONE] = draw(st.sampled_from(["z1", "z2", "z3"]))
        taints = (Taint("gpu", "yes", draw(st.sampled_from(["NoSchedule", "PreferNoSchedule"]))),) if draw(st.integers(0, 3)) == 0 else ()
        cap = (float(draw(st.integers(1, 8))), float(draw(st.integers(1, 16))))
        nodes.append(Node(i, f"n{i}", cap, labels(ls), taints, draw(st.integers(0, 5)) == 0))
    view = ClusterView(nodes)
    for j in range(draw(st.integers(0, 15))):
        i = draw(st.integers(0, n - 1))
        anti = (PodAffinityTerm(Selector.of_labels({"app": draw(st.sampled_from(APPS))}), ZONE, anti=True),) if draw(st.integers(0, 3)) == 0 else ()
        view.add_pod(Pod((0, j), (1.0, 1.0), labels=labels({"app": draw(st.sampled_from(APPS))}), pod_affinity=anti), i)
    app = draw(st.sampled_from(APPS))
    terms = []
    if draw(st.booleans()):
        terms.append(PodAffinityTerm(Selector.of_labels({"app": draw(st.sampled_from(APPS))}), draw(st.sampled_from([ZONE, HOSTNAME])),
                                     anti=draw(st.booleans())))
    spread = ()
    if draw(st.booleans()):
        spread = (SpreadConstraint(draw(st.integers(1, 2)), draw(st.sampled_from([ZONE, HOSTNAME])), Selector.of_labels({"app": app}),
                                   draw(st.sampled_from(["DoNotSchedule", "ScheduleAnyway"]))),)
    incoming = Pod(
        (5, 0),
        (float(draw(st.integers(0, 4))), float(draw(st.integers(0, 8)))),
        labels=labels({"app": app}),
        node_selector=labels({"disk": "ssd"}) if draw(st.booleans()) else (),
        tolerations=(Toleration("gpu", "Exists"),) if draw(st.booleans()) else (),
        spread=spread,
        pod_affinity=tuple(terms),
    )
    return view, incoming, draw(st.integers(0, n - 1)), draw(st.integers(0, 3))


@settings(max_examples=150, deadline=None)
@given(scenes())
def test_a_chosen_node_passes_every_filter(scene):
    view, incoming, start, seed = scene
    prof = default_profile(percentage_of_nodes_to_score=50)
    r = schedule_one(prof, incoming, view, start_index=start, rng=np.random.default_rng(seed), assume=False)
    # every node, checked one at a time through the per-node API
    state = CycleState()
    pre = run_pre_filter(prof, state, incoming, view)
    feasible = [i for i in range(view.n) if pre.ok and run_filter_plugins(prof, state, incoming, view, i).ok]
    if r.node is None:
        assert r.status.rejected
        assert not feasible
    else:
        assert r.status.ok and r.node in feasible
        assert set(r.candidates.tolist() or [r.node]) <= set(feasible)
        for i in r.diagnosis.nodes.tolist():  # every node reported rejected really is
            assert i not in feasible
