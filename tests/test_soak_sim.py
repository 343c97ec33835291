"""The soak on the sim engine (no Ray): every registered architecture, from
``scenarios/soak.toml`` (its section there: the replicated or standby
control plane where it has one), the monkey's faults drawn ahead, one every
~5 emulated seconds across every role, and every invariant holds; the same
seed replays to the byte. ``schedlab soak --engine sim`` runs the 24-hour
version."""
from __future__ import annotations

import dataclasses
import tomllib
from pathlib import Path

import json

import numpy as np
import pytest

from schedlab.schedulers.arch import names, spec_of
from schedlab.actors.analysis.saved_run import check_saved
from schedlab.actors.run import run_scenario
from schedlab.schedulers.faults.plan import FaultSpec, Monkey, monkey_plan
from schedlab.schedulers.scenario.parse import parse_comparison, roster_for
from schedlab.experiments.soak import soak_sim
from tests.conftest import assert_invariants_hold

ROOT = Path(__file__).resolve().parent.parent
SOAK = tomllib.loads((ROOT / "scenarios/soak.toml").read_text())


def scenario(arch: str, seconds: float):  # noqa: ANN201 - a Scenario
    (sc,) = parse_comparison({**SOAK, "architectures": [arch], "engine": "sim"}, "soak.toml")
    return dataclasses.replace(sc, duration=seconds)


@pytest.mark.parametrize("arch", names())
def test_sim_soak_keeps_every_invariant(tmp_path: Path, arch: str) -> None:
    sc = scenario(arch, 600.0)
    row = soak_sim(sc, tmp_path / arch, every=5.0, seed=3)
    assert_invariants_hold(row["invariants"], tmp_path / arch, f"sim-soak-{arch}")
    assert row["faults"] >= 70, row  # ~115 drawn; some land on an actor already down and are skipped
    faults = json.loads((tmp_path / arch / "summary.json").read_text())["faults"]
    hit = {f["role"] for f in faults if f.get("source") == "scenario" and not f.get("skipped")}
    assert hit == {r for r, members in roster_for(sc).members.items() if members}  # no role left out
    jobs = row["jobs"]
    assert jobs["submitted"] == jobs["scheduled"] + jobs["pending"] + jobs["abandoned"] + jobs["rejected"] > 0


def test_a_sim_soak_replays_exactly(tmp_path: Path) -> None:
    """What makes a failing seed worth having: the plan and the run again,
    byte for byte."""
    for out in ("a", "b"):
        soak_sim(scenario("mesos", 300.0), tmp_path / out, every=5.0, seed=8)
    for name in ("plan.json", "events.jsonl", "summary.json"):
        assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes(), name


def test_the_monkey_plan_is_seeded_and_inside_its_window() -> None:
    sc = scenario("omega", 600.0)
    roster = roster_for(sc)

    def plan(seed: int) -> list:
        m = Monkey(roster, tuple(r for r in roster.members if roster.members[r]), np.random.default_rng(seed))
        return monkey_plan(m, 10.0, 500.0, every=5.0)

    a = plan(1)
    assert a == plan(1) and a != plan(2)
    assert all(10.0 < f.at < 500.0 for f in a) and [f.at for f in a] == sorted(f.at for f in a)
    assert 60 < len(a) < 140  # ~98 at one every 5 s
    assert len({f.action for f in a}) >= 4  # kills, pauses, slows, partitions, leader kills


def test_a_job_sent_to_a_scheduler_slowed_at_the_end_is_not_lost(tmp_path: Path) -> None:
    """Job 78 goes to scheduler-batch-0 at 270 s, five seconds before the run
    ends; the scheduler is slowed (30 emulated s per message, more than the
    submitter waits for an answer: DELIVERY_WAIT_S x time_scale = 25), the
    driver's stop is not. The scheduler reports its queue at the stop
    while job 78 is still on its way in (as a paused scheduler on Ray may
    take the driver's stop before an earlier batch): the submitter, which
    never heard back, must report it pending."""
    sc = dataclasses.replace(scenario("omega", 275.0), faults=(
        FaultSpec(at=265.0, action="slow", target="scheduler-batch-0", duration=100.0, delay=30.0),))
    summary = run_scenario(sc, tmp_path)
    assert_invariants_hold(summary["invariants"], tmp_path, "sim-slowed-at-the-end")
    pending = [json.loads(line) for line in (tmp_path / "events.jsonl").read_text().splitlines() if '"job_pending"' in line]
    assert [(e["job_id"], e["actor"], e.get("in_flight")) for e in pending] == [(78, "submitter", True)]
    jobs = summary["jobs"]
    assert jobs["submitted"] == jobs["scheduled"] + jobs["pending"] + jobs["abandoned"] + jobs["rejected"]


@pytest.mark.parametrize("arch", names())
def test_launches_held_for_hosts_cut_off_at_the_end_are_not_lost(tmp_path: Path, arch: str) -> None:
    """Every member of every control-plane role (all but the hosts and the
    coordinator group) is cut off from the machine hosts for the run's
    last minute, while they still reach each other: whatever holds
    launches for hosts that cannot pull them holds them at the end. They
    are in flight, not lost: the holder says so when it stops (a Mesos
    sim soak, seed 4, counted 215 such commits lost; the dispatcher and
    HTCondor lost them the same way)."""
    sc = scenario(arch, 300.0)
    roster = roster_for(sc)
    cut = [m for role, members in roster.members.items() if role not in ("machine", "coordinator") for m in members]
    sc = dataclasses.replace(sc, faults=tuple(
        FaultSpec(at=240.0, action="partition", target=m, peer="machine", duration=200.0) for m in cut))
    summary = run_scenario(sc, tmp_path)
    assert_invariants_hold(summary["invariants"], tmp_path, f"sim-cut-off-at-the-end-{arch}")


def test_a_scheduler_restarted_while_cut_off_from_its_node_monitors_places_nothing_twice(tmp_path: Path) -> None:
    """Seed 7's monkey, the first 1,330 emulated s: sparrow-0 is restarted
    at 1,194 s and cut off from every node monitor at once; its recovery
    took the unanswered ones for holding nothing and placed job 98's
    running service tasks again (double_placement 1, and the copy's commit
    untraced). A node monitor that did not answer is asked again."""
    row = soak_sim(scenario("sparrow", 1330.0), tmp_path, every=5.0, seed=7)
    assert_invariants_hold(row["invariants"], tmp_path, "sim-soak-sparrow-seed-7")


def test_a_schedd_restarted_while_a_startd_is_cut_off_runs_nothing_twice(tmp_path: Path) -> None:
    """Seed 17's monkey, the first 3,530 emulated s: schedd-1 is restarted
    (then paused), and recovers while startd-3 is cut off from the schedds;
    it took the silent startd for running nothing of its own and ran job
    13's task again elsewhere (double_placement). Every startd is asked
    again until it answers (actors.common.roll_call)."""
    row = soak_sim(scenario("htcondor", 3530.0), tmp_path, every=5.0, seed=17)
    assert_invariants_hold(row["invariants"], tmp_path, "sim-soak-htcondor-seed-17")


@pytest.mark.parametrize("arch", ["borg", "omega", "kubernetes"])
def test_a_replicated_cell_that_ends_with_no_leader_accounts_for_every_job(tmp_path: Path, arch: str) -> None:
    """Two leaders killed in the run's last 30 s, restarts due after the
    end: no quorum at the end. The surviving replica reports what its
    applied state holds (Borg's jobs; the launches no host pulled, which no
    leader was left to hand out: in flight, not lost), and the submitter
    reports the batch a frontend could not get admitted (the sim soak's
    seed 16 lost 239 Borg jobs this way, seed 17 counted 4 of Omega's
    commits lost). The acked writes the survivor has not applied are on the
    dead majority's disks, and the check reads them there (seed 16 counted
    27 lost commits, Kubernetes' seed 11 one, reading the survivor alone);
    the saved run checks out the same from its files."""
    sc = dataclasses.replace(scenario(arch, 300.0), faults=(
        FaultSpec(at=270.0, action="kill_leader", restart_after=100.0),
        FaultSpec(at=285.0, action="kill_leader", restart_after=100.0)))
    summary = run_scenario(sc, tmp_path)
    assert_invariants_hold(summary["invariants"], tmp_path, f"sim-{arch}-no-leader-at-the-end")
    assert check_saved(tmp_path) == summary["invariants"]
    jobs = summary["jobs"]
    assert jobs["submitted"] == jobs["scheduled"] + jobs["pending"] + jobs["abandoned"] + jobs["rejected"] > 0


FURTHER = "accel"


def further_resource_soak(arch: str, seconds: float):  # noqa: ANN201 - a Scenario
    """The soak with a third resource held as devices, 4 on every machine:
    every batch task asks 1 whole device, or, where the architecture places
    devices, a share of one or one whole: vectors of three (and device
    columns) through every fault and recovery path."""
    data = {**SOAK, "architectures": [arch], "engine": "sim"}
    data["cell"] = {**SOAK["cell"], "resources": ["cpu", "mem", FURTHER], "devices": FURTHER,
                    "machine_classes": [{**mc, FURTHER: 4.0} for mc in SOAK["cell"]["machine_classes"]]}
    ask = {"dist": "empirical", "values": [0.5, 1.0]} if spec_of(arch).devices else 1.0
    data["workload"] = {**SOAK["workload"], "classes": [
        {**c, FURTHER: ask} if c["name"] == "batch" else c for c in SOAK["workload"]["classes"]]}
    data["yarn"] = {**SOAK["yarn"], "resource_calculator": "dominant"}  # resource types need it (Hadoop's rule)
    (sc,) = parse_comparison(data, "soak.toml")
    return dataclasses.replace(sc, duration=seconds)


@pytest.mark.parametrize("arch", [a for a in names() if spec_of(a).further_resources])
def test_a_sim_soak_with_a_further_resource_keeps_every_invariant(tmp_path: Path, arch: str) -> None:
    row = soak_sim(further_resource_soak(arch, 300.0), tmp_path / arch, every=5.0, seed=5)
    assert_invariants_hold(row["invariants"], tmp_path / arch, f"sim-soak-{FURTHER}-{arch}")
    summary = json.loads((tmp_path / arch / "summary.json").read_text())
    assert summary["cell"]["resources"] == ["cpu", "mem", FURTHER] and summary["utilization"]["by_resource"][FURTHER] > 0
    assert summary["devices"]["allocated_mean"] > 0
    assert row["faults"] >= 30 and row["jobs"]["scheduled"] > 0
