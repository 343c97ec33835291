"""Coscheduling: gang scheduling by PodGroup, as the scheduler-plugins
project's plugin of that name does it (kubernetes-sigs/scheduler-plugins,
pkg/coscheduling), through the framework's Permit and waiting pods.

A pod of a gang job belongs to its job's PodGroup, whose minMember is the
job's task count (``Pod.min_member``). At Permit a member waits, assumed on
its node (its room held), until minMember members of the group are placed
(assumed or bound): the one that completes the group allows the waiting
ones, and all bind. A member waits at most ``Pod.gang_timeout`` emulated
seconds (the plugin's permitWaitingTimeSeconds); when one is rejected, by
its timeout or otherwise, Unreserve rejects every waiting member of its
group, so a partial gang lets go of all it held and is tried again (its
pods back off in the queue). PostFilter does the same as soon as a member
finds no node (and preemption found none either): the group cannot be
placed now, so what its waiting members hold goes back at once, which is
what keeps two partial gangs from holding the room each other needs until
both time out. A group some of whose members are already
bound has started: a member created again (its task was lost) joins it
without waiting.

Not modelled: the plugin's QueueSort (members sorted together), its
PreFilter check that minMember pods exist, PodGroup status and
scheduleTimeoutSeconds, minResources.
"""
from __future__ import annotations

from ..cluster_view import ClusterView
from ..diagnosis import Diagnosis
from ..extension_points import CycleState, PostFilterResult
from ..objects import Pod
from ..status import SUCCESS, Code, Status

NAME = "Coscheduling"


class Coscheduling:
    name = NAME

    def reserve(self, state: CycleState, pod: Pod, view: ClusterView, node: int) -> Status:
        return SUCCESS

    def unreserve(self, state: CycleState, pod: Pod, view: ClusterView, node: int) -> None:
        self._reject_group(state, pod)

    def post_filter(self, state: CycleState, pod: Pod, view: ClusterView, diagnosis: Diagnosis) -> PostFilterResult:
        if pod.min_member and view.of_job.get(pod.key[0], 0) < pod.min_member:
            self._reject_group(state, pod)
        return PostFilterResult(Status(Code.UNSCHEDULABLE, ("pod group cannot be placed now",)))

    @staticmethod
    def _reject_group(state: CycleState, pod: Pod) -> None:
        """Every other member of ``pod``'s group waiting at Permit is rejected (let go of its node)."""
        if not pod.min_member or state.waiting_pods is None:
            return
        for wp in state.waiting_pods:
            if wp.key[0] == pod.key[0] and wp.key != pod.key:
                wp.reject(NAME, f"a member of pod group {pod.key[0]} was rejected")

    def permit(self, state: CycleState, pod: Pod, view: ClusterView, node: int) -> tuple[Status, float]:
        if not pod.min_member:
            return SUCCESS, 0.0
        job = pod.key[0]
        waiting = [wp for wp in state.waiting_pods if wp.key[0] == job] if state.waiting_pods is not None else []
        placed = view.of_job.get(job, 0)  # this pod (assumed), the waiting members, the bound ones
        started = placed - len(waiting) - 1 > 0
        if started or placed >= pod.min_member:
            for wp in waiting:
                wp.allow(NAME)
            return SUCCESS, 0.0
        return Status(Code.WAIT, (f"waiting for {pod.min_member - placed} more of pod group {job}",)), pod.gang_timeout
