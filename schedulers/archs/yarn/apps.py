"""A workload job as a YARN application, pure: the ``AppRecord`` the
ResourceManager admits for it (its leaf queue and user from the section's
routing, one task per job task, the nodes holding each task's input when
its queue has ``data_replicas``), and which AM pool runs its master."""
from __future__ import annotations

import math

from schedlab.schedulers.archs.yarn.messages import AppRecord, TaskSpec
from schedlab.schedulers.archs.yarn.spec import YarnSpec
from schedlab.schedulers.model.jobs import Job
from schedlab.schedulers.model.seeding import rng_for


def app_record(spec: YarnSpec, job: Job, n_nodes: int, seed: int, now: float) -> AppRecord:
    """The application for ``job``, submitted at ``now``. Input locations
    are drawn per job from a generator seeded by (seed, job id), so a
    restarted ResourceManager rebuilding the record gets the same ones."""
    queue, user = spec.route(job.job_class, job.job_id)
    replicas = min(spec.queue_of(job.job_class).data_replicas, n_nodes)
    rng = rng_for(seed, f"yarn-data-{job.job_id}") if replicas else None
    tasks = []
    for i, d in enumerate(job.durations):
        duration = math.inf if d < 0 or math.isinf(d) else float(d)
        preferred = tuple(int(n) for n in rng.choice(n_nodes, size=replicas, replace=False)) if rng is not None else ()
        tasks.append(TaskSpec(i, tuple(job.request), duration, preferred=preferred))
    return AppRecord(job.job_id, queue, user, tuple(tasks), spec.am, submitted_at=float(now))


def pool_of(app_id: int, pools: int) -> int:
    """The AM pool that runs ``app_id``'s master (by id: stable across restarts)."""
    return int(app_id) % int(pools)


def pool_name(i: int) -> str:
    return f"am-pool-{i}"
