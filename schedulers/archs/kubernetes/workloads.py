"""What happens to a pod when it ends, by its workload's kind: the rule the
API machine (playing the kubelets' restart policy) and the controller
manager (the ReplicaSet and Job controllers) follow. Pure.

Upstream:

- A **Deployment**'s pod template must have ``restartPolicy: Always``
  (the apiserver refuses anything else for a ReplicaSet), so a container
  that exits, successfully or not, is restarted **in place** by its
  kubelet: the pod stays bound to its node and Running, its restart count
  grows, and the ReplicaSet never sees it end. The kubelet spaces
  restarts with CrashLoopBackOff (``crash_loop_backoff``). A pod that is
  *gone* (deleted with its node, evicted, preempted) is replaced by the
  ReplicaSet with a new pod that is scheduled again.
- A **Job**'s pods have ``restartPolicy: Never`` or ``OnFailure``: a pod
  whose container succeeds is Succeeded and counts toward the Job's
  completions; it is never run again. A pod that fails or is gone is
  replaced by the Job controller (a retry).

So the kind decides one thing: what a pod whose run ended (the workload
gave its task a finite duration) becomes. Everything else ends a pod the
same way for both kinds: its controller makes it again.

Not modelled: the Job's ``backoffLimit`` (every lost pod is retried, as
``podFailurePolicy`` ignoring disruptions would), ``completions`` /
``parallelism`` apart from the task count, a container failing on its own
(the house's tasks do not fail; they are only lost or evicted).
"""
from __future__ import annotations

from typing import Literal

KINDS = ("deployment", "job")

# The kubelet's container restart backoff (pkg/kubelet: initial 10 s,
# doubling to MaxContainerBackOff 300 s; an entry whose last update is more
# than twice the maximum ago has expired: the container ran long enough to
# be considered stable and starts over).
INITIAL_BACKOFF_S = 10.0
MAX_BACKOFF_S = 300.0

Ending = Literal["restart", "succeeded", "replace"]


def restart_policy(kind: str) -> str:
    """The pod template's restartPolicy for a workload kind."""
    if kind not in KINDS:
        raise ValueError(f"unknown workload kind {kind!r} (known: {', '.join(KINDS)})")
    return "Always" if kind == "deployment" else "Never"


def on_end(kind: str, why: str) -> Ending:
    """What becomes of a pod of ``kind`` whose run ended ``why``:
    ``completed`` (its container exited successfully), or gone:
    ``evicted`` (preemption), ``killed``, ``node_lost``.

    ``restart``: its kubelet runs it again in place (Deployment, exited);
    ``succeeded``: done, never run again (Job, exited);
    ``replace``: the pod is gone and its controller makes a new one."""
    policy = restart_policy(kind)
    if why == "completed":
        return "restart" if policy == "Always" else "succeeded"
    return "replace"


BackoffEntry = tuple[float, float]  # (current backoff s, last update)


def crash_loop_backoff(entry: BackoffEntry | None, finished_at: float, now: float) -> tuple[float, BackoffEntry]:
    """When the kubelet restarts a container that exited at ``finished_at``
    (seen at ``now``), and the pod's backoff entry after it, as upstream's
    ``doBackOff`` with ``flowcontrol.Backoff``: without an entry (or one
    expired: the container ran more than twice the maximum since the last
    restart) the restart is at once and the entry starts at 10 s;
    otherwise the restart waits until ``finished_at`` plus the current
    backoff, and the backoff doubles (capped at 300 s). So a container
    that keeps exiting quickly restarts after 0, 10, 20, 40, ... 300 s."""
    if entry is not None and finished_at - entry[1] > 2 * MAX_BACKOFF_S:
        entry = None
    if entry is None:
        return now, (INITIAL_BACKOFF_S, now)
    due = max(now, finished_at + entry[0])
    if due - entry[1] > 2 * MAX_BACKOFF_S:  # Next() at the restart finds the entry expired
        return due, (INITIAL_BACKOFF_S, due)
    return due, (min(entry[0] * 2, MAX_BACKOFF_S), due)
