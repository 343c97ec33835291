"""The built-in Kubernetes scheduling plugins, each on a hand-worked
example: the arithmetic is in the comments, upstream's integer rules
(truncation, rounding) included."""
from __future__ import annotations

import math

import numpy as np
import pytest

from schedlab.schedulers.archs.kubernetes.cluster_view import ClusterView
from schedlab.schedulers.archs.kubernetes.framework import SKIP, Code, CycleState
from schedlab.schedulers.archs.kubernetes.objects import (
    HOSTNAME,
    ZONE,
    Node,
    NodeAffinity as NodeAffinitySpec,
    Pod,
    PodAffinityTerm,
    Requirement,
    Selector,
    SpreadConstraint,
    Taint,
    Toleration,
    labels,
)
from schedlab.schedulers.archs.kubernetes.plugins.balanced_allocation import NodeResourcesBalancedAllocation
from schedlab.schedulers.archs.kubernetes.plugins.interpod_affinity import InterPodAffinity
from schedlab.schedulers.archs.kubernetes.plugins.node_affinity import NodeAffinity
from schedlab.schedulers.archs.kubernetes.plugins.node_unschedulable import NodeUnschedulable
from schedlab.schedulers.archs.kubernetes.plugins.resources_fit import NodeResourcesFit, broken_linear
from schedlab.schedulers.archs.kubernetes.plugins.taint_toleration import TaintToleration
from schedlab.schedulers.archs.kubernetes.plugins.topology_spread import PodTopologySpread

WEB = Selector.of_labels({"app": "web"})
DB = Selector.of_labels({"app": "db"})


def node(i: int, cap=(4.0, 8.0), taints=(), unschedulable=False, **lab: str) -> Node:
    ls = {HOSTNAME: f"n{i}"}
    ls.update({ZONE if k == "zone" else k: v for k, v in lab.items()})
    return Node(i, f"n{i}", cap, labels(ls), tuple(taints), unschedulable)


def pod(j: int, req=(1.0, 2.0), app: str = "", **kw) -> Pod:
    return Pod((9, j), req, labels=labels({"app": app} if app else {}), **kw)


def run_filter(plugin, p: Pod, view: ClusterView):
    """(codes from filter_all, statuses from the per-node filter), after PreFilter."""
    state = CycleState()
    if hasattr(plugin, "pre_filter"):
        assert plugin.pre_filter(state, p, view).code != Code.ERROR
    nodes = np.arange(view.n)
    batch = np.asarray(plugin.filter_all(state, p, view, nodes))
    statuses = [plugin.filter(state, p, view, i) for i in range(view.n)]
    passes = batch if batch.dtype == bool else batch == 0
    assert list(passes) == [s.ok for s in statuses], "batch and per-node filters disagree"
    return statuses


def run_score(plugin, p: Pod, view: ClusterView, nodes=None) -> tuple[list[int], list[int]]:
    """(raw scores, normalised scores) over ``nodes`` (default all)."""
    state = CycleState()
    nodes = np.arange(view.n) if nodes is None else np.asarray(nodes)
    if hasattr(plugin, "pre_score"):
        assert plugin.pre_score(state, p, view, nodes).ok
    raw = np.asarray(plugin.score_all(state, p, view, nodes))
    assert list(raw) == [plugin.score(state, p, view, int(i)) for i in nodes]
    norm = plugin.normalize_score(state, p, view, nodes, raw.copy()) if hasattr(plugin, "normalize_score") else raw
    return [int(x) for x in raw], [int(x) for x in norm]


# -- NodeResourcesFit ------------------------------------------------------------


def test_resources_fit_filter_names_every_short_resource():
    view = ClusterView([node(0)], [(pod(0, (3.0, 2.0)), 0)])  # free: 1 cpu, 6 GB
    fit = NodeResourcesFit()
    assert run_filter(fit, pod(1, (1.0, 6.0)), view)[0].ok  # exactly fits
    st = run_filter(fit, pod(1, (2.0, 1.0)), view)[0]
    assert st.code == Code.UNSCHEDULABLE and st.reasons == ("Insufficient cpu",)
    assert run_filter(fit, pod(1, (1.0, 7.0)), view)[0].reasons == ("Insufficient mem",)
    assert run_filter(fit, pod(1, (2.0, 7.0)), view)[0].reasons == ("Insufficient cpu", "Insufficient mem")


def test_resources_fit_zero_request_fits_an_overcommitted_dimension():
    view = ClusterView([node(0)], [(pod(0, (5.0, 1.0)), 0)])  # cpu over-committed by 1
    assert run_filter(NodeResourcesFit(), pod(1, (0.0, 1.0)), view)[0].ok


def _two_nodes() -> ClusterView:
    # n0: 4 cpu / 8 GB with 1 cpu / 2 GB requested; n1: 8 cpu / 8 GB, empty.
    return ClusterView([node(0), node(1, cap=(8.0, 8.0))], [(pod(0, (1.0, 2.0)), 0)])


def test_least_allocated():
    # pod 1 cpu / 2 GB.
    # n0: cpu (4-2)/4*100 = 50, mem (8-4)/8*100 = 50 -> (50+50)//2 = 50
    # n1: cpu (8-1)/8*100 = 87.5 -> 87, mem (8-2)/8*100 = 75 -> (87+75)//2 = 81
    raw, _ = run_score(NodeResourcesFit("LeastAllocated"), pod(1), _two_nodes())
    assert raw == [50, 81]


def test_least_allocated_resource_weights():
    # cpu weight 3, mem 1: n0 (50*3+50)//4 = 50; n1 (87*3+75)//4 = 336//4 = 84
    raw, _ = run_score(NodeResourcesFit("LeastAllocated", resources={"cpu": 3, "mem": 1}), pod(1), _two_nodes())
    assert raw == [50, 84]


def test_most_allocated():
    # n0: cpu 2/4*100 = 50, mem 4/8*100 = 50 -> 50
    # n1: cpu 1/8*100 = 12.5 -> 12, mem 2/8*100 = 25 -> (12+25)//2 = 18
    raw, _ = run_score(NodeResourcesFit("MostAllocated"), pod(1), _two_nodes())
    assert raw == [50, 18]


def test_requested_to_capacity_ratio_default_shape_rounds_the_mean():
    # shape (0,0),(100,10), scores x10: score = utilisation.
    # n0: 50, 50 -> 50. n1: cpu util 1*100//8 = 12, mem 25 -> round(37/2 = 18.5) = 19
    raw, _ = run_score(NodeResourcesFit("RequestedToCapacityRatio"), pod(1), _two_nodes())
    assert raw == [50, 19]


def test_requested_to_capacity_ratio_broken_linear_shape():
    # shape (0,10),(50,2),(100,0) -> scaled (0,100),(50,20),(100,0)
    shape = [(0, 10), (50, 2), (100, 0)]
    scaled = [(u, s * 10) for u, s in shape]
    # util 12: 100 + trunc(-80*12/50 = -19.2) = 81; util 25: 100 - 40 = 60;
    # util 50: 20; util 75: 20 + trunc(-20*25/50) = 10; util 100: 0
    assert list(broken_linear(scaled, np.array([12, 25, 50, 75, 100]))) == [81, 60, 20, 10, 0]
    # n0: utils 50, 50 -> 20; n1: utils 12, 25 -> round((81+60)/2 = 70.5) = 71
    raw, _ = run_score(NodeResourcesFit("RequestedToCapacityRatio", shape=shape), pod(1), _two_nodes())
    assert raw == [20, 71]


def test_requested_to_capacity_ratio_over_capacity_reads_the_last_point():
    view = ClusterView([node(0)], [(pod(0, (4.0, 8.0)), 0)])  # full; the pod pushes it over
    # util 100 on both resources -> last point (100, 3) -> 30
    raw, _ = run_score(NodeResourcesFit("RequestedToCapacityRatio", shape=[(0, 0), (50, 6), (100, 3)]), pod(1), view)
    assert raw == [30]


def test_resources_fit_rejects_bad_arguments():
    with pytest.raises(ValueError, match="unknown scoring strategy"):
        NodeResourcesFit("Fancy")
    with pytest.raises(ValueError, match="disk"):  # named against the cell's resources, on first sight of them
        run_score(NodeResourcesFit(resources={"disk": 1}), pod(1), _two_nodes())
    with pytest.raises(ValueError, match="positive integer"):
        NodeResourcesFit(resources={"cpu": 0})
    with pytest.raises(ValueError, match="increase"):
        NodeResourcesFit("RequestedToCapacityRatio", shape=[(50, 1), (10, 2)])


def test_balanced_allocation():
    # n0: fractions 2/4 = 0.5, 4/8 = 0.5 -> std 0 -> 100
    # n1: 1/8 = 0.125, 2/8 = 0.25 -> std |0.125-0.25|/2 = 0.0625 -> (1-0.0625)*100 = 93.75 -> 93
    raw, _ = run_score(NodeResourcesBalancedAllocation(), pod(1), _two_nodes())
    assert raw == [100, 93]
    assert NodeResourcesBalancedAllocation().pre_score(CycleState(), pod(2, (0.0, 0.0)), _two_nodes(), np.arange(2)) == SKIP


# -- NodeAffinity ------------------------------------------------------------------


def _labelled() -> ClusterView:
    return ClusterView([node(0, zone="a", disk="ssd"), node(1, zone="a", disk="hdd"), node(2, rack="r1"), node(3)])


def test_node_affinity_filter_selector_and_ored_terms():
    view, plugin = _labelled(), NodeAffinity()
    ok = lambda p: [s.ok for s in run_filter(plugin, p, view)]  # noqa: E731
    assert ok(pod(0, node_selector=labels({"disk": "ssd"}))) == [True, False, False, False]
    terms = (Selector((Requirement(ZONE, "In", ("a",)),)), Selector((Requirement("rack", "Exists"),)))
    assert ok(pod(0, affinity=NodeAffinitySpec(required=terms))) == [True, True, True, False]
    # nodeSelector AND the terms: zone a and not hdd
    both = pod(0, node_selector=labels({ZONE: "a"}), affinity=NodeAffinitySpec(required=(Selector((Requirement("disk", "NotIn", ("hdd",)),)),)))
    assert ok(both) == [True, False, False, False]
    # an empty term matches no node (upstream), so a lone empty term rejects all
    assert ok(pod(0, affinity=NodeAffinitySpec(required=(Selector(),)))) == [False] * 4
    st = run_filter(plugin, pod(0, node_selector=labels({"disk": "ssd"})), view)[1]
    assert st.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE and st.reasons == ("node(s) didn't match Pod's node affinity/selector",)


def test_node_affinity_skips_pods_without_constraints():
    assert NodeAffinity().pre_filter(CycleState(), pod(0), _labelled()) == SKIP
    assert NodeAffinity().pre_score(CycleState(), pod(0), _labelled(), np.arange(4)) == SKIP


def test_node_affinity_preferred_score():
    # (5, zone a) + (2, disk ssd): n0 7, n1 5, n2 0, n3 0; max 7:
    # 7*100//7 = 100, 5*100//7 = 71, 0, 0
    pref = ((5, Selector((Requirement(ZONE, "In", ("a",)),))), (2, Selector((Requirement("disk", "In", ("ssd",)),))))
    raw, norm = run_score(NodeAffinity(), pod(0, affinity=NodeAffinitySpec(preferred=pref)), _labelled())
    assert raw == [7, 5, 0, 0] and norm == [100, 71, 0, 0]


# -- TaintToleration and NodeUnschedulable -------------------------------------------


def test_taint_toleration_filter():
    gpu = Taint("dedicated", "gpu", "NoSchedule")
    view = ClusterView([node(0, taints=[gpu]), node(1, taints=[Taint("slow", "", "PreferNoSchedule")]), node(2)])
    plugin = TaintToleration()
    sts = run_filter(plugin, pod(0), view)
    assert [s.ok for s in sts] == [False, True, True]  # PreferNoSchedule does not filter
    assert sts[0].reasons == ("node(s) had untolerated taint {dedicated: gpu}",)
    assert sts[0].code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    for tol in (Toleration("dedicated", "Equal", "gpu"), Toleration("dedicated", "Exists"), Toleration(operator="Exists")):
        assert run_filter(plugin, pod(0, tolerations=(tol,)), view)[0].ok
    wrong_effect = Toleration("dedicated", "Equal", "gpu", effect="NoExecute")
    assert not run_filter(plugin, pod(0, tolerations=(wrong_effect,)), view)[0].ok


def test_taint_toleration_score_fewer_intolerable_soft_taints_is_better():
    soft = lambda k: Taint(k, "", "PreferNoSchedule")  # noqa: E731
    view = ClusterView([node(0), node(1, taints=[soft("a")]), node(2, taints=[soft("a"), soft("b")])])
    # counts 0, 1, 2; reverse-normalised by max 2: 100-0, 100-50, 100-100
    assert run_score(TaintToleration(), pod(0), view) == ([0, 1, 2], [100, 50, 0])
    # tolerating "a" (effect PreferNoSchedule): counts 0, 0, 1 -> 100, 100, 0
    tol = (Toleration("a", "Exists", effect="PreferNoSchedule"),)
    assert run_score(TaintToleration(), pod(0, tolerations=tol), view) == ([0, 0, 1], [100, 100, 0])
    # a NoSchedule-only toleration does not count for the score
    tol = (Toleration("a", "Exists", effect="NoSchedule"),)
    assert run_score(TaintToleration(), pod(0, tolerations=tol), view)[0] == [0, 1, 2]


def test_taint_toleration_no_soft_taints_anywhere_all_score_100():
    assert run_score(TaintToleration(), pod(0), ClusterView([node(0), node(1)]))[1] == [100, 100]


def test_node_unschedulable():
    view = ClusterView([node(0, unschedulable=True), node(1)])
    sts = run_filter(NodeUnschedulable(), pod(0), view)
    assert [s.ok for s in sts] == [False, True] and sts[0].reasons == ("node(s) were unschedulable",)
    tol = (Toleration("node.kubernetes.io/unschedulable", "Exists", effect="NoSchedule"),)
    assert all(s.ok for s in run_filter(NodeUnschedulable(), pod(0, tolerations=tol), view))


# -- PodTopologySpread --------------------------------------------------------------


def _zones() -> ClusterView:
    # z1: n0, n1; z2: n2; n3 has no zone. Two web pods on n0, one db pod on n2.
    nodes = [node(0, zone="z1"), node(1, zone="z1"), node(2, zone="z2"), node(3)]
    return ClusterView(nodes, [(pod(100, app="web"), 0), (pod(101, app="web"), 0), (pod(102, app="db"), 2)])


def test_spread_filter_skew_over_eligible_domains():
    view, plugin = _zones(), PodTopologySpread()
    c = lambda skew: (SpreadConstraint(skew, ZONE, WEB),)  # noqa: E731
    # matchNum z1 = 2, z2 = 0, minMatch = 0; a web pod matches itself (+1):
    # z1: 2+1-0 = 3 > 1 rejected; z2: 0+1-0 = 1 ok; n3 lacks the key
    sts = run_filter(plugin, pod(0, app="web", spread=c(1)), view)
    assert [s.ok for s in sts] == [False, False, True, False]
    assert sts[0].code == Code.UNSCHEDULABLE and sts[0].reasons == ("node(s) didn't match pod topology spread constraints",)
    assert sts[3].code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE and "missing required label" in sts[3].message
    # maxSkew 3: 3 <= 3 everywhere with the key
    assert [s.ok for s in run_filter(plugin, pod(0, app="web", spread=c(3)), view)] == [True, True, True, False]
    # a pod not matching its own selector: z1 2+0-0 = 2 > 1 still rejected, ok at maxSkew 2
    assert [s.ok for s in run_filter(plugin, pod(0, app="x", spread=c(1)), view)] == [False, False, True, False]
    assert [s.ok for s in run_filter(plugin, pod(0, app="x", spread=c(2)), view)] == [True, True, True, False]
    # nodeSelector to z1 only: z2 is not eligible, minMatch = 2, z1: 2+1-2 = 1 ok
    only_z1 = pod(0, app="web", spread=c(1), node_selector=labels({ZONE: "z1"}))
    assert [s.ok for s in run_filter(plugin, only_z1, view)][:2] == [True, True]


def test_spread_filter_skips_pods_without_hard_constraints():
    soft = (SpreadConstraint(1, ZONE, WEB, "ScheduleAnyway"),)
    assert PodTopologySpread().pre_filter(CycleState(), pod(0, spread=soft), _zones()) == SKIP


def test_spread_score_hostname():
    # ScheduleAnyway on hostname, maxSkew 1; candidates n0, n1, n2 (3 hosts):
    # weight log(3+2) = 1.609; web pods per host 2, 0, 0 -> raw round(2*1.609) = 3, 0, 0
    # normalise: max 3, min 0 -> 100*(3+0-s)//3 = 0, 100, 100
    assert math.isclose(math.log(5), 1.6094, rel_tol=1e-4)
    soft = (SpreadConstraint(1, HOSTNAME, WEB, "ScheduleAnyway"),)
    assert run_score(PodTopologySpread(), pod(0, app="web", spread=soft), _zones(), [0, 1, 2]) == ([3, 0, 0], [0, 100, 100])


def test_spread_score_zone_ignores_nodes_without_the_key():
    # ScheduleAnyway on zone, maxSkew 2; candidates n0..n3, n3 ignored (no zone) -> 0.
    # 2 zones among the rest: weight log(2+2) = 1.386; web per zone z1 2, z2 0;
    # raw = round(cnt*1.386 + (2-1)): n0, n1 round(3.77) = 4, n2 1; n3 0
    # normalise over n0..n2: max 4, min 1 -> 100*(4+1-s)//4: n0, n1 25, n2 100; n3 0
    soft = (SpreadConstraint(2, ZONE, WEB, "ScheduleAnyway"),)
    assert run_score(PodTopologySpread(), pod(0, app="web", spread=soft), _zones()) == ([4, 4, 1, 0], [25, 25, 100, 0])


# -- InterPodAffinity ---------------------------------------------------------------


def _affinity_view(extra=()) -> ClusterView:
    # z1: n0 (db pod), n1; z2: n2; n3 no zone.
    nodes = [node(0, zone="z1"), node(1, zone="z1"), node(2, zone="z2"), node(3)]
    return ClusterView(nodes, [(pod(100, app="db"), 0), *extra])


def test_interpod_required_affinity():
    sts = run_filter(InterPodAffinity(), pod(0, app="web", pod_affinity=(PodAffinityTerm(DB, ZONE),)), _affinity_view())
    # z1 holds a db pod: n0, n1 pass; z2 has none; n3 lacks the key
    assert [s.ok for s in sts] == [True, True, False, False]
    assert sts[2].code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE and sts[2].reasons == ("node(s) didn't match pod affinity rules",)


def test_interpod_first_pod_of_a_self_affine_group_passes_where_the_key_exists():
    view = ClusterView([node(0, zone="z1"), node(1)])
    web_to_web = pod(0, app="web", pod_affinity=(PodAffinityTerm(WEB, ZONE),))
    assert [s.ok for s in run_filter(InterPodAffinity(), web_to_web, view)] == [True, False]
    not_self = pod(0, app="other", pod_affinity=(PodAffinityTerm(WEB, ZONE),))
    assert [s.ok for s in run_filter(InterPodAffinity(), not_self, view)] == [False, False]


def test_interpod_required_anti_affinity():
    sts = run_filter(InterPodAffinity(), pod(0, app="web", pod_affinity=(PodAffinityTerm(DB, ZONE, anti=True),)), _affinity_view())
    assert [s.ok for s in sts] == [False, False, True, True]
    assert sts[0].code == Code.UNSCHEDULABLE and sts[0].reasons == ("node(s) didn't match pod anti-affinity rules",)


def test_interpod_existing_pods_anti_affinity_against_the_incoming_pod():
    loner = Pod((7, 0), (1.0, 1.0), labels=labels({"app": "loner"}), pod_affinity=(PodAffinityTerm(WEB, ZONE, anti=True),))
    view = _affinity_view([(loner, 2)])
    sts = run_filter(InterPodAffinity(), pod(0, app="web"), view)
    assert [s.ok for s in sts] == [True, True, False, True]
    assert sts[2].reasons == ("node(s) didn't satisfy existing pods anti-affinity rules",)
    assert InterPodAffinity().pre_filter(CycleState(), pod(0, app="other"), view) == SKIP


def test_interpod_preferred_score():
    # pod: (10, affinity db/zone), (4, anti cache/hostname); db on n0, cache on n1;
    # an existing pod on n2 prefers (7) web on its hostname.
    # per domain: z1 +10; host n1 -4; host n2 +7 -> n0 10, n1 6, n2 7, n3 0
    # min-max: (s-0)/(10-0)*100 -> 100, 60, 70, 0
    fan = Pod((7, 1), (1.0, 1.0), preferred_pod_affinity=((7, PodAffinityTerm(WEB, HOSTNAME)),))
    view = _affinity_view([(pod(101, app="cache"), 1), (fan, 2)])
    pref = ((10, PodAffinityTerm(DB, ZONE)), (4, PodAffinityTerm(Selector.of_labels({"app": "cache"}), HOSTNAME, anti=True)))
    assert run_score(InterPodAffinity(), pod(0, app="web", preferred_pod_affinity=pref), view) == ([10, 6, 7, 0], [100, 60, 70, 0])


def test_interpod_existing_required_affinity_counts_with_the_hard_weight():
    # an existing pod on n2 requires web in its zone: z2 + hard weight 5 -> n2 5, others 0
    needy = Pod((7, 2), (1.0, 1.0), pod_affinity=(PodAffinityTerm(WEB, ZONE),))
    raw, norm = run_score(InterPodAffinity(hard_pod_affinity_weight=5), pod(0, app="web"), _affinity_view([(needy, 2)]))
    assert raw == [0, 0, 5, 0] and norm == [0, 0, 100, 0]


def test_a_topology_key_no_node_has():
    # no node carries a zone: spread rejects all for the missing label; affinity
    # cannot be met; anti-affinity and the scores have nothing to count
    view = ClusterView([node(0), node(1)], [(pod(100, app="web"), 0)])
    hard = (SpreadConstraint(1, ZONE, WEB),)
    assert [s.reasons for s in run_filter(PodTopologySpread(), pod(0, app="web", spread=hard), view)] == [
        ("node(s) didn't match pod topology spread constraints (missing required label)",)
    ] * 2
    soft = (SpreadConstraint(1, ZONE, WEB, "ScheduleAnyway"),)
    assert run_score(PodTopologySpread(), pod(0, app="web", spread=soft), view) == ([0, 0], [0, 0])
    assert [s.ok for s in run_filter(InterPodAffinity(), pod(0, pod_affinity=(PodAffinityTerm(WEB, ZONE),)), view)] == [False, False]
    assert [s.ok for s in run_filter(InterPodAffinity(), pod(0, pod_affinity=(PodAffinityTerm(WEB, ZONE, anti=True),)), view)] == [True, True]
    pref = ((3, PodAffinityTerm(WEB, ZONE)),)
    assert run_score(InterPodAffinity(), pod(0, preferred_pod_affinity=pref), view) == ([0, 0], [0, 0])
