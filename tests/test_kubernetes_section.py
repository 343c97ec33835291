"""The [kubernetes] section: what it reads, and the one-line refusals of
bad inputs (unknown plugin, weight not a positive integer,
unknown priority class, a topology key no node has, a pod no node fits)."""
from __future__ import annotations

from typing import Any

import pytest

from schedlab.schedulers.archs.kubernetes import registry
from schedlab.schedulers.archs.kubernetes.objects import HOSTNAME, RACK, ZONE, Toleration
from schedlab.schedulers.archs.kubernetes.section import (
    KubeSpec,
    check_fit,
    check_topology_keys,
    node_labels,
    parse_kubernetes,
)
from schedlab.schedulers.scenario.toml_table import ScenarioError, Table

CLASSES = ("web", "batch")
MACHINES = ("standard", "gpu")


def _parse(section: dict[str, Any]) -> KubeSpec:
    return parse_kubernetes(Table(section, "kubernetes", "s.toml"), CLASSES, MACHINES)


def _refused(section: dict[str, Any], key: str, words: str) -> None:
    with pytest.raises(ScenarioError) as e:
        _parse(section)
    msg = str(e.value)
    assert msg.startswith(f"s.toml: {key}: ") and words in msg and "\n" not in msg, msg


FULL = {
    "priority_classes": [{"name": "high", "value": 1000}, {"name": "low", "value": 10, "global_default": True},
                         {"name": "gentle", "value": 500, "preemption_policy": "Never"}],
    "nodes": [{"class": "gpu", "labels": {"accelerator": "gpu"},
               "taints": [{"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}]}],
    "profiles": [{"name": "default-scheduler"},
                 {"name": "packer", "scoring_strategy": "MostAllocated", "weights": {"NodeResourcesFit": 5},
                  "percentage_of_nodes_to_score": 50}],
    "workloads": [{"classes": ["web"], "kind": "deployment", "priority_class": "high", "labels": {"app": "web"},
                   "spread": [{"max_skew": 1, "topology_key": RACK}],
                   "anti_affinity": [{"topology_key": HOSTNAME}], "max_unavailable": 1},
                  {"classes": ["batch"], "scheduler_name": "packer", "node_selector": {"accelerator": "gpu"},
                   "tolerations": [{"key": "dedicated", "operator": "Exists"}]}],
    "racks_per_zone": 2,
}


def test_a_full_section_reads_into_its_spec() -> None:
    spec = _parse(FULL)
    assert [p.name for p in spec.priority_classes] == ["high", "low", "gentle"]
    web, batch = spec.template_of("web"), spec.template_of("batch")
    assert web.kind == "deployment" and spec.priority_of(web) == (1000, "PreemptLowerPriority")
    # A template with no priority class takes the global default.
    assert batch.priority_class == "" and spec.priority_of(batch) == (10, "PreemptLowerPriority")
    assert web.spread[0].max_skew == 1 and web.spread[0].selector.matches({"app": "web"})
    assert web.pod_affinity[0].anti and web.pod_affinity[0].topology_key == HOSTNAME
    assert batch.scheduler_name == "packer" and dict(batch.node_selector) == {"accelerator": "gpu"}
    assert batch.tolerations == (Toleration("dedicated", "Exists"),)
    # Pods of a template without labels are told apart by app=<class>.
    assert dict(batch.labels) == {"app": "batch"}
    packer = spec.profiles[1]
    assert packer.weights == (("NodeResourcesFit", 5),) and packer.percentage_of_nodes_to_score == 50


def test_every_node_carries_hostname_rack_and_zone() -> None:
    spec = _parse(FULL)
    ls = node_labels(spec, "gpu", 7, 3)
    assert ls == {"accelerator": "gpu", HOSTNAME: "node-7", RACK: "rack-3", ZONE: "zone-1"}
    assert node_labels(spec, "standard", 0, 0) == {HOSTNAME: "node-0", RACK: "rack-0", ZONE: "zone-0"}


def test_an_unknown_plugin_is_refused_naming_the_key() -> None:
    _refused({"profiles": [{"name": "p", "plugins": ["NodeResourcesFit", "Magic"]}]},
             "kubernetes.profiles[0].plugins", "unknown plugin 'Magic'")
    _refused({"profiles": [{"disabled": ["Nope"]}]}, "kubernetes.profiles[0].disabled", "unknown plugin 'Nope'")


def test_a_user_plugin_registered_by_name_is_known() -> None:
    class Always:
        name = "Always"

        def filter(self, *a: Any) -> None:
            return None

    registry.register_plugin("Always", Always, replace=True)
    try:
        spec = _parse({"profiles": [{"name": "p", "plugins": ["NodeResourcesFit", "Always", "DefaultBinder"]}],
                       "workloads": [{"classes": ["web", "batch"], "scheduler_name": "p"}]})
        assert spec.profiles[0].plugins == ("NodeResourcesFit", "Always", "DefaultBinder")
        # It does not score, so it takes no weight.
        _refused({"profiles": [{"weights": {"Always": 2}}]}, "kubernetes.profiles[0].weights.Always",
                 "does not score nodes")
    finally:
        registry.unregister_plugin("Always")


@pytest.mark.parametrize("weight", [0, -3, 101, 1.5, "2", True])
def test_a_weight_that_is_not_a_positive_integer_is_refused(weight: Any) -> None:
    with pytest.raises(ScenarioError) as e:
        _parse({"profiles": [{"weights": {"NodeResourcesFit": weight}}]})
    assert str(e.value).startswith("s.toml: kubernetes.profiles[0].weights.NodeResourcesFit: ")


def test_an_unknown_priority_class_or_profile_is_refused() -> None:
    _refused({"workloads": [{"classes": ["web"], "priority_class": "urgent"}]},
             "kubernetes.workloads[0].priority_class", "no such priority class")
    _refused({"workloads": [{"classes": ["web"], "scheduler_name": "other"}]},
             "kubernetes.workloads[0].scheduler_name", "no scheduler profile of that name")


def test_other_mistakes_are_refused_in_one_line() -> None:
    _refused({"workloads": [{"classes": ["web"]}, {"classes": ["web"]}]}, "kubernetes.workloads[1].classes",
             "already has a pod template")
    _refused({"nodes": [{"class": "huge"}]}, "kubernetes.nodes[0].class", "unknown machine class")
    _refused({"nodes": [{"class": "gpu", "labels": {RACK: "r"}}]}, f"kubernetes.nodes[0].labels.{RACK}",
             "set by schedlab")
    _refused({"priority_classes": [{"name": "a", "value": 1, "global_default": True},
                                   {"name": "b", "value": 2, "global_default": True}]},
             "kubernetes.priority_classes", "at most one")
    _refused({"workloads": [{"classes": ["web"], "tolerations": [{"operator": "Equal"}]}]},
             "kubernetes.workloads[0].tolerations[0].key", "needs a key")
    _refused({"profiles": [{"shape": [[50, 5], [10, 1]]}]}, "kubernetes.profiles[0].shape", "must increase")
    _refused({"color": "blue"}, "kubernetes.color", "unknown key")


def test_a_topology_key_no_node_has_is_refused() -> None:
    spec = _parse({"workloads": [{"classes": ["web"], "spread": [{"topology_key": "example.com/room"}]}]})
    with pytest.raises(ScenarioError) as e:
        check_topology_keys(Table({}, "", "s.toml"), spec)
    assert str(e.value).startswith("s.toml: kubernetes.workloads[0].spread: ") and "example.com/room" in str(e.value)
    # A key some node class carries is fine; so are the built-in ones.
    ok = _parse({"nodes": [{"class": "gpu", "labels": {"example.com/room": "a"}}],
                 "workloads": [{"classes": ["web"], "spread": [{"topology_key": "example.com/room"}],
                                "anti_affinity": [{"topology_key": ZONE}]}]})
    check_topology_keys(Table({}, "", "s.toml"), ok)


def test_a_pod_no_node_can_hold_is_refused() -> None:
    spec = _parse(FULL)
    machines = [("standard", (8.0, 32.0)), ("gpu", (16.0, 64.0))]
    top = Table({}, "", "s.toml")
    check_fit(top, [("web", (4.0, 8.0), 0), ("batch", (12.0, 8.0), 1)], machines, spec)  # batch fits the gpu nodes
    with pytest.raises(ScenarioError) as e:
        check_fit(top, [("batch", (20.0, 8.0), 1)], machines, spec)
    assert str(e.value).startswith("s.toml: kubernetes.workloads[1]: ") and "fits no node" in str(e.value)
    # Without its toleration, the batch pod fits nowhere: the gpu nodes are tainted.
    no_tol = _parse({**FULL, "workloads": [{"classes": ["batch"], "node_selector": {"accelerator": "gpu"}}]})
    with pytest.raises(ScenarioError) as e:
        check_fit(top, [("batch", (1.0, 1.0), 1)], machines, no_tol)
    assert "untolerated taint" in str(e.value)
    # A class without a template is named by its workload index.
    with pytest.raises(ScenarioError) as e:
        check_fit(top, [("web", (99.0, 1.0), 0)], machines, _parse({}))
    assert str(e.value).startswith("s.toml: workload.classes[0]: ")


def test_a_profile_without_a_bind_plugin_is_refused() -> None:
    # Upstream's validation: at least one Bind plugin per profile.
    _refused({"profiles": [{"name": "p", "plugins": ["NodeResourcesFit"]}]}, "kubernetes.profiles[0].plugins",
             "needs a Bind plugin")
    _refused({"profiles": [{"disabled": ["DefaultBinder"]}]}, "kubernetes.profiles[0].disabled", "needs a Bind plugin")

    class MyBinder:
        name = "MyBinder"

        def bind(self, *a: Any) -> None:
            return None

    registry.register_plugin("MyBinder", MyBinder, replace=True)
    try:
        spec = _parse({"profiles": [{"name": "p", "plugins": ["NodeResourcesFit", "MyBinder"]}],
                       "workloads": [{"classes": ["web", "batch"], "scheduler_name": "p"}]})
        assert spec.profiles[0].plugins == ("NodeResourcesFit", "MyBinder")
    finally:
        registry.unregister_plugin("MyBinder")
