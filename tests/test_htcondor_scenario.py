"""The [htcondor] section and the pool it describes, without Ray: ClassAd
expressions parsed at scenario time (exit 2 naming key and column), job
classes no machine could ever run refused, slot and job ads, symmetric
matching over them, owners' schedules and a restarted schedd's rebuild."""
from __future__ import annotations

import copy
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from schedlab.schedulers.archs.htcondor.claims import STALE, Schedd, Startd
from schedlab.schedulers.archs.htcondor.negotiator import Machine, negotiate
from schedlab.schedulers.archs.htcondor.pool import (
    MB, JobAds, MachineAds, OwnerSchedule, Running, job_ad, rebuild, reserved_slots, slot_ad, slot_count,
)
from schedlab.schedulers.archs.htcondor.userprio import UserPrio
from schedlab.schedulers.scenario.parse import parse_scenario
from schedlab.schedulers.scenario.toml_table import ScenarioError
from tests.conformance.scenarios import conformance_data
from tests.conformance.test_registry import _toml

ROOT = Path(__file__).resolve().parents[1]


def data(**section: object) -> dict:
    d = conformance_data("htcondor")
    d["htcondor"] = copy.deepcopy(section) if section else d["htcondor"]
    return d


def test_the_section_parses_into_users_schedds_and_expressions() -> None:
    d = data(schedds=2, jobs={"service": {"user": "ops", "schedd": 0, "requirements": "Cpus >= 1"}},
             machines={"b": {"slots": 2, "arch": "ARM", "attrs": {"HasSSD": True}, "rank": "TARGET.RequestCpus"}})
    s = parse_scenario(d, "c.toml").section
    assert s.job_ads("service") == JobAds(user="ops", schedd=0, requirements="Cpus >= 1")
    assert s.job_ads("batch").user == "batch" and s.job_ads("batch").schedd == 0  # class index 0 -> schedd 0
    assert s.classes_of(0) == ["batch", "service"] and s.classes_of(1) == []
    b = s.machine_ads("b")
    assert b.slots == 2 and b.arch == "ARM" and b.attrs == (("HasSSD", True),) and s.machine_ads("a") == MachineAds()


@pytest.mark.parametrize("where, text, column", [
    ("jobs.batch.requirements", 'Arch == "X86_64" &&', 20),
    ("machines.a.rank", "TARGET.RequestCpus * (2", 24),
    ("jobs.service.rank", "nosuchfunction(1)", 1),
])
def test_an_expression_that_does_not_parse_names_key_and_column(where: str, text: str, column: int) -> None:
    kind, cls, key = where.split(".")
    d = data(**{kind: {cls: {key: text}}})
    with pytest.raises(ScenarioError) as e:
        parse_scenario(d, "c.toml")
    msg = str(e.value)
    assert msg.startswith(f"c.toml: htcondor.{where}: ClassAd expression does not parse") and f"column {column}" in msg, msg
    assert "\n" not in msg


def test_a_job_class_no_machine_can_ever_run_is_refused() -> None:
    with pytest.raises(ScenarioError, match=r"htcondor.jobs.service: no machine can ever run job class 'service'"):
        parse_scenario(data(jobs={"service": {"requirements": 'Arch == "SPARC"'}}), "c.toml")
    # The machine side refuses too: a START that takes no job of the class.
    with pytest.raises(ScenarioError, match="jobs.batch: no machine can ever run"):
        parse_scenario(data(machines={"a": {"requirements": "TARGET.RequestCpus > 2"},
                                      "b": {"requirements": 'TARGET.Owner == "service"'}}), "c.toml")
    # Too big for any slot: 8-cpu machines in 8 slots cannot take a 1.5-cpu request... but 4 slots can.
    d = data(machines={"a": {"slots": 8}, "b": {"slots": 8}})
    d["workload"]["classes"][1]["cpu"] = 1.5
    with pytest.raises(ScenarioError, match="service"):
        parse_scenario(d, "c.toml")
    d["htcondor"]["machines"]["b"]["slots"] = 4
    parse_scenario(d, "c.toml")


def test_bad_input_exits_2_in_one_line_before_anything_starts(tmp_path: Path) -> None:
    d = data(jobs={"batch": {"requirements": "Memory >>= 3"}})
    path = tmp_path / "bad.toml"
    path.write_text(_toml(d))
    env = {k: v for k, v in os.environ.items() if k != "RAY_ADDRESS"}
    r = subprocess.run([sys.executable, "-m", "schedlab", "run", str(path)], cwd=tmp_path, capture_output=True, text=True,
                       timeout=60, env=env)
    lines = r.stderr.strip().splitlines()
    assert r.returncode == 2 and len(lines) == 1, r.stderr
    assert "bad.toml: htcondor.jobs.batch.requirements: ClassAd expression does not parse" in lines[0] and "column 9" in lines[0]
    assert not (tmp_path / "runs").exists() and not list(tmp_path.glob("**/events.jsonl"))


def test_unknown_classes_and_half_owner_policies_are_refused() -> None:
    with pytest.raises(ScenarioError, match="htcondor.jobs.nosuch: no job class"):
        parse_scenario(data(jobs={"nosuch": {}}), "c.toml")
    with pytest.raises(ScenarioError, match="htcondor.machines.zzz: no machine class"):
        parse_scenario(data(machines={"zzz": {}}), "c.toml")
    with pytest.raises(ScenarioError, match="owner_present and owner_away go together"):
        parse_scenario(data(machines={"a": {"owner_present": 10.0}}), "c.toml")
    with pytest.raises(ScenarioError, match="htcondor.jobs.batch.schedd: must name a schedd"):
        parse_scenario(data(schedds=2, jobs={"batch": {"schedd": 2}}), "c.toml")


def test_slots_divide_the_machine_and_matching_is_symmetric() -> None:
    """A job's Requirements and the machine's both hold, or no match: the
    GPU node refuses the job that wants it (its START), the x86 job skips
    the ARM node, and each takes the slot its Rank prefers."""
    x86 = MachineAds(arch="X86_64")
    arm = MachineAds(arch="AARCH64", rank="TARGET.Owner == \"sweep\" ? 10 : 0")
    gpu = MachineAds(slots=2, attrs=(("HasGPU", True),), requirements='TARGET.Owner == "ml"')
    assert slot_count(8.0, x86) == 8 and slot_count(0.5, x86) == 1 and slot_count(8.0, gpu) == 2
    ads = {"x": slot_ad(0, 0, "x86", (8.0, 32.0), 8, x86), "a": slot_ad(1, 0, "arm", (4.0, 8.0), 4, arm),
           "g": slot_ad(2, 0, "gpu", (8.0, 64.0), 2, gpu)}
    assert ads["x"]["Cpus"] == 1.0 and ads["x"]["Memory"] == 4 * MB and ads["g"]["Cpus"] == 4.0
    machines = [Machine(k, "Unclaimed", ad) for k, ad in ads.items()]
    jobs = {
        "analysis": job_ad(1, 0, "analysis", (1.0, 2.0), JobAds("analysis", 0, requirements='Arch == "X86_64"')),
        "sweep": job_ad(2, 0, "sweep", (1.0, 1.0), JobAds("sweep", 0, rank="TARGET.Cpus")),
        "ml": job_ad(3, 0, "ml", (2.0, 8.0), JobAds("ml", 0, requirements="TARGET.HasGPU =?= true")),
        "rogue": job_ad(4, 0, "rogue", (1.0, 1.0), JobAds("rogue", 0, requirements="TARGET.HasGPU =?= true")),
    }
    idle = {"schedd-0": {u: [(u, ad)] for u, ad in jobs.items()}}
    got = {m.job_id: m.machine for m in negotiate(machines, idle, UserPrio()).matches}
    assert got["ml"] == "g" and "rogue" not in got  # the GPU node's START refuses everyone but ml
    assert got["analysis"] == "x"  # never the ARM node
    assert got["sweep"] == "a"  # x taken by analysis... and a's Rank prefers it anyway
    # Alone, sweep ranks by Cpus: the GPU slot's START refuses it, so the x86 slot (1 cpu) ties the ARM one (1 cpu)
    # and the machine's Rank breaks the tie for the ARM node.
    alone = negotiate(machines, {"s": {"sweep": [("sweep", jobs["sweep"])]}}, UserPrio()).matches
    assert [m.machine for m in alone] == ["a"] and alone[0].machine_rank == 10.0


def test_a_claim_on_a_stale_match_is_refused() -> None:
    """The negotiator matched on an ad from before the owner came back: the
    startd refuses the schedd's claim, and the job is idle again."""
    ad = slot_ad(0, 0, "desk", (4.0, 16.0), 4, MachineAds())
    st = Startd("slot1@m0", ad)
    sd = Schedd("schedd-0")
    sd.submit("1.0", "u", job_ad(1, 0, "c", (1.0, 1.0), JobAds("u", 0)), now=0.0)
    match = negotiate([st.machine()], {"schedd-0": sd.idle()}, UserPrio(), cycle=5).matches[0]
    assert st.matched(match.match_id, 1.0)
    req = sd.on_match(match, 1.0)
    assert st.owner_returns(2.0) == "owner"  # the owner is back before the claim arrives
    reply = st.request_claim(req.match_id, "schedd-0", "u", req.job_ad, 3.0)
    assert not reply.accepted and reply.reason == STALE
    assert sd.on_claim_reply(match.match_id, reply, 3.0) is None
    assert sd.stats.refusals == {STALE: 1} and list(sd.idle()["u"]) == [("1.0", sd.jobs["1.0"].ad)]


def test_owner_schedules_are_deterministic_per_machine_and_alternate() -> None:
    a = OwnerSchedule.for_machine(5, 3, 60.0, 120.0)
    b = OwnerSchedule.for_machine(5, 3, 60.0, 120.0)
    c = OwnerSchedule.for_machine(5, 4, 60.0, 120.0)
    assert OwnerSchedule.for_machine(5, 3, 0.0, 0.0) is None
    ta, tb, tc = a.due(10_000.0), b.due(10_000.0), c.due(10_000.0)
    assert ta == tb and ta != tc and len(ta) > 20
    assert all(x[1] != y[1] for x, y in zip(ta, ta[1:])) and all(x[0] < y[0] for x, y in zip(ta, ta[1:]))
    present = sum(y[0] - x[0] for x, y in zip(ta, ta[1:]) if x[1])
    assert 0.15 < present / (ta[-1][0] - ta[0][0]) < 0.55  # about a third of the time


def test_standing_tasks_take_whole_slots_out_of_the_pool() -> None:
    cap = np.array([4.0, 16.0])
    assert reserved_slots(np.zeros(2), cap, 4) == []
    assert reserved_slots(np.array([0.5, 1.0]), cap, 4) == [3]
    assert reserved_slots(np.array([1.2, 1.0]), cap, 4) == [2, 3]
    assert reserved_slots(np.array([0.5, 9.0]), cap, 4) == [1, 2, 3]  # memory decides
    assert reserved_slots(np.array([4.0, 16.0]), cap, 4) == [0, 1, 2, 3]
    # 4 GPUs over 8 slots sit on slots 0-3: standing tasks holding 3 GPUs take three GPU slots
    # besides the last slots their cpu needs, so the slots left have 1 GPU and the machine's 4 are
    # never exceeded (the soak with a further resource overcommitted when the slots were taken as
    # equal); half a GPU held takes one GPU slot, not the whole machine.
    gpus = np.array([8.0, 32.0, 4.0])
    assert reserved_slots(np.array([3.0, 6.0, 3.0]), gpus, 8) == [1, 2, 3, 5, 6, 7]
    assert reserved_slots(np.array([1.0, 2.0, 0.0]), gpus, 8) == [7]
    assert reserved_slots(np.array([0.0, 0.0, 0.5]), np.array([4.0, 8.0, 1.0]), 4) == [0]


def test_a_restarted_schedd_rebuilds_running_finished_and_idle_jobs() -> None:
    sd = Schedd("schedd-1")
    ads = JobAds("u", 1)
    jobs = [(f"7.{t}", "u", job_ad(7, t, "c", (1.0, 1.0), ads)) for t in range(3)]
    mad = slot_ad(0, 0, "a", (4.0, 16.0), 4, MachineAds())
    got = rebuild(sd, jobs, [Running("7.1", "slot1@m0#9.0", "slot1@m0", "u", mad, 5.0)], {"7.0"}, now=20.0)
    assert (got.running, got.finished, got.idle) == (1, 1, 1)
    assert sd.jobs["7.0"].status == "done" and sd.jobs["7.1"].status == "running" and sd.jobs["7.2"].status == "idle"
    assert [k for k, _ in sd.idle()["u"]] == ["7.2"]
    # The shadow reconnected: the job's exit is handled (and its claim reused for 7.2).
    nxt = sd.on_job_exit("7.1", 30.0, ran=25.0)
    assert nxt.job_id == "7.2" and nxt.reused and sd.stats.goodput == 25.0
