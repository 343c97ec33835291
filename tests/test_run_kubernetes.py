"""The Kubernetes scenarios on the sim engine, each showing what its header
says: topology spread and anti-affinity, preemption of lower priorities
only, two profiles racing, a store leader failover, and a deployment's
pods made again after their node dies."""
from __future__ import annotations

import tomllib
from pathlib import Path

from schedlab.actors.analysis.saved_run import read_events
from schedlab.actors.run import run_scenario
from schedlab.schedulers.events.shared import (
    JOBS_FINAL, JOB_SCHEDULED, JOB_SUBMITTED, MACHINES_DOWN, PREEMPTED, TASKS_LAUNCHED, TXN,
)
from schedlab.schedulers.scenario.parse import parse_scenario

ROOT = Path(__file__).resolve().parent.parent


def _run(tmp_path: Path, name: str, **over: object) -> tuple[dict, list[dict]]:
    path = ROOT / "scenarios" / f"{name}.toml"
    data = tomllib.loads(path.read_text()) | {"engine": "sim"} | over
    data = {k: v for k, v in data.items() if v is not None}  # a key given None: dropped
    summary = run_scenario(parse_scenario(data, str(path)), tmp_path)
    assert not any(summary["invariants"].values()), summary["invariants"]
    return summary, read_events(tmp_path / "events.jsonl")


def test_spread_and_anti_affinity_even_out_racks_where_packing_stacks(tmp_path: Path) -> None:
    summary, _ = _run(tmp_path, "k8s_spread")
    k = summary["kubernetes"]
    web, plain = k["pods_per_rack"]["web"], k["pods_per_rack"]["plain"]
    assert sum(web) == 12 and max(web) - min(web) <= 1  # maxSkew 1 over the racks
    assert k["nodes_used"]["web"] == 12  # one replica per node (anti-affinity)
    assert sum(plain) == 12 and k["nodes_used"]["plain"] <= 3  # MostAllocated packs the rest
    assert max(plain) - min(plain) >= 4


def test_a_critical_deployment_preempts_only_lower_priorities_and_lands(tmp_path: Path) -> None:
    summary, events = _run(tmp_path, "k8s_preemption")
    k = summary["kubernetes"]
    assert k["preemptions"] > 0
    for e in (e for e in events if e["event"] == PREEMPTED):
        assert e["priority"] < e["by_priority"]  # never an equal or higher priority
    critical = {e["job_id"]: e["t"] for e in events if e["event"] == JOB_SUBMITTED and e["job_class"] == "critical"}
    assert critical
    placed = {e["job_id"]: e["t"] for e in events if e["event"] == JOB_SCHEDULED and e["job_id"] in critical}
    assert set(placed) == set(critical)
    assert all(placed[j] - critical[j] < 30.0 for j in critical)  # within a few rounds of arriving
    # The critical pods took room from batch pods only (priority 0), not from the standard services.
    by_critical = [e for e in events if e["event"] == PREEMPTED and e["by_priority"] == 1000]
    assert by_critical and all(e["priority"] == 0 for e in by_critical)


def test_two_profiles_racing_have_binds_refused_and_overcommit_nothing(tmp_path: Path) -> None:
    summary, events = _run(tmp_path, "k8s_profiles", duration=250.0)
    conflicts = summary["kubernetes"]["bind_conflicts"]
    assert set(conflicts) == {"kube-scheduler-alpha", "kube-scheduler-beta"}
    assert all(n > 0 for n in conflicts.values())
    # Each refused bind was retried: every pod bound at most once at a time, no node over-committed.
    assert summary["invariants"]["overcommit"] == 0 and summary["invariants"]["double_placement"] == 0
    # One scheduler for both: nothing is refused.
    one, _ = _run(tmp_path / "one", "k8s_profiles", duration=250.0,
                  kubernetes={**tomllib.loads((ROOT / "scenarios/k8s_profiles.toml").read_text())["kubernetes"],
                              "workloads": [{"classes": ["alpha", "beta"], "scheduler_name": "alpha"}]})
    assert sum(one["kubernetes"]["bind_conflicts"].values()) == 0


def test_a_store_leader_failover_loses_nothing(tmp_path: Path) -> None:
    summary, events = _run(tmp_path, "k8s_failover", duration=320.0)
    (rec,) = summary["failovers"]
    assert rec["role"] == "coordinator" and rec["new_leader"] != rec["target"]
    assert rec["killed_at_s"] < rec["elected_at_s"] < rec["killed_at_s"] + 30
    # Binds resume after the election, and nothing is written off.
    binds = [e["t"] for e in events if e["event"] == TXN and e["committed"] > 0]
    assert any(t > rec["elected_at_s"] for t in binds)
    assert summary["invariants"]["collateral"] == 0
    assert not [e for e in events if e["event"] == MACHINES_DOWN]


def test_a_deployments_pods_are_made_again_after_their_node_dies(tmp_path: Path) -> None:
    # Host 1 (nodes 4-7) killed for good at 150 s: the node lifecycle
    # controller writes its nodes off, the controller manager makes every
    # pod lost there again, and they are bound elsewhere.
    summary, events = _run(tmp_path, "k8s_failover", duration=320.0,
                           faults=[{"at": 150.0, "action": "kill", "target": "machine-host-1"}])
    (down,) = [e for e in events if e["event"] == MACHINES_DOWN]
    lost = {(j, t) for j, t in down["lost"] if j >= 0}
    assert lost
    rebound = {(e["job_id"], task) for e in events if e["event"] == TXN and e["t"] > down["t"]
               for task, node in e["placed"] if node // 4 != 1}
    assert lost <= rebound


def test_nomad_workers_share_a_profile_by_job_and_rank_few_candidates(tmp_path: Path) -> None:
    from schedlab.schedulers.archs.kubernetes.profile import Profile

    # Nomad's limit iterator: 2 feasible nodes for batch, log2(n) for services.
    assert Profile(candidate_limit=2).feasible_to_find(32) == 2
    assert Profile(candidate_limit="log2").feasible_to_find(32) == 5
    assert Profile().feasible_to_find(32) == 32  # small clusters: every node (upstream)
    summary, events = _run(tmp_path, "nomad", duration=250.0)
    workers = {"kube-scheduler-batch-0": 0, "kube-scheduler-batch-1": 1}
    for e in events:
        if e["event"] == TXN and e["scheduler"] in workers:
            assert e["job_id"] % 2 == workers[e["scheduler"]]  # each worker its own jobs' evaluations
    # Plans are applied one at a time and partly refused when their room is gone.
    assert sum(summary["kubernetes"]["bind_conflicts"].values()) > 0
    assert {s["name"] for s in summary["schedulers"]} == {*workers, "kube-scheduler-service"}


def test_swarm_spreads_by_task_count_and_keeps_constraints(tmp_path: Path) -> None:
    spread, _ = _run(tmp_path / "spread", "swarm")
    binpack, _ = _run(tmp_path / "binpack", "swarm", kubernetes={
        **tomllib.loads((ROOT / "scenarios/swarm.toml").read_text())["kubernetes"],
        "profiles": [{"name": "swarm", "scoring_strategy": "MostAllocated",
                      "plugins": ["NodeUnschedulable", "NodeAffinity", "NodeResourcesFit", "DefaultBinder"]}]})
    s, b = spread["kubernetes"], binpack["kubernetes"]
    assert s["nodes_used"]["api"] == 16 and s["nodes_used"]["api"] > b["nodes_used"]["api"]
    # db's constraint keeps it off the edge rack (the last rack) either way.
    assert s["pods_per_rack"]["db"][-1] == 0 and b["pods_per_rack"]["db"][-1] == 0


def test_a_deployment_keeps_its_pods_running_and_a_jobs_completed_pods_are_not_made_again(tmp_path: Path) -> None:
    # k8s_failover without its fault, the web Deployment's pods made to end
    # every ~40 s: each is restarted in place by its kubelet (restartPolicy
    # Always: same node, its room held, never scheduled again), while the
    # batch Job's pods run once and are done.
    data = tomllib.loads((ROOT / "scenarios/k8s_failover.toml").read_text())
    web = next(c for c in data["workload"]["classes"] if c["name"] == "web")
    web["duration"] = {"dist": "exponential", "mean": 40.0}
    summary, events = _run(tmp_path, "k8s_failover", duration=300.0, faults=None, workload=data["workload"])
    cls = {e["job_id"]: e["job_class"] for e in events if e["event"] == JOB_SUBMITTED}
    launches: dict[tuple[int, int], list[int]] = {}
    for e in events:
        if e["event"] == TASKS_LAUNCHED and not e["prefill"]:
            for j, t, m, *_ in e["tasks"]:
                launches.setdefault((j, t), []).append(m)
    binds: dict[tuple[int, int], int] = {}
    for e in events:
        if e["event"] == TXN:
            for t, _m in e["placed"]:
                binds[(e["job_id"], t)] = binds.get((e["job_id"], t), 0) + 1
    web_pods = {k: ms for k, ms in launches.items() if cls[k[0]] == "web"}
    batch_pods = {k: ms for k, ms in launches.items() if cls[k[0]] == "batch"}
    assert web_pods and batch_pods
    # The Deployment: pods run again and again, each on its own node, bound once.
    assert sum(len(ms) > 1 for ms in web_pods.values()) >= len(web_pods) // 2
    assert all(len(set(ms)) == 1 for ms in web_pods.values())
    assert all(binds[k] == 1 for k in web_pods)
    k = summary["kubernetes"]
    assert k["pod_restarts"] == sum(len(ms) - 1 for ms in web_pods.values()) > 0
    # Every web pod ever started still holds its node at the end (none
    # completed for good): the store's final progress counts them bound.
    done = {j for e in events if e["event"] == JOBS_FINAL for j in e["scheduled"]}
    assert {j for j, _t in web_pods} <= done
    # The Job: each pod ran once and was never made again; its jobs complete.
    assert all(len(ms) == 1 for ms in batch_pods.values())
    assert k["pods_recreated"] == 0 and summary["jobs"]["completed"] > 0


class PairUp:
    """A Permit plugin: a pod waits (up to 5 s) for another pod of its job,
    whose Permit allows it; a pod that timed out once is let through."""

    name = "PairUp"

    def __init__(self) -> None:
        self.tried: set = set()

    def permit(self, state, pod, view, node):  # noqa: ANN001, ANN201
        from schedlab.schedulers.archs.kubernetes.status import SUCCESS, Code, Status

        mates = [wp for wp in state.waiting_pods if wp.key[0] == pod.key[0]]
        for wp in mates:
            wp.allow(self.name)
        if mates or pod.key in self.tried:
            return SUCCESS, 0.0
        self.tried.add(pod.key)
        return Status(Code.WAIT, ("waiting for a mate",)), 5.0


def test_pods_held_at_permit_bind_when_allowed_or_back_off_after_their_timeout(tmp_path: Path) -> None:
    from schedlab.schedulers.archs.kubernetes.registry import DEFAULT_PLUGINS, register_plugin, unregister_plugin

    register_plugin("PairUp", PairUp, replace=True)
    try:
        summary, events = _run(tmp_path, "k8s_failover", duration=200.0, faults=None, kubernetes={
            "profiles": [{"name": "default-scheduler", "plugins": [*DEFAULT_PLUGINS, "PairUp"]}]})
    finally:
        unregister_plugin("PairUp")
    p = summary["kubernetes"]["permit"]
    assert p["allowed"] > 0  # pods allowed by a mate's Permit, bound
    assert p["rejected"] > 0  # lone pods timed out, backed off, then went through
    assert p["allowed"] + p["rejected"] <= p["waited"]  # some may still wait at the end
    assert summary["kubernetes"]["pods_bound"] > 100
    assert summary["jobs"]["pending"] <= 1 and summary["jobs"]["scheduled"] >= summary["jobs"]["submitted"] - 1
