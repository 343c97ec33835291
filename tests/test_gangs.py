"""Gang jobs: the job class keys and their refusals, and each mechanism
that starts a gang whole, pure: Omega's scheduler claims all or nothing,
a Mesos framework gathers and gives back after the timeout, Kubernetes'
Coscheduling plugin holds members at Permit and lets the group go. Every
architecture running a gang class is tests/conformance/test_gangs.py."""
from __future__ import annotations

import copy
from pathlib import Path

import numpy as np

from schedlab.actors.run import run_scenario
from schedlab.schedulers.archs.kubernetes.api_machine import KubeAPIMachine
from schedlab.schedulers.archs.kubernetes.objects import HOSTNAME, Node, Pod, labels
from schedlab.schedulers.archs.kubernetes.registry import default_profile
from schedlab.schedulers.archs.kubernetes.scheduler_core import KubeSchedulerCore
from schedlab.schedulers.archs.mesos.framework import FrameworkCore, FrameworkParams
from schedlab.schedulers.archs.omega.scheduler import OmegaSchedulerCore, SchedulerParams
from schedlab.schedulers.model.jobs import Job, JobKind
from schedlab.schedulers.placement.policies import get_policy
from schedlab.schedulers.scenario.parse import parse_scenario
from schedlab.schedulers.shared_state.cell import LocalCopy, SharedCell
from tests.conformance.scenarios import gang_data
from tests.conftest import scenario_error as _err


def _job(tasks: int, gang: float | None, jid: int = 1) -> Job:
    return Job(jid, "gang", JobKind.BATCH, 0, 0.0, (3.0, 2.0), (40.0,) * tasks, gang_timeout=gang)


# ------------------------------------------------------------------ scenario keys

def test_gang_keys_are_read_and_travel_with_the_job() -> None:
    sc = parse_scenario(gang_data("omega") | {"engine": "sim"}, "ok.toml")
    gang = sc.workload.classes[-1]
    assert gang.gang_timeout == 20.0 and sc.workload.classes[0].gang_timeout is None
    job = _job(3, 20.0)
    assert job.gang and Job.from_wire(job.to_wire()) == job and not _job(3, None).gang


def test_a_gang_timeout_without_a_gang_and_a_gang_where_none_can_run_are_refused() -> None:
    data = gang_data("omega")
    data["workload"]["classes"][-1]["gang"] = False
    assert _err(data) == "bad.toml: workload.classes[2].gang_timeout: is for a gang: set gang = true"
    msg = _err(gang_data("yarn"))
    assert msg.startswith("bad.toml: workload.classes[2].gang: architecture 'yarn' cannot start a job's tasks together: "
                          "YARN has no gang scheduling") and "gangs run on: omega, mesos, kubernetes, slurm" in msg


# ------------------------------------------------------------------ Omega

def _omega(free_slots: int) -> OmegaSchedulerCore:
    cap = np.tile([3.0, 8.0], (4, 1))
    cap[free_slots:] = 0.0
    copy_ = LocalCopy(SharedCell(np.tile([3.0, 8.0], (4, 1)), cap).full())
    return OmegaSchedulerCore(SchedulerParams("s", 0.1, 0.01, get_policy("first_fit")), copy_, np.random.default_rng(0))


def test_omega_claims_a_gang_whole_or_not_at_all() -> None:
    core = _omega(free_slots=2)
    core.submit([_job(3, 20.0), _job(3, None, jid=2)])
    gang, plain = core.next_job(0.0), core.next_job(0.0)
    assert gang is not None and plain is not None
    assert len(core.plan(gang).claims) == 0  # 2 of 3 fit: nothing claimed, nothing held
    assert len(core.plan(plain).claims) == 2  # not a gang: what fits is claimed
    whole = _omega(free_slots=3)
    whole.submit([_job(3, 20.0)])
    jp = whole.next_job(0.0)
    assert jp is not None and len(whole.plan(jp).claims) == 3


# ------------------------------------------------------------------ Mesos

def test_a_mesos_gang_gathers_in_any_framework_and_gives_back_after_its_timeout() -> None:
    fc = FrameworkCore(FrameworkParams("fw", 0.1, 0.01, get_policy("first_fit")), 4, np.random.default_rng(0))
    fc.submit([_job(3, 20.0)])
    jp = fc.jobs[1]
    assert fc.rigid(jp)  # an elastic framework gathers a gang as a rigid one does
    machines, free = np.arange(2, dtype=np.int64), np.tile([4.0, 8.0], (2, 1))
    fc.begin(jp, 0.0)
    d = fc.place(jp, machines, free, 0.0)
    assert d.tasks.size == 0 and d.hold_rows.size == 2  # holds what it can, launches nothing
    assert fc.settle(jp, d, np.zeros(0, bool), np.ones(2, bool), machines, 5.0) == "waiting"
    assert fc.gang(jp) is None and jp.held_since == 5.0
    assert not fc.timed_out(jp, 24.9) and fc.timed_out(jp, 25.0)
    back = fc.give_back(jp)
    assert len(back) == 2 and not jp.held and jp.held_since is None and not fc.timed_out(jp, 100.0)


# ------------------------------------------------------------------ Kubernetes

N = 4


def _pod(value: dict) -> Pod:
    return Pod((value["j"], value["t"]), tuple(value["req"]), priority=value["prio"], created=value["created"],
               scheduler_name="a", min_member=int(value["n"]) if value.get("g") else 0, gang_timeout=float(value.get("g", 0.0)))


def _kube() -> tuple[KubeAPIMachine, KubeSchedulerCore]:
    m = KubeAPIMachine(np.array([[4.0, 16.0]] * N), machines_per_host=1)
    nodes = [Node(i, f"node-{i}", (4.0, 16.0), labels({HOSTNAME: f"node-{i}"})) for i in range(N)]
    return m, KubeSchedulerCore(default_profile("a", enable=["Coscheduling"]), nodes, _pod, seed=1)


def _create(m: KubeAPIMachine, core: KubeSchedulerCore, job: int, tasks: range, n: int, cpu: float, now: float) -> None:
    m.apply(("create", [[job, t, "a", [cpu, 1.0], 100.0, 0, now, n, "job", {"g": 30.0}] for t in tasks]))
    w = m.query(("watch", ["pods", "nodes"], 0, None))
    core.watched(w["events"], now)


def _cycles(core: KubeSchedulerCore, now: float) -> list:
    return list(iter(lambda: core.next_cycle(now), None))


def test_coscheduling_holds_members_at_permit_until_the_group_is_placed() -> None:
    m, core = _kube()
    _create(m, core, 1, range(3), 3, 1.0, 0.0)
    cycles = _cycles(core, 1.0)
    assert [c.waiting for c in cycles[:2]] == [True, True]
    assert sorted(c.pod.key for c in cycles if c.node is not None) == [(1, 0), (1, 1), (1, 2)]
    assert not core.waiting and not core.gang_released


def test_a_partial_group_lets_go_at_its_timeout() -> None:
    m, core = _kube()
    _create(m, core, 1, range(2), 3, 1.0, 0.0)  # two of its three members exist
    assert all(c.waiting for c in _cycles(core, 1.0))
    assert len(core.waiting) == 2 and core.view.of_job[1] == 2  # their room is held
    _cycles(core, 20.0)
    assert len(core.waiting) == 2
    _cycles(core, 32.0)  # 30 s after they began waiting
    assert not core.waiting and 1 not in core.view.of_job and core.gang_released == {1: 2}


def test_a_member_that_fits_nowhere_lets_its_group_go_at_once() -> None:
    m, core = _kube()
    _create(m, core, 1, range(5), 5, 4.0, 0.0)  # five whole nodes asked of four
    _cycles(core, 1.0)
    _cycles(core, 1.5)  # the next settle takes out the members PostFilter rejected
    assert not core.waiting and 1 not in core.view.of_job
    assert sum(core.gang_released.values()) == 4  # released long before the 30 s timeout


# ------------------------------------------------------------------ in a run

def test_competing_partial_gangs_show_in_the_metrics_and_do_not_hang_the_run(tmp_path: Path) -> None:
    """More gangs than the cell holds, each needing most of it: partial gangs
    compete for the room; the run ends on time, and the summary says how
    many gangs waited to the end and how often parts were let go."""
    data = copy.deepcopy(gang_data("kubernetes")) | {"engine": "sim", "duration": 300.0}
    data["workload"]["classes"] = [data["workload"]["classes"][-1] | {"tasks": 10.0, "interarrival": 5.0}]
    data["kubernetes"] = {"workloads": [{"classes": ["gang"], "kind": "job"}]}
    data["workload"]["prefill_utilization"] = 0.0
    summary = run_scenario(parse_scenario(data, "<gangs>"), tmp_path)
    gangs = summary["gangs"]
    assert summary["emulated_seconds"] == 300.0 and not any(summary["invariants"].values())
    assert gangs["releases"] > 0 and gangs["released_jobs"] > 1 and gangs["pending"] > 0
    assert gangs["scheduled"] + gangs["pending"] == gangs["jobs"]
