"""The summary's ``kubernetes`` section from hand-made events: preemptions
counted as events and victims apart, and a pod made again timed from its
own creation (not its job's submission)."""
from __future__ import annotations

from schedlab.actors.analysis.run_info import RunInfo
from schedlab.actors.archs.kubernetes.architecture import k8s_section
from schedlab.schedulers.archs.kubernetes.events import PODS_RECREATED
from schedlab.schedulers.events.shared import JOB_SUBMITTED, PREEMPTED, TASKS_LAUNCHED, TXN


def _info(**extra: object) -> RunInfo:
    return RunInfo(scenario="t", architecture="kubernetes", engine="sim", seed=0, time_scale=1.0, emulated_seconds=200.0,
                   wall_seconds=200.0, machines_per_actor=1, substrate={}, extra=extra)


def _ev(*events: dict) -> dict[str, list[dict]]:
    out: dict[str, list[dict]] = {}
    for e in events:
        out.setdefault(e["event"], []).append(e)
    return out


def txn(t: float, job: int, placed: list, conflicted: int = 0) -> dict:
    return {"event": TXN, "t": t, "scheduler": "s", "job_id": job, "placed": placed, "conflicted": conflicted}


def test_a_preemption_is_one_event_with_its_victims_counted_by_priority() -> None:
    ev = _ev(
        # One cycle of pod 9/0 (priority 1000) evicting three pods, another of 9/1 evicting one.
        *[{"event": PREEMPTED, "t": 5.0, "scheduler": "s", "job_id": 1, "task": t, "priority": p,
           "by_job": 9, "by_task": 0, "by_priority": 1000} for t, p in ((0, 0), (1, 0), (2, 500))],
        {"event": PREEMPTED, "t": 5.0, "scheduler": "s", "job_id": 2, "task": 0, "priority": 0,
         "by_job": 9, "by_task": 1, "by_priority": 1000},
    )
    k = k8s_section(ev, _info(), {"emulated_seconds": 100.0})
    assert k["preemptions"] == 2 and k["preemption_victims"] == 4
    assert k["victims_by_priority"] == {"0": 3, "500": 1}
    assert k["preemptions_by_priority"] == {"1000": 2}


def test_a_pod_made_again_is_timed_from_its_own_creation_and_restarts_are_not_startups() -> None:
    ev = _ev(
        {"event": JOB_SUBMITTED, "t": 0.0, "job_id": 1, "job_class": "web"},
        txn(1.0, 1, [[0, 3]]),
        {"event": TASKS_LAUNCHED, "t": 2.0, "prefill": False, "tasks": [[1, 0, 3, 1.0, 1.0, 1.0]]},
        # Restarted in place by its kubelet: a launch, not a new pod.
        {"event": TASKS_LAUNCHED, "t": 50.0, "prefill": False, "tasks": [[1, 0, 3, 1.0, 1.0, 50.0]]},
        # Its node lost at 100 s: made again at 101, bound at 104, running at 106.
        {"event": PODS_RECREATED, "t": 101.0, "tasks": [[1, 0, "node_lost"]]},
        txn(104.0, 1, [[0, 5]]),
        {"event": TASKS_LAUNCHED, "t": 106.0, "prefill": False, "tasks": [[1, 0, 5, 1.0, 1.0, 104.0]]},
    )
    k = k8s_section(ev, _info(racks=[0] * 8), {"emulated_seconds": 200.0})
    assert k["pods_bound"] == 2 and k["pods_recreated"] == 1
    assert k["scheduling_latency_s"] == {"p50": 2.0, "p99": 2.98}  # 1 s and 3 s
    assert k["pod_startup_latency_s"]["p50"] == 3.5  # 2 s and 5 s; the restart at 50 s is neither
    assert k["pod_restarts"] == 1
    assert k["nodes_used"] == {"web": 1}  # where each task's pod was first bound
