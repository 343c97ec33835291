"""The Borgmaster leader's scheduling decisions, pure.

The leader's shell (``actors.archs.borg.borgmaster``) keeps the timers and
the log; this module decides, on the leader's copy of the replicated cell
state (``BorgStateMachine``), and takes every time as an argument:

* which queued job a scheduling path takes next (``BorgScheduler.next_job``):
  the pending queue's order (priority, then users in turn), skipping jobs an
  attempt is already working on and jobs whose last attempt placed nothing
  less than ``retry_backoff`` ago, so a job that fits nowhere does not block
  every job behind it (Borg scans the whole pending queue each pass);
* how long an attempt thinks (``think_time``);
* where the job's pending tasks go (``decide``): feasibility and scoring
  (``placement.place_job``), then preemption (``preemption.choose_preemption``)
  for the tasks that did not fit;
* what the leader remembers of an attempt once its decision was applied
  (``settle``), and that a new leadership starts with nothing remembered
  (``reset``).

The decision is only a proposal: the replicated state machine validates it
again when the ``place`` command applies (a decision made on a state that
changed meanwhile is refused there, not here).
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from schedlab.schedulers.placement.device_claims import DeviceView, place_counted
from schedlab.schedulers.archs.borg.cell_machine import BorgStateMachine
from schedlab.schedulers.archs.borg.placement import PlacementParams, place_job
from schedlab.schedulers.archs.borg.preemption import choose_preemption
from schedlab.schedulers.archs.borg.priority import band
from schedlab.schedulers.faults.liveness import LivenessSpec

BATCH_BANDS = ("batch", "best_effort")
PATHS = ("all", "service", "batch")  # "all": the single path; the other two: multi path

Placements = list[list[int]]  # [[task, machine]]
Victims = list[list[int]]  # [[job, task]]


@dataclass(frozen=True)
class BorgParams:
    t_job: float
    t_task: float
    batch_t_job: float
    batch_t_task: float
    placement: PlacementParams
    spread_service: bool
    preemption: bool
    multi_path: bool
    poll_interval: float  # emulated s between liveness checks
    missed_polls: int
    hosts: int
    racks: np.ndarray
    eligible: dict[str, np.ndarray]  # job class -> machines satisfying its constraints
    liveness: LivenessSpec = LivenessSpec()
    retry_backoff: float = 10.0  # emulated s before a job that placed nothing is tried again
    idle_wall: float = 0.02
    devices: DeviceView | None = None  # [borg] device_scoring: how a task asking for devices is placed


def paths(params: BorgParams) -> list[str]:
    """The scheduling loops the leader runs: one for every job, or (multi
    path) one for service jobs and one for batch and best-effort jobs."""
    return ["service", "batch"] if params.multi_path else ["all"]


def on_path(path: str, priority: int) -> bool:
    """Whether a job of this priority is scheduled by ``path``."""
    return path == "all" or (path == "batch") == (band(priority) in BATCH_BANDS)


def hosts_down(cell: BorgStateMachine, hosts: int) -> set[int]:
    """Hosts the replicated state already marks down (every machine down):
    the watch does not judge them again."""
    return {h for h in range(hosts) if not cell.up[h * cell.k: (h + 1) * cell.k].any()}


@dataclass
class BorgScheduler:
    """The leader's scheduler: its parameters, its randomness and what it
    remembers between attempts (soft state, gone with leadership).

    ``inflight``: jobs an attempt is working on (thinking, or writing its
    decision), so another path, or the same path's next pass, skips them.
    ``fruitless``: job -> when an attempt last placed nothing."""

    params: BorgParams
    rng: np.random.Generator
    inflight: set[int] = field(default_factory=set)
    fruitless: dict[int, float] = field(default_factory=dict)

    def reset(self) -> None:
        """A new leadership: nothing is in flight, nothing backs off."""
        self.inflight.clear()
        self.fruitless.clear()

    def next_job(self, cell: BorgStateMachine, path: str, now: float) -> int | None:
        """The first queued job for ``path`` that is neither in flight nor
        backing off (its last attempt placed nothing less than
        ``retry_backoff`` before ``now``); None if there is none."""
        for job_id in cell.queue.order():
            if job_id in self.inflight or now - self.fruitless.get(job_id, -1e18) < self.params.retry_backoff:
                continue
            if on_path(path, cell.jobs[job_id]["priority"]):
                return job_id
        return None

    def begin(self, job_id: int) -> None:
        """An attempt takes the job (until ``end``)."""
        self.inflight.add(job_id)

    def end(self, job_id: int) -> None:
        """The attempt on the job is over, whatever became of it."""
        self.inflight.discard(job_id)

    def think_time(self, path: str, job: dict) -> float:
        """``t_job + t_task x pending tasks``, with the batch path's own times."""
        p = self.params
        batch = path == "batch"
        return (p.batch_t_job if batch else p.t_job) + (p.batch_t_task if batch else p.t_task) * len(job["pending"])

    def decide(self, cell: BorgStateMachine, job: dict) -> tuple[Placements, Victims]:
        """Placements ``[[task, machine]]`` for the job's pending tasks (one
        equivalence class) and the victims ``[[job, task]]`` to preempt for
        those that did not fit. Only up machines eligible for the job's class
        are used, and no machine is filled beyond its free resources plus
        what its victims free. ``cell`` is read, never changed."""
        p = self.params
        req = np.asarray(job["request"], dtype=np.float64)
        pending = list(job["pending"])
        eligible = cell.up & p.eligible.get(job["job_class"], np.ones_like(cell.up))
        free = np.where(cell.up[:, None], cell.free, 0.0)
        params = p.placement
        if p.spread_service and job["kind"] == "service":
            params = PlacementParams(params.policy, params.sample, True)
        if p.devices is not None and p.devices.asks(req):
            # A device scoring mode: the device policy over each eligible machine's free whole devices.
            room = np.where(eligible[:, None], free, 0.0)
            machines = place_counted(p.devices, room, req, len(pending), self.rng)
            free[eligible] = room[eligible]
        else:
            machines = place_job(free, cell.capacity, req, len(pending), params, self.rng, eligible, p.racks)
        placements = [[t, int(m)] for t, m in zip(pending, machines.tolist()) if m >= 0]
        victims: Victims = []
        unplaced = [t for t, m in zip(pending, machines.tolist()) if m < 0]
        if unplaced and p.preemption:
            running = cell.running_by_machine()
            for t in unplaced:
                choice = choose_preemption(free, req, job["priority"], running, eligible)
                if choice is None:
                    break
                m, vs = choice
                for key, _prio, vreq in vs:
                    free[m] += vreq
                    victims.append([key[0], key[1]])
                gone = {v[0] for v in vs}
                running[m] = [v for v in running[m] if v[0] not in gone]
                free[m] -= req
                placements.append([t, m])
        return placements, victims

    def settle(self, job_id: int, accepted: list[bool], status: str, now: float) -> None:
        """Remember the applied decision's outcome: a job still waiting that
        got nothing backs off from ``now``; any other outcome clears that."""
        if int(sum(accepted)) == 0 and status == "waiting":
            self.fruitless[job_id] = now
        else:
            self.fruitless.pop(job_id, None)
