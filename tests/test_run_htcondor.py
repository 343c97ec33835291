"""HTCondor end to end: the shipped scenarios on the sim engine (matching
that respects both sides' Requirements, desktop owners' suspend/vacate and
stale matches, the negotiator's failover losing no job, a schedd
reconnecting to its running jobs), determinism, and one small live run."""
from __future__ import annotations

import json
import tomllib
from pathlib import Path

import pytest

from schedlab.actors.common.event_files import read_events
from schedlab.actors.run import run_scenario
from schedlab.schedulers.archs.htcondor.events import CLAIM_ACTIVATED, CLAIM_REFUSED, JOB_REQUEUED, JOB_SUSPENDED, JOB_VACATED, NEGOTIATION_CYCLE
from schedlab.schedulers.events.shared import ACTOR_STARTED, JOB_SCHEDULED, JOB_SUBMITTED, SCHEDULER_RECOVERED
from schedlab.schedulers.scenario.parse import parse_scenario

ROOT = Path(__file__).resolve().parents[1]


def _run(tmp_path: Path, name: str, engine: str = "sim", **over: object) -> tuple[dict, list[dict]]:
    path = ROOT / "scenarios" / f"{name}.toml"
    data = tomllib.loads(path.read_text()) | {"engine": engine}
    for k, v in over.items():
        if k.startswith("htcondor_"):
            data["htcondor"][k[len("htcondor_"):]] = v
        else:
            data[k] = v
    summary = run_scenario(parse_scenario(data, str(path)), tmp_path)
    return summary, read_events(tmp_path / "events.jsonl")


def _slot_class(slot: str) -> str:
    m = int(slot.rsplit("@m", 1)[1])
    return "x86" if m < 8 else "arm" if m < 16 else "gpu"


def test_matchmaking_respects_requirements_on_both_sides(tmp_path: Path) -> None:
    s, ev = _run(tmp_path, "condor_matchmaking", duration=600.0)
    assert not any(s["invariants"].values()), s["invariants"]
    where: dict[str, set[str]] = {}
    for e in ev:
        if e["event"] == CLAIM_ACTIVATED:
            job = int(e["key"].split(".")[0])
            where.setdefault(str(job), set()).add(_slot_class(e["slot"]))
    classes = {e["job_id"]: e["job_class"] for e in ev if e["event"] == JOB_SUBMITTED}
    by_class: dict[str, set[str]] = {}
    for j, kinds in where.items():
        by_class.setdefault(classes[int(j)], set()).update(kinds)
    assert by_class["ml"] == {"gpu"}  # needs a GPU
    assert "arm" not in by_class["analysis"]  # needs x86
    assert by_class["analysis"] <= {"x86", "gpu"} and by_class["sweep"]  # the GPU START only takes <= 16 GB
    c = s["htcondor"]
    assert c["negotiation_cycles"] >= 25 and c["matches"] > 0 and 0 < c["claim_reuse_rate"] < 1
    assert c["submit_to_match_s"]["p50"] is not None and c["match_to_start_s"]["p50"] is not None
    assert s["jobs"]["scheduled"] > 0.9 * s["jobs"]["submitted"]


def test_desktop_owners_suspend_vacate_and_cause_stale_matches(tmp_path: Path) -> None:
    s, ev = _run(tmp_path, "condor_scavenging", duration=1800.0)
    assert not any(s["invariants"].values()), s["invariants"]
    c = s["htcondor"]
    assert c["suspensions"] > 0 and c["vacates"] > 0 and c["badput_s"] > 0 and c["goodput_s"] > c["badput_s"]
    assert c["stale_match_rejections"] > 0 and c["claims_refused"]["stale match"] == c["stale_match_rejections"]
    # Only desktops (machines 0..23) have owners; a vacated job goes back to its queue and runs again.
    assert all(int(e["slot"].rsplit("@m", 1)[1]) < 24 for e in ev if e["event"] in (JOB_SUSPENDED, JOB_VACATED))
    requeued = {e["key"] for e in ev if e["event"] == JOB_REQUEUED}
    again = {e["key"] for e in ev if e["event"] == CLAIM_ACTIVATED and e["key"] in requeued and
             e["t"] > min(x["t"] for x in ev if x["event"] == JOB_REQUEUED and x["key"] == e["key"])}
    assert requeued and len(again) > 0.5 * len(requeued)
    # Refused claims are the schedds' conflicted transactions.
    assert sum(x["transactions"]["conflicted"] for x in s["schedulers"]) == len([e for e in ev if e["event"] == CLAIM_REFUSED
                                                                                   and e["reason"] != "activation"])


def test_the_negotiator_fails_over_without_losing_a_job(tmp_path: Path) -> None:
    """Jobs live in the schedds: a killed central manager stops matching
    (claims keep being reused) and its successor rebuilds the ads from the
    startds' updates and resumes the cycles."""
    faults = [{"at": 200.0, "action": "kill", "target": "condor-collector", "restart_after": 60.0}]
    s, ev = _run(tmp_path, "condor_matchmaking", duration=600.0, faults=faults)
    assert not any(s["invariants"].values()), s["invariants"]
    j = s["jobs"]
    assert j["submitted"] == j["scheduled"] + j["pending"] and j["scheduled"] > 0.85 * j["submitted"]
    cycles = sorted(e["t"] for e in ev if e["event"] == NEGOTIATION_CYCLE)
    assert not [t for t in cycles if 200.5 < t < 260.0]  # no cycle while it was dead
    after = [e for e in ev if e["event"] == NEGOTIATION_CYCLE and e["t"] > 260.0]
    assert after and sum(e["matches"] for e in after) > 0
    started = [e for e in ev if e["event"] == ACTOR_STARTED and e["actor"] == "condor-collector"]
    assert len(started) == 2
    # Submitted while it was down, matched after it came back.
    down = [e["job_id"] for e in ev if e["event"] == JOB_SUBMITTED and 205.0 < e["t"] < 255.0]
    done = {e["job_id"] for e in ev if e["event"] == JOB_SCHEDULED}
    assert down and all(jid in done for jid in down)


def test_a_restarted_schedd_reconnects_to_its_running_jobs(tmp_path: Path) -> None:
    faults = [{"at": 300.0, "action": "kill", "target": "schedd-0", "restart_after": 30.0}]
    s, ev = _run(tmp_path, "condor_matchmaking", duration=700.0, faults=faults)
    assert not any(s["invariants"].values()), s["invariants"]
    rec = [e for e in ev if e["event"] == SCHEDULER_RECOVERED and e["actor"] == "schedd-0"]
    assert len(rec) == 1 and rec[0]["running"] > 0 and rec[0]["finished"] > 0
    # A job it reconnected to was not started again: each of schedd-0's job keys started once unless vacated.
    starts: dict[str, int] = {}
    for e in ev:
        if e["event"] == CLAIM_ACTIVATED and e["actor"] == "schedd-0":
            starts[e["key"]] = starts.get(e["key"], 0) + 1
    assert starts and max(starts.values()) == 1
    assert any(e["t"] > 330.0 for e in ev if e["event"] == CLAIM_ACTIVATED and e["actor"] == "schedd-0")


def test_more_submit_machines_move_the_bottleneck_off_the_schedd(tmp_path: Path) -> None:
    one, _ = _run(tmp_path / "one", "condor_scale", duration=400.0, htcondor_schedds=1)
    three, _ = _run(tmp_path / "three", "condor_scale", duration=400.0)
    busy1 = {x["name"]: x["busyness"] for x in one["schedulers"]}
    busy3 = {x["name"]: x["busyness"] for x in three["schedulers"]}
    assert busy1["schedd-0"] > 0.9 and max(busy3[f"schedd-{i}"] for i in range(3)) < 0.8
    assert three["jobs"]["pending"] < 0.1 * one["jobs"]["pending"]
    assert busy1["condor-collector"] < 0.05  # the negotiator is not the bottleneck here


def test_the_sim_run_is_deterministic(tmp_path: Path) -> None:
    a, _ = _run(tmp_path / "a", "condor_scavenging", duration=600.0)
    b, _ = _run(tmp_path / "b", "condor_scavenging", duration=600.0)
    assert (tmp_path / "a" / "events.jsonl").read_bytes() == (tmp_path / "b" / "events.jsonl").read_bytes()
    assert json.dumps(a["htcondor"], sort_keys=True) == json.dumps(b["htcondor"], sort_keys=True)


@pytest.mark.ray
@pytest.mark.untimed  # a run that completes: it judges no wall time, so it runs beside the timed live tests
def test_a_small_live_run_matches_claims_and_reuses(tmp_path: Path, ray_session: None) -> None:
    # Live, what matters is that the messages flow: cycles, matches, claims
    # activated and reused, invariants, and every job accounted for. How many
    # cycles fit, and so how many jobs are placed, depends on the machine's
    # load (untimed: beside the timed live tests, at a lower CPU priority; a
    # CI run under load placed 11 of 48 where sim places 47 of 50), so how
    # much gets scheduled is asserted on sim.
    s, ev = _run(tmp_path, "condor_matchmaking", engine="ray", duration=240.0)
    assert not any(s["invariants"].values()), s["invariants"]
    c = s["htcondor"]
    assert c["negotiation_cycles"] >= 3 and c["activations"] > 0 and c["claim_reuses"] > 0
    j = s["jobs"]
    assert j["submitted"] == j["scheduled"] + j["abandoned"] + j["pending"] + j.get("rejected", 0)
    scheduled = {e["job_id"] for e in ev if e["event"] == JOB_SCHEDULED}
    assert len(scheduled) == j["scheduled"] > 0


def test_condor_against_a_central_dispatcher_moves_the_bottleneck(tmp_path: Path) -> None:
    """condor_vs_dispatcher (condor_scale included): the dispatcher's one
    head, paying a shadow's cost for every task, saturates; the schedds do not."""
    from schedlab.schedulers.scenario.parse import parse_comparison
    from schedlab.api.scenario_files import load_data

    path = ROOT / "scenarios" / "condor_vs_dispatcher.toml"
    data = load_data(path, ["engine=\"sim\"", "duration=300"])
    got = {}
    for sc in parse_comparison(data, str(path)):
        got[sc.architecture] = run_scenario(sc, tmp_path / sc.architecture)
    busiest = {a: max(x["busyness"] for x in s["schedulers"]) for a, s in got.items()}
    assert busiest["dispatcher"] > 0.95 > busiest["htcondor"]
    assert got["htcondor"]["jobs"]["scheduled"] > 1.5 * got["dispatcher"]["jobs"]["scheduled"]
    assert not any(v for s in got.values() for v in s["invariants"].values())
