"""How big a scenario can be and still be built: checked from its numbers.

A scenario names sizes (machines, machines per host actor, scheduler counts,
arrival rates, tasks per job) that the run turns into arrays, Python objects
and Ray actors before its first actor starts. A typo there (``count =
100000000``, ``mean = 1e12``) would hang the command for minutes or end
in numpy's out-of-memory error. ``check_sizes`` refuses such a scenario from
its parameters alone, never by trying: every bound below is arithmetic on
the parsed numbers, so it costs microseconds whatever the sizes.

The limits and why (measured on the 2-core, 24 GiB development machine):

* actors: each is a worker process of ~55 MB that takes ~0.3 s to start
  (on the sim engine an object in one process: only the machines bound
  below limits them there).
  Locally (embedded Ray) the run's actors must fit in 80% of this machine's
  memory (the rest is Ray's own processes, the driver, and headroom below
  Ray's memory monitor, which kills workers at 95%): 350 on this 24 GiB
  machine. On a cluster (``--address``) the memory is spread over nodes
  schedlab cannot see before it joins, so the bound is Ray's own envelope:
  its release benchmark ``many_actors`` starts 10,000 actors on one
  cluster, and the GCS is not tested far beyond. Host actors dominate the
  count; raising ``machines_per_actor`` (machines per host actor) lowers it.
* machines: 100,000. Every machine is a row in the cell's arrays, copied into
  the cell state and every scheduler, and both the prefill and every
  placement scan every row per job; the prefill alone is quadratic in the
  cell (quickstart's shapes at 30% prefill: 1 s at 10,000 machines, 14 s at
  30,000, 3 minutes at 100,000). It is the same on a cluster: the cell is
  built and prefilled in the driver and held whole by one cell-state actor.
* jobs: 1,000,000 expected arrivals per run (~30 us and ~0.6 KB each to
  generate in the driver, before any actor starts: 30 s, 0.6 GB).
* tasks: 10,000,000 expected per run (each a duration in the driver's job
  list, in the submitter's and in a scheduler's copy; at the ~4,000
  placements per wall second the bench measures, 40 minutes of placing), and
  100,000 per job: a job's tasks travel in one message and its placement
  loops over them, and a draw above the cap is clipped to it
  (``schedulers.workload``), so a heavy tail cannot build one giant job.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from schedlab.schedulers.model.cluster import host_count
from schedlab.schedulers.scenario.toml_table import Table
from schedlab.schedulers.model.workload import MAX_TASKS_PER_JOB, JobClass

if TYPE_CHECKING:
    from schedlab.schedulers.scenario.parse import Scenario

ACTOR_BYTES = 55 << 20  # one idle actor's worker process here (docs/how-to/ray-cluster.md)
LOCAL_MEMORY_SHARE = 0.8
RAY_ACTORS = 10_000  # Ray's release benchmark many_actors: 10,000 actors on one cluster
MAX_MACHINES = 100_000
MAX_JOBS = 1_000_000
MAX_TASKS = 10_000_000
CORE_ACTORS = 3  # metrics, chaos inbox, submitter: in every run


@dataclass(frozen=True)
class Limits:
    """The most actors a run may start, and where that bound comes from
    (said in the error, so the user knows what would raise it)."""

    actors: int
    why: str


CLUSTER = Limits(RAY_ACTORS, "on a Ray cluster (Ray's own release benchmark starts 10,000 actors)")
# The sim engine's actors are objects in one process, not Ray workers: the
# machines bound (one host actor per machine at most) is what limits them.
SIM = Limits(MAX_MACHINES + 10_000, "on the sim engine (its actors are objects in one process)")


def memory_limits(ram_bytes: int) -> Limits:
    """Actors that fit in ``ram_bytes`` of memory at ~55 MB each, capped by
    Ray's envelope: the limits of the embedded Ray on a machine with that
    much memory. The caller reads the memory (``actors.engines.limits``):
    this module never looks at the machine."""
    n = min(RAY_ACTORS, int(LOCAL_MEMORY_SHARE * ram_bytes / ACTOR_BYTES))
    return Limits(n, f"on this machine ({ram_bytes / 2**30:.0f} GiB at ~55 MB per actor; "
                     f"a Ray cluster with --address allows {RAY_ACTORS:,})")


def check_sizes(top: Table, sc: Scenario, limits: Limits) -> None:
    """ScenarioError (via ``top.fail``: one line, file, key, problem and the
    limit) when ``sc`` is larger than can be built; else nothing. Pure
    arithmetic on the parsed parameters. A sim run is held to ``SIM``
    whatever ``limits`` says (Ray's bounds are about Ray's workers)."""
    _check_cell(top, sc, SIM if sc.engine == "sim" else limits)
    _check_workload(top, sc)


def count(x: float) -> str:
    """A count for an error message: grouped digits, or 3 significant ones when huge."""
    return f"{x:,.0f}" if x < 1e15 else f"{x:.3g}"


def check_actors(sc: Scenario, limits: Limits) -> None:
    """The actor bound alone, for a scenario whose engine changed after it
    was parsed (``--engine``): ScenarioError naming its file."""
    _check_cell(Table({}, "", sc.source), sc, SIM if sc.engine == "sim" else limits)


def _check_cell(top: Table, sc: Scenario, limits: Limits) -> None:
    machines, k = sc.cell.machines, sc.cell.machines_per_actor
    if machines > MAX_MACHINES:
        top.fail("cell.machine_classes", f"{count(machines)} machines in all; a cell can have at most {count(MAX_MACHINES)} "
                                         "(the prefill and every placement scan every machine per job)")
    hosts = host_count(machines, k)
    others, key = _other_actors(sc)
    if others > limits.actors:
        top.fail(key, f"{count(others)} actors besides the machine hosts; at most {count(limits.actors)} actors {limits.why}")
    if hosts + others > limits.actors:
        need = -(-machines // max(1, limits.actors - others))
        top.fail("cell.machines_per_actor",
                 f"{count(machines)} machines at {k} per host actor are {count(hosts)} host actors (+{others} others); "
                 f"at most {count(limits.actors)} actors {limits.why}: raise machines_per_actor to at least {count(need)}")


def _other_actors(sc: Scenario) -> tuple[int, str]:
    """Actors besides the machine hosts, and the scenario key that makes
    most of them (the architecture's own, from its ArchSpec)."""
    from schedlab.schedulers.arch import spec_of

    replicas = sc.coordinator.replicas if sc.coordinator.replicas > 1 else 0
    made = [("coordinator.replicas", replicas), *spec_of(sc.architecture).actors(sc)]
    return CORE_ACTORS + sum(n for _, n in made), max(made, key=lambda kn: kn[1])[0]


def expected_jobs(jc: JobClass, duration: float) -> float:
    """Mean arrivals of ``jc`` in [0, duration): the first at ``start`` (or
    one interarrival in), then one per interarrival."""
    ia = jc.interarrival.expected()
    first = jc.start if jc.start is not None else ia
    return 0.0 if first >= duration else (duration - first) / ia + 1


def tasks_per_job(jc: JobClass) -> float:
    """Mean tasks of one of ``jc``'s jobs (a draw is rounded up, at least 1)."""
    return max(1.0, jc.tasks.expected())


def _check_workload(top: Table, sc: Scenario) -> None:
    from schedlab.schedulers.arch import spec_of

    classes = sc.workload.classes
    for i, jc in enumerate(classes):
        big = jc.tasks.maximum() if jc.tasks.maximum() < float("inf") else jc.tasks.expected()
        if big > MAX_TASKS_PER_JOB:
            what = "up to" if jc.tasks.maximum() < float("inf") else f"{jc.tasks.kind} with a mean of"
            top.fail(f"workload.classes[{i}].tasks", f"{what} {count(big)} tasks per job; a job can have at most "
                                                     f"{count(MAX_TASKS_PER_JOB)} tasks")
    jobs = [expected_jobs(jc, sc.duration) for jc in classes]
    if sum(jobs) > MAX_JOBS:
        i = max(range(len(classes)), key=lambda j: jobs[j])
        top.fail(f"workload.classes[{i}].interarrival",
                 f"~{count(sum(jobs))} jobs in the run ({count(jobs[i])} of them from duration {sc.duration:g} / interarrival "
                 f"{classes[i].interarrival.expected():g}); a run can generate at most {count(MAX_JOBS)} jobs")
    tasks = [n * tasks_per_job(jc) for n, jc in zip(jobs, classes)]
    if sum(tasks) > MAX_TASKS:
        i = max(range(len(classes)), key=lambda j: tasks[j])
        top.fail(f"workload.classes[{i}].tasks",
                 f"~{count(sum(tasks))} tasks in the run ({count(jobs[i])} jobs of ~{count(tasks_per_job(classes[i]))} "
                 f"tasks from this class); a run can have at most {count(MAX_TASKS)} tasks")
    extra = spec_of(sc.architecture).check_sizes
    if extra is not None:
        extra(top, sc, dict(zip((jc.name for jc in classes), tasks)))
