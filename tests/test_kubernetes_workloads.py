"""A pod's end by its workload's kind (``workloads``) and what the API
machine makes of it: a Deployment's pod whose run ends is restarted in
place by its kubelet (restartPolicy Always, CrashLoopBackOff between quick
exits), a Job's is Succeeded and never run again; a pod that is gone is
made again by its controller, whatever its kind."""
from __future__ import annotations

import msgpack
import numpy as np
import pytest
from schedlab.schedulers.archs.kubernetes.api_machine import (
    KubeAPIMachine,
    node_name,
    pod_name,
)
from schedlab.schedulers.archs.kubernetes.pods import PodFactory
from schedlab.schedulers.archs.kubernetes.section import KubeSpec, PodTemplate
from schedlab.schedulers.archs.kubernetes.workloads import (
    INITIAL_BACKOFF_S,
    MAX_BACKOFF_S,
    crash_loop_backoff,
    on_end,
    restart_policy,
)

CAP = np.array([[4.0, 8.0]] * 4)  # 4 machines, 2 per host


def test_the_kind_decides_only_what_a_pod_whose_run_ended_becomes() -> None:
    assert restart_policy("deployment") == "Always" and restart_policy("job") == "Never"
    assert on_end("deployment", "completed") == "restart"
    assert on_end("job", "completed") == "succeeded"
    for why in ("evicted", "killed", "node_lost"):
        assert on_end("deployment", why) == on_end("job", why) == "replace"
    with pytest.raises(ValueError):
        restart_policy("statefulset")


def test_crash_loop_backoff_doubles_to_five_minutes_and_resets_after_a_stable_run() -> None:
    entry, now, waits = None, 0.0, []
    for _ in range(9):  # a container that exits 1 s after each start
        at, entry = crash_loop_backoff(entry, now, now)
        waits.append(at - now)
        now = at + 1.0
    assert waits == [0.0, 10.0, 20.0, 40.0, 80.0, 160.0, 300.0, 300.0, 300.0]
    # Ran more than twice the maximum since its last restart: stable, starts over.
    at, entry2 = crash_loop_backoff(entry, now + 2 * MAX_BACKOFF_S, now + 2 * MAX_BACKOFF_S)
    assert at == now + 2 * MAX_BACKOFF_S and entry2[0] == INITIAL_BACKOFF_S
    # Seen late (the kubelet's report after the exit): never before now.
    at, _ = crash_loop_backoff((10.0, 0.0), 5.0, 30.0)
    assert at == 30.0


def machine() -> KubeAPIMachine:
    return KubeAPIMachine(CAP, machines_per_host=2)


def row(job: int, task: int, kind: str, dur: float = 60.0) -> list:
    return [job, task, "web" if kind == "deployment" else "batch", [1.0, 1.0], dur, 0, 0.0, 2, kind]


def run(m: KubeAPIMachine, job: int, task: int, node: int, now: float) -> list:
    """Bind and let the kubelet pull it: its launch."""
    assert m.apply(("bind", [[job, task, node, None]], now))[0][0] == "ok"
    launches, _kills, _ = m.apply(("exchange", node // 2, [], now))
    return launches


def test_a_deployments_pod_whose_run_ends_is_restarted_in_place_a_jobs_is_done() -> None:
    m = machine()
    assert m.apply(("create", [row(1, 0, "deployment"), row(2, 0, "job")])) == ["ok", "ok"]
    run(m, 1, 0, 0, 1.0)
    run(m, 2, 0, 2, 1.0)
    # Both runs end (reported at 61 s).
    launches, _, _ = m.apply(("exchange", 0, [[1, 0, False]], 61.0))
    # The Deployment's pod: still bound, its room held, launched again on its node at once.
    assert launches == [[1, 0, 0, [1.0, 1.0], 60.0, 61.0]]
    pod = m.query(("get", "pods", pod_name(1, 0)))[0]
    assert pod["node"] == 0 and pod["restarts"] == 1
    assert m.query(("get", "nodes", node_name(0)))[0]["req"] == [1.0, 1.0]
    # The Job's pod: Succeeded, gone, its room free, never made again.
    m.apply(("exchange", 1, [[2, 0, False]], 61.0))
    assert m.query(("get", "pods", pod_name(2, 0))) is None
    assert m.query(("get", "nodes", node_name(2)))[0]["req"] == [0.0, 0.0]
    assert m.apply(("create", [row(2, 0, "job")])) == ["done"]
    # Nothing for a controller to make again: neither pod is gone.
    assert m.query(("lost", 0)) == [0, []]
    assert m.query(("progress", [1, 2])) == [[1, 1], [2, 1]]


def test_a_quick_exit_waits_out_its_backoff_and_an_eviction_meanwhile_withdraws_it() -> None:
    m = machine()
    m.apply(("create", [row(1, 0, "deployment", dur=5.0), row(1, 1, "deployment", dur=5.0)]))
    run(m, 1, 0, 0, 0.0)
    run(m, 1, 1, 1, 0.0)
    m.apply(("exchange", 0, [[1, 0, False], [1, 1, False]], 5.0))  # restarted at once
    launches, _, _ = m.apply(("exchange", 0, [[1, 0, False], [1, 1, False]], 10.0))  # and again: backoff 10 s
    assert launches == [] and m.query(("pending", 0))
    assert m.apply(("exchange", 0, [], 15.0))[0] == []
    launches, _, _ = m.apply(("exchange", 0, [], 20.0))
    assert sorted(ln[:2] + [ln[5]] for ln in launches) == [[1, 0, 20.0], [1, 1, 20.0]]
    m.apply(("exchange", 0, [[1, 0, False], [1, 1, False]], 25.0))  # backoff 20 s now: due at 45 s
    snap = m.snapshot()
    twin = machine()
    twin.restore(snap)
    assert twin.restarting == m.restarting and msgpack.unpackb(snap)[-1]
    # Preempted while waiting to restart: nothing runs on the node, so it is gone at once.
    assert m.apply(("evict", [[1, 0, 0]], 30.0)) == ["withdrawn"]
    assert m.query(("lost", 0))[1] == [[1, 0, "evicted"]]
    assert m.query(("get", "nodes", node_name(0)))[0]["req"] == [0.0, 0.0]
    launches, _, _ = m.apply(("exchange", 0, [], 45.0))
    assert [ln[:2] for ln in launches] == [[1, 1]]  # only the other restarts


def test_a_pod_gone_is_made_again_whatever_its_kind_and_a_killed_restart_is_not_restarted() -> None:
    m = machine()
    m.apply(("create", [row(1, 0, "deployment"), row(2, 0, "job")]))
    run(m, 1, 0, 0, 0.0)
    run(m, 2, 0, 1, 0.0)
    assert m.apply(("evict", [[1, 0, 0], [2, 0, 1]], 5.0)) == ["killing", "killing"]
    # The Deployment's pod exits on its own before the kill lands: being deleted, not restarted.
    launches, kills, _ = m.apply(("exchange", 0, [[1, 0, False]], 6.0))
    assert launches == [] and sorted(kills) == [[1, 0], [2, 0]]
    m.apply(("exchange", 0, [[2, 0, True]], 7.0))
    assert m.query(("lost", 0))[1] == [[1, 0, "evicted"], [2, 0, "evicted"]]
    assert m.apply(("create", [row(1, 0, "deployment"), row(2, 0, "job")])) == ["ok", "ok"]


def test_the_controller_row_carries_its_templates_kind() -> None:
    spec = KubeSpec(templates=(PodTemplate(classes=("web",), kind="deployment"),))
    pods = PodFactory(spec)
    assert pods.row(1, 0, "web", [1.0, 1.0], 60.0, 2, 0.0)[-1] == "deployment"
    assert pods.row(2, 0, "batch", [1.0, 1.0], 60.0, 2, 0.0)[-1] == "job"  # no template: a Job
