"""The pool as a scenario describes it, pure: slot ads from machine
classes, job ads from job classes, the desktop owners' comings and goings,
the slots a machine's standing (prefill) tasks hold, and a restarted
schedd's rebuilt queue. No Ray, no clock, no I/O; randomness only through
``rng_for`` (one stream per machine, from the seed).

Units: ``Cpus`` / ``RequestCpus`` are the scenario's cpus; ``Memory`` /
``RequestMemory`` are MB (the scenario's mem x 1024), as HTCondor counts.
Slots are static (HTCondor's default: NUM_SLOTS equal slots per machine,
each ``Cpus = cpu / slots``, ``Memory = mem / slots``); partitionable slots
are not modelled.
"""
from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from schedlab.schedulers.archs.htcondor.claims import Schedd, Shadow, Claim
from schedlab.schedulers.archs.htcondor.classad import quote
from schedlab.schedulers.model.resources import DEFAULT
from schedlab.schedulers.model.seeding import rng_for

MB = 1024.0  # MB per scenario mem unit (GiB)
Ad = dict[str, object]


@dataclass(frozen=True)
class MachineAds:
    """``[htcondor.machines.<class>]``: what a machine class's slots advertise."""

    slots: int = 0  # 0: one per whole cpu (at least 1)
    arch: str = "X86_64"
    opsys: str = "LINUX"
    attrs: tuple[tuple[str, object], ...] = ()  # extra attributes: name -> ClassAd expression text or number
    requirements: str | None = None  # START
    rank: str | None = None
    owner_present: float = 0.0  # mean s a desktop owner stays (0: a dedicated machine, no owner)
    owner_away: float = 0.0  # mean s the owner is away (the machine is in the pool)


@dataclass(frozen=True)
class JobAds:
    """``[htcondor.jobs.<class>]``: the class's user, schedd and expressions."""

    user: str
    schedd: int
    requirements: str | None = None
    rank: str | None = None
    attrs: tuple[tuple[str, object], ...] = ()


def slot_count(cpu: float, ads: MachineAds) -> int:
    return ads.slots if ads.slots > 0 else max(1, int(math.floor(cpu + 1e-9)))


def slot_name(machine: int, slot: int) -> str:
    return f"slot{slot + 1}@m{machine}"


def machine_of(slot: str) -> int:
    return int(slot.rsplit("@m", 1)[1])


def slot_ad(machine: int, slot: int, cls_name: str, capacity: Iterable[float], slots: int, ads: MachineAds,
            labels: Iterable[str] = (), rack: int = 0, resources: Sequence[str] = DEFAULT) -> Ad:
    """Slot ``slot`` of ``slots`` static slots on a machine: cpu and memory
    split evenly, and each further resource as a custom machine resource
    (MACHINE_RESOURCE_<name>: the attribute ``<name>`` and ``Total<name>``)
    split as HTCondor splits countable ones, whole units to the first slots
    (4 GPUs over 8 slots: slots 1-4 have one each); an amount that is not
    whole is split evenly."""
    cap = list(capacity)
    cpu, mem = cap[:2]
    ad: Ad = {
        "Name": quote(slot_name(machine, slot)), "Machine": quote(f"m{machine}"), "SlotID": slot + 1,
        "Cpus": cpu / slots, "Memory": mem * MB / slots, "TotalCpus": cpu, "TotalMemory": mem * MB,
        "Arch": quote(ads.arch), "OpSys": quote(ads.opsys), "MachineClass": quote(cls_name), "Rack": rack,
        "Labels": quote(",".join(sorted(labels))),
    }
    for name, total in zip(resources[2:], cap[2:]):
        ad[name] = _share(float(total), slots, slot)
        ad[f"Total{name}"] = float(total)
    return _with_expressions(ad, ads)


def _share(total: float, slots: int, slot: int) -> float:
    """One static slot's part of a further resource (see ``slot_ad``)."""
    if total == int(total):
        whole, extra = divmod(int(total), slots)
        return float(whole + (1 if slot < extra else 0))
    return total / slots


def _with_expressions(ad: Ad, ads: MachineAds | JobAds) -> Ad:
    """The ad with its class's extra attributes, Requirements and Rank."""
    ad.update(ads.attrs)
    if ads.requirements is not None:
        ad["Requirements"] = ads.requirements
    if ads.rank is not None:
        ad["Rank"] = ads.rank
    return ad


def job_ad(job_id: int, task: int, job_class: str, request: Iterable[float], ads: JobAds,
           resources: Sequence[str] = DEFAULT) -> Ad:
    """A task's job ad; a further resource it asks for (> 0) is its
    ``Request<name>``, as condor_submit's request_<name> writes it."""
    req = list(request)
    cpu, mem = req[:2]
    ad: Ad = {"ClusterId": job_id, "ProcId": task, "Owner": quote(ads.user), "JobClass": quote(job_class),
              "RequestCpus": cpu, "RequestMemory": mem * MB}
    for name, amount in zip(resources[2:], req[2:]):
        if amount > 0:
            ad[f"Request{name}"] = float(amount)
    return _with_expressions(ad, ads)


def job_key(job_id: int, task: int) -> str:
    """HTCondor's cluster.proc: a workload job is a cluster, each task a proc."""
    return f"{job_id}.{task}"


def split_key(key: str) -> tuple[int, int]:
    j, t = key.split(".")
    return int(j), int(t)


# -- desktop owners ---------------------------------------------------------------


@dataclass
class OwnerSchedule:
    """A desktop owner's presence: alternating exponential periods present
    (mean ``present``) and away (mean ``away``), starting in the stationary
    state, drawn from the machine's own stream: the same seed gives the same
    comings and goings on every engine."""

    present_mean: float
    away_mean: float
    rng: np.random.Generator
    present: bool = False
    next_toggle: float = math.inf

    @classmethod
    def for_machine(cls, seed: int, machine: int, present_mean: float, away_mean: float) -> OwnerSchedule | None:
        if present_mean <= 0 or away_mean <= 0:
            return None
        rng = rng_for(seed, f"condor-owner-{machine}")
        s = cls(present_mean, away_mean, rng)
        s.present = bool(rng.random() < present_mean / (present_mean + away_mean))
        s.next_toggle = float(rng.exponential(present_mean if s.present else away_mean))
        return s

    def due(self, now: float) -> list[tuple[float, bool]]:
        """The toggles up to ``now``: (when, present after it), in order."""
        out = []
        while self.next_toggle <= now:
            at = self.next_toggle
            self.present = not self.present
            out.append((at, self.present))
            self.next_toggle = at + float(self.rng.exponential(self.present_mean if self.present else self.away_mean))
        return out


# -- standing tasks ------------------------------------------------------------------


def slot_amounts(capacity: Sequence[float] | np.ndarray, slots: int) -> np.ndarray:
    """Each of a machine's static slots' resources [slots, R]: cpu and
    memory split evenly, a further resource as ``slot_ad`` splits it
    (whole units to the first slots when it is countable)."""
    cap = np.asarray(capacity, dtype=np.float64)
    out = np.tile(cap / slots, (slots, 1))
    for r in range(2, cap.size):
        out[:, r] = [_share(float(cap[r]), slots, i) for i in range(slots)]
    return out


def reserved_slots(held: np.ndarray, capacity: np.ndarray, slots: int) -> list[int]:
    """Which of a machine's slots its standing (non-Condor) tasks take out
    of the pool: enough that together they cover what those tasks hold in
    every resource, so the slots left plus the standing tasks never exceed
    the machine. The last slots first, as many as cpu and memory need;
    then, for a further resource still short (slots are not all equal when
    a countable one is split in whole units: 4 GPUs over 8 slots sit on
    the first four), the last of the slots that have some of it."""
    want = np.asarray(held, dtype=np.float64)
    if not np.any(want > 1e-9):
        return []
    per = slot_amounts(capacity, slots)
    taken: list[int] = []
    got = np.zeros_like(want)
    for i in range(slots - 1, -1, -1):
        if np.all(got[:2] + 1e-9 >= want[:2]):
            break
        taken.append(i)
        got += per[i]
    for r in range(2, want.size):
        for i in range(slots - 1, -1, -1):
            if got[r] + 1e-9 >= want[r]:
                break
            if i not in taken and per[i, r] > 0:
                taken.append(i)
                got += per[i]
    return sorted(taken)


# -- a restarted schedd ---------------------------------------------------------------


@dataclass
class Running:
    """A job a startd runs (or has suspended) for a schedd, as it reports it."""

    key: str
    claim_id: str
    machine: str  # the slot's name
    user: str
    machine_ad: Mapping[str, object]
    started: float


@dataclass
class Rebuilt:
    running: int = 0
    finished: int = 0
    idle: int = 0
    vacated: list[str] = field(default_factory=list)


def rebuild(schedd: Schedd, jobs: Iterable[tuple[str, str, Ad]], running: Iterable[Running], finished: set[str],
            now: float) -> Rebuilt:
    """A restarted schedd's queue (HTCondor keeps it in job_queue.log; here
    the submitter's copy of every job routed to it) and its claims, from the
    startds' reports (the shadows reconnect to jobs still running): a job a
    startd reports finished is done, one it runs gets its claim and shadow
    back, every other one is idle. ``jobs``: (key, user, ad) in queue order."""
    out = Rebuilt()
    live = {r.key: r for r in running}
    for key, user, ad in jobs:
        if key in schedd.jobs:
            continue
        schedd.submit(key, user, ad, now)
        job = schedd.jobs[key]
        if key in finished:
            schedd._take(job, "done")
            out.finished += 1
        elif key in live:
            r = live[key]
            schedd._take(job, "running")
            job.claim_id = r.claim_id
            schedd.claims[r.claim_id] = Claim(r.claim_id, r.machine, r.user, r.machine_ad)
            schedd.shadows[key] = Shadow(key, r.claim_id, r.machine, r.started)
            out.running += 1
        else:
            out.idle += 1
    return out
