"""SLURM end to end on the sim engine (scheduling behaviour on the virtual
clock): partitions kill over-runners at their limit, backfill raises what a
saturated machine gets through and never delays EASY's head job, fair
share splits a partition by shares, and neither a restarted controller nor
the backup taking over loses a job."""
from __future__ import annotations

import collections
import copy
import tomllib
from pathlib import Path

import pytest

from schedlab.actors.common.event_files import read_events
from schedlab.actors.run import run_scenario
from schedlab.schedulers.archs.slurm.events import SLURMCTLD_RESTORED, SLURM_END, SLURM_START
from schedlab.schedulers.events.shared import JOB_SUBMITTED, TASKS_KILLED, TASKS_LAUNCHED
from schedlab.schedulers.scenario.parse import parse_scenario

SCENARIOS = Path(__file__).resolve().parents[1] / "scenarios"


def scenario(name: str, **top: object) -> tuple[dict, str]:
    path = SCENARIOS / f"{name}.toml"
    data = tomllib.loads(path.read_text())
    data.update(top)
    data["engine"] = "sim"
    return data, str(path)


def run(data: dict, source: str, out: Path) -> tuple[dict, dict[str, list[dict]]]:
    out.mkdir(parents=True, exist_ok=True)
    summary = run_scenario(parse_scenario(copy.deepcopy(data), source), out)
    ev: dict[str, list[dict]] = collections.defaultdict(list)
    for e in read_events(out / "events.jsonl"):
        ev[e["event"]].append(e)
    assert not any(summary["invariants"].values()), summary["invariants"]
    return summary, ev


def test_the_short_partition_kills_over_runners_at_its_limit_and_long_jobs_stay_on_their_nodes(tmp_path: Path) -> None:
    data, src = scenario("slurm_partitions", duration=14400.0)
    summary, ev = run(data, src, tmp_path)
    submitted = {e["job_id"]: e for e in ev[JOB_SUBMITTED]}
    starts = {e["job_id"]: e for e in ev[SLURM_START]}
    ends = {e["job_id"]: e for e in ev[SLURM_END]}
    timeouts = [e for e in ends.values() if e["state"] == "timeout"]
    assert timeouts and {e["partition"] for e in timeouts} == {"short"}
    for e in timeouts:
        assert e["ran"] == pytest.approx(3600.0, abs=1.0)  # killed at the limit, not later
        killed = [k for k in ev[TASKS_KILLED] if any(t[0] == e["job_id"] for t in k["tasks"])]
        assert killed and all(k["t"] <= e["t"] + 30.0 for k in killed)  # the daemons' next polls
    # Jobs that finished within the hour were not killed.
    assert sum(1 for e in ends.values() if e["state"] == "completed" and e["partition"] == "short") > len(timeouts)
    # Long jobs only on the bulk nodes (machines 8-23), and never killed at an hour.
    bulk = set(range(8, 24))
    for e in ev[TASKS_LAUNCHED]:
        for t in e["tasks"]:
            if not e["prefill"] and submitted[t[0]]["job_class"] == "long":
                assert t[2] in bulk
    assert summary["slurm"]["timeouts_per_partition"] == {"short": len(timeouts)}
    (ctl,) = summary["schedulers"]  # the decider, whatever its actor is called
    assert ctl["name"] == "slurmctld" and ctl["attempts"] == len(ev[SLURM_START])
    assert set(starts) >= set(ends)


def test_backfill_gets_more_through_a_saturated_machine_and_never_delays_easys_head_job(tmp_path: Path) -> None:
    got = {}
    for mode in ("fcfs", "easy"):
        data, src = scenario("slurm_backfill", duration=21600.0)
        data["slurm"]["partitions"][0]["backfill"] = mode
        summary, ev = run(data, src, tmp_path / mode)
        got[mode] = summary
    fcfs, easy = got["fcfs"]["slurm"], got["easy"]["slurm"]
    assert fcfs["backfilled"] == 0 and fcfs["reservations"] == 0
    assert easy["backfilled"] > 0 and easy["reservations"] > 0
    assert easy["reservation_delays"] == 0  # the head job starts when it was promised (age-only priority)
    assert got["easy"]["utilization"]["cpu_mean"] > got["fcfs"]["utilization"]["cpu_mean"] * 1.05
    assert easy["bounded_slowdown"]["mean"] < fcfs["bounded_slowdown"]["mean"]
    assert got["easy"]["jobs"]["scheduled"] > got["fcfs"]["jobs"]["scheduled"]


def test_fair_share_splits_usage_by_shares(tmp_path: Path) -> None:
    shares = {}
    for weight in (10_000.0, 0.0):
        data, src = scenario("slurm_fairshare", duration=28800.0)
        data["slurm"]["priority"]["fairshare"] = weight
        summary, _ev = run(data, src, tmp_path / str(int(weight)))
        shares[weight] = summary["slurm"]["usage_share"]
    fair, fifo = shares[10_000.0], shares[0.0]
    assert fair["physics"] > 0.62 and fair["physics"] > fifo["physics"] + 0.1  # 3 shares of 4, against 1:1 arrivals
    assert abs(fifo["physics"] - 0.5) < 0.12


def _jobs_running_at(ev: dict[str, list[dict]], t: float) -> set[int]:
    started = {e["job_id"] for e in ev[SLURM_START] if e["t"] < t}
    ended = {e["job_id"] for e in ev[SLURM_END] if e["t"] < t}
    return started - ended


def test_the_backup_takes_over_from_the_saved_state_without_losing_a_job(tmp_path: Path) -> None:
    data, src = scenario("slurm_failover")
    summary, ev = run(data, src, tmp_path)
    (fo,) = [f for f in summary["failovers"] if f["role"] == "slurmctld"]
    killed = fo["killed_at_s"]
    assert fo["new_leader"] and fo["new_leader"] != fo["target"] and fo["requeued"] == 0
    assert {fo["new_leader"], fo["target"]} == {"slurmctld-0", "slurmctld-1"}
    assert fo["recovered_at_s"] is not None and fo["first_start_at_s"] is not None
    running = _jobs_running_at(ev, killed)
    assert running
    # Every job running at the kill ran on to its end, not started again.
    ends = {e["job_id"]: e for e in ev[SLURM_END]}
    restarted = {e["job_id"] for e in ev[SLURM_START] if e["t"] > killed and e["job_id"] in running}
    assert not restarted
    assert all(ends[j]["state"] == "completed" for j in running if j in ends)
    assert summary["jobs"]["submitted"] == summary["jobs"]["scheduled"] + summary["jobs"]["pending"]
    assert [e["actor"] for e in ev[SLURMCTLD_RESTORED]] == [fo["new_leader"]]


def test_a_restarted_controller_reads_its_state_file_and_keeps_running_jobs(tmp_path: Path) -> None:
    data, src = scenario("slurm_failover", coordinator={"replicas": 1})
    data["slurm"]["controllers"] = 1
    data["faults"] = [{"at": 300.0, "action": "kill", "target": "slurmctld-0", "restart_after": 20.0}]
    summary, ev = run(data, src, tmp_path)
    (restored,) = ev[SLURMCTLD_RESTORED]
    assert restored["jobs"] > 0 and restored["t"] > 300.0
    running = _jobs_running_at(ev, 300.0)
    assert running and not {e["job_id"] for e in ev[SLURM_START] if e["t"] > 300.0 and e["job_id"] in running}
    (fo,) = [f for f in summary["failovers"] if f["role"] == "slurmctld"]
    assert fo["recovery"] == "restart from the saved state" and fo["requeued"] == 0
    assert (tmp_path / "slurmctld.state").is_file()


def test_under_the_monkey_a_new_controller_never_takes_a_repeated_end_for_a_new_runs(tmp_path: Path) -> None:
    """The sim soak's seed 4 (the monkey's faults drawn ahead) has a backup
    take over and restart a job on nodes whose daemon's earlier report is
    still undelivered: when that report arrives the job must not
    'complete', nor its nodes go to another job while it runs. A repeated
    end is stale (schedulers.model.host_roll)."""
    import dataclasses

    from schedlab.schedulers.scenario.parse import parse_comparison
    from schedlab.experiments.soak import soak_sim
    from tests.conftest import assert_invariants_hold

    data = tomllib.loads((SCENARIOS / "soak.toml").read_text())
    (sc,) = parse_comparison({**data, "architectures": ["slurm"], "engine": "sim"}, "soak.toml")
    row = soak_sim(dataclasses.replace(sc, duration=600.0), tmp_path, every=5.0, seed=4)
    assert_invariants_hold(row["invariants"], tmp_path, "sim-soak-slurm-seed-4")
    assert row["by_kind"].get("kill_slurmctld", 0) > 5 and row["jobs"]["scheduled"] > 0
