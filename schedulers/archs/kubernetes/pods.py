"""Pods from the scenario: what a controller writes to the API store for a
job's task (a small value: the job class names the template), and the
``Pod`` a scheduler rebuilds from that value with the template's fields
(labels, affinity, tolerations, spread, priority class).

Why the template is not in the store value: every scheduler already knows
the scenario, and a 50,000-pod store stays small when a pod is its job,
task, class, request, duration and priority."""
from __future__ import annotations

from dataclasses import dataclass

from schedlab.schedulers.archs.kubernetes.objects import Pod
from schedlab.schedulers.archs.kubernetes.section import KubeSpec


KIND = 8  # where a create row carries its template's kind (``PodFactory.row``)


@dataclass(frozen=True)
class PodFactory:
    spec: KubeSpec

    def row(self, job: int, task: int, job_class: str, request: list[float], duration: float, tasks: int,
            now: float, gang_timeout: float | None = None, models: tuple[str, ...] = ()) -> list:
        """The ``create`` command's row for one task's pod (its template's
        kind: what becomes of it when its run ends, ``workloads``; then what
        only some pods carry: for a gang's pod how long it may wait for its
        group, ``g``; the device models it may use, ``m``)."""
        tpl = self.spec.template_of(job_class)
        prio, _policy = self.spec.priority_of(tpl)
        extra = {**({} if gang_timeout is None else {"g": gang_timeout}), **({"m": list(models)} if models else {})}
        return [job, task, job_class, list(request), duration, prio, now, tasks, tpl.kind, *([extra] if extra else [])]

    def pod(self, value: dict) -> Pod:
        """The Pod of a store value (a prefill pod, class "", has no template's fields)."""
        tpl = self.spec.template_of(value["cls"]) if value["cls"] else None
        key = (int(value["j"]), int(value["t"]))
        if tpl is None:
            return Pod(key, tuple(value["req"]), priority=int(value["prio"]), created=float(value["created"]),
                       scheduler_name="")
        _prio, policy = self.spec.priority_of(tpl)
        return Pod(key, tuple(value["req"]), priority=int(value["prio"]), created=float(value["created"]),
                   labels=tpl.labels, scheduler_name=tpl.scheduler_name, node_selector=tpl.node_selector,
                   affinity=tpl.affinity, tolerations=tpl.tolerations, spread=tpl.spread, pod_affinity=tpl.pod_affinity,
                   preferred_pod_affinity=tpl.preferred_pod_affinity, preemption_policy=policy,
                   owner=f"{value['cls']}/{value['j']}",
                   # A gang's pod: its job's PodGroup, all of whose pods (the job's tasks) must be placed together.
                   min_member=int(value["n"]) if value.get("g") else 0, gang_timeout=float(value.get("g") or 0.0),
                   models=tuple(value.get("m", ())))
