"""The chaos script against live runs on the session's Ray: every listed fault
is carried out by the run, logged, listed in summary.json, and survived
with every invariant holding (dead machines' tasks placed again, dead
schedulers and frameworks recovering their queues); bad input exits 2 with
one line and injects nothing."""
from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any, Callable

import pytest

from schedlab.actors.analysis.run_info import RunSetup
from schedlab.actors.run import run_scenario
from schedlab.schedulers.archs.mesos.events import OFFERS_CLOSED
from schedlab.schedulers.events.shared import (
    FAILOVER, JOB_PENDING, MACHINES_DOWN, REPLICA_START, SCHEDULER_RECOVERED, SCHEDULER_START, TASKS_LAUNCHED,
)
from schedlab.schedulers.scenario.parse import parse_scenario
from tests.conftest import small_scenario_data

pytestmark = pytest.mark.ray
ROOT = Path(__file__).resolve().parent.parent


def chaos(out: Path, *args: str, timeout: float = 90) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "schedlab", "chaos", "--run", str(out), *args],
                          capture_output=True, text=True, timeout=timeout, cwd=ROOT)


def events(out: Path) -> list[dict]:
    f = out / "events.jsonl"
    if not f.exists():
        return []
    return [json.loads(line) for line in f.read_text().splitlines() if line.strip()]


def wait_for(check: Callable[[], bool], timeout: float, what: str) -> None:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if check():
            return
        time.sleep(0.2)
    raise AssertionError(f"timed out waiting for {what}")


class Background:
    """run_scenario in a thread, so this test can play the second terminal."""

    def __init__(self, data: dict, out: Path) -> None:
        self.sc = parse_scenario(data, "chaos-test")
        self.out = out
        self.summary: dict[str, Any] | None = None
        self.error: BaseException | None = None
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()
        # Started: the inbox answers once the actors run (run.json is written first).
        wait_for(lambda: (out / "run.json").exists() and any(e["event"] == SCHEDULER_START or e["event"] == REPLICA_START
                                                               for e in events(out)), 120, "the run to start")

    def _run(self) -> None:
        try:
            self.summary = run_scenario(self.sc, self.out)
        except BaseException as e:  # re-raised by join()
            self.error = e

    def join(self) -> dict:
        self.thread.join(timeout=300)
        assert not self.thread.is_alive(), "run did not end"
        if self.error is not None:
            raise self.error
        assert self.summary is not None
        return self.summary


def outcome(p: subprocess.CompletedProcess) -> dict:
    assert p.returncode == 0, p.stderr[-2000:]
    return json.loads(p.stdout.strip().splitlines()[-1])


def test_omega_replicated_survives_every_fault_from_a_plan(ray_session: None, tmp_path: Path, invariants_hold: Callable) -> None:
    data = small_scenario_data(duration=1100.0, time_scale=25.0)
    data["coordinator"] = {"replicas": 3}
    out = tmp_path / "omega"
    run = Background(data, out)
    plan = tmp_path / "plan.toml"
    # at: emulated seconds after the plan is posted (25 emulated s = 1 wall s).
    plan.write_text("""
[[faults]]
at = 25.0
action = "kill"
target = "machine-host-1"
restart_after = 100.0
[[faults]]
at = 50.0
action = "pause"
target = "scheduler-batch-0"
duration = 50.0
[[faults]]
at = 75.0
action = "slow"
target = "scheduler-service-0"
delay = 0.5
duration = 100.0
[[faults]]
at = 100.0
action = "partition"
target = "scheduler-batch-1"
peer = "coordinator"
duration = 50.0
[[faults]]
at = 150.0
action = "kill"
target = "scheduler-batch-1"
restart_after = 50.0
[[faults]]
at = 250.0
action = "kill_leader"
restart_after = 100.0
""")
    got = chaos(out, "plan", str(plan))
    assert got.returncode == 0, got.stderr[-2000:]
    lines = [json.loads(x) for x in got.stdout.splitlines()]
    assert [x["fault"] for x in lines] == ["kill", "pause", "slow", "partition", "kill", "kill_leader"]
    assert all("skipped" not in x for x in lines), lines
    # Bad input while the run is live: one line, exit 2, nothing posted.
    bad = chaos(out, "pause", "scheduler-nobody", "--for", "10")
    assert bad.returncode == 2 and bad.stderr.count("\n") == 1 and "unknown target 'scheduler-nobody'" in bad.stderr
    bad_plan = tmp_path / "bad.toml"
    bad_plan.write_text("[[faults]]\nat = 1.0\naction = 'explode'\n[[faults]]\nat = 2.0\naction = 'pause'\ntarget = 'machine'\n")
    bad = chaos(out, "plan", str(bad_plan))
    assert bad.returncode == 2 and "bad.toml: faults[0].action: must be one of" in bad.stderr
    info = json.loads((out / "run.json").read_text())
    bad = subprocess.run([sys.executable, "-m", "schedlab", "chaos", "--address", info["address"], "--namespace", "schedlab-nope", "roster"],
                         capture_output=True, text=True, timeout=90, cwd=ROOT)
    assert bad.returncode == 2 and "no schedlab run in namespace 'schedlab-nope'" in bad.stderr
    s = run.join()
    invariants_hold(s["invariants"], out)  # first: a bad run is kept whichever check fails
    faults = [f for f in s["faults"] if f["source"] == "chaos"]
    kinds = [f["kind"] for f in faults]
    # The two kills come back: their restarts are the chaos script's too.
    assert kinds.count("restart") == 3 and {"kill", "pause", "slow", "partition", "kill_leader"} <= set(kinds)
    assert len(faults) == 9, kinds  # the plan's six and three restarts; the bad input injected nothing
    for line in lines:  # the chaos script printed the time the run recorded
        assert any(f["kind"] == line["kind"] and f["at_s"] == line["at_s"] for f in faults), (line, faults)
    assert sum(1 for f in faults if f["kind"] == "kill_leader" and f.get("was_leader")) == 1
    ev = events(out)
    names = {e["event"] for e in ev}
    assert "machines_down" in names, "the dead host was never marked down"
    assert any(e["event"] == SCHEDULER_RECOVERED and e["actor"] == "scheduler-batch-1" for e in ev)
    assert any(e["event"] == FAILOVER for e in ev)
    assert s["jobs"]["submitted"] == s["jobs"]["scheduled"] + s["jobs"]["pending"] + s["jobs"]["abandoned"]


def _mesos_data() -> dict:
    data = small_scenario_data(architecture="mesos", duration=800.0, time_scale=25.0)
    del data["omega"]
    data["mesos"] = {"frameworks": [
        {"name": "batch", "classes": ["batch"], "t_job": 0.5, "t_task": 0.01},
        {"name": "service", "classes": ["service"], "t_job": 2.0, "t_task": 0.05},
    ]}
    return data


def test_mesos_dead_agent_and_framework_recover(ray_session: None, tmp_path: Path, invariants_hold: Callable) -> None:
    out = tmp_path / "mesos"
    data = _mesos_data()
    data["faults"] = [
        # Killed early, from the timeline rather than from a chaos process:
        # on a loaded machine each `schedlab chaos` takes seconds to start, and
        # a new actor process seconds more (up to 15 wall s under a CPU
        # hog), which a kill posted late in the run may not get before its end.
        {"at": 100.0, "action": "kill", "target": "framework-batch", "restart_after": 50.0},
        # Restarted a moment before the end: its recovery may not finish, and
        # the jobs routed to it must still be reported (pending), not lost.
        {"at": 770.0, "action": "kill", "target": "framework-service", "restart_after": 25.0},
    ]
    run = Background(data, out)
    wait_for(lambda: any(e["event"] == TASKS_LAUNCHED and not e.get("prefill") for e in events(out)), 60, "a launch")
    kill = outcome(chaos(out, "kill", "machine-host-0"))
    assert kill["kind"] == "kill" and kill["target"] == "machine-host-0"
    cut = outcome(chaos(out, "partition", "framework-service", "master", "--for", "50"))
    assert cut["peer"] == ["master-0"]
    s = run.join()
    invariants_hold(s["invariants"], out)  # first: a bad run is kept whichever check fails
    ev = events(out)
    down = [e for e in ev if e["event"] == MACHINES_DOWN]
    assert down and down[0]["hosts"] == [0], "the master never removed the dead agent"
    back = next(e["t"] for e in ev if e["event"] == SCHEDULER_RECOVERED and e["actor"] == "framework-batch")
    # The restarted framework (a new actor under the old name) gets offers and uses them.
    assert any(e["event"] == OFFERS_CLOSED and e["t"] > back and any(o[1] == "framework-batch" and o[2] == "accepted"
                                                                      for o in e["offers"]) for e in ev), \
        "the restarted framework never accepted an offer"
    # Every job's task lost with the dead agent was placed again (by its
    # framework told of the loss, or by a restarted framework's recovery:
    # the kill of framework-batch may land before the master's word of the
    # loss, which then dies with it), or its job is reported pending at the
    # end (a framework restarted on a loaded machine may take seconds of
    # wall time to recover its queue). Prefill tasks (negative ids) belong
    # to no framework.
    lost = {(j, t) for j, t, *_ in down[0]["lost"] if j >= 0}
    again = {(task[0], task[1]) for e in ev if e["event"] == TASKS_LAUNCHED and e["t"] > down[0]["t"] for task in e["tasks"]}
    pending = {e["job_id"] for e in ev if e["event"] == JOB_PENDING}
    assert all(k in again or k[0] in pending for k in lost), sorted(k for k in lost - again if k[0] not in pending)


def test_borg_frontend_and_machine_restart(ray_session: None, tmp_path: Path, invariants_hold: Callable) -> None:
    data = small_scenario_data(architecture="borg", duration=800.0, time_scale=25.0)
    del data["omega"]
    data["coordinator"] = {"replicas": 3}
    out = tmp_path / "borg"
    run = Background(data, out)
    assert outcome(chaos(out, "kill", "borg-frontend", "--restart-after", "25"))["role"] == "frontend"
    assert outcome(chaos(out, "kill", "machine", "--restart-after", "100"))["role"] == "machine"
    assert outcome(chaos(out, "slow", "coordinator", "--delay", "0.2", "--for", "100"))["kind"] == "slow"
    # A monkey told to stop (SIGTERM, as a supervisor would) stops cleanly after its faults so far.
    log = tmp_path / "monkey.jsonl"
    with log.open("w") as f:
        monkey = subprocess.Popen([sys.executable, "-m", "schedlab", "chaos", "--run", str(out), "monkey",
                                   "--every", "0.5", "--roles", "machine", "--seed", "3"],
                                  cwd=ROOT, stdout=f, stderr=subprocess.PIPE, text=True)
    wait_for(lambda: '"fault"' in log.read_text(), 60, "the monkey's first fault")
    monkey.terminate()
    _, err = monkey.communicate(timeout=30)
    last = json.loads(log.read_text().strip().splitlines()[-1])
    assert monkey.returncode == 0 and last["monkey"] == "done" and last["stopped"] == "interrupted", err[-2000:]
    assert last["faults"] >= 1 and "SIGTERM received" not in err
    s = run.join()
    invariants_hold(s["invariants"], out)  # first: a bad run is kept whichever check fails
    kills = [f for f in s["faults"] if f["kind"] == "kill" and not f.get("skipped")]
    assert len(kills) >= 2  # the front end and a machine (and any of the monkey's)
    for k in kills:  # each came back, as asked
        assert any(f["kind"] == "restart" and f["target"] == k["target"] and f["at_s"] > k["at_s"] for f in s["faults"]), k
    assert s["jobs"]["submitted"] == s["jobs"]["scheduled"] + s["jobs"]["pending"] + s["jobs"]["abandoned"] + s["jobs"]["rejected"]


def test_chaos_bad_input_names_the_problem(ray_session: None, tmp_path: Path) -> None:
    # No run at all: a directory without run.json, and a namespace nobody uses.
    p = chaos(tmp_path, "roster")
    assert p.returncode == 2 and "not a schedlab run directory" in p.stderr and p.stderr.count("\n") == 1
    RunSetup(scenario="s", source="s.toml", architecture="omega", seed=1, machines_per_actor=1, replicas=1,
             namespace="schedlab-none", address="127.0.0.1:1", embedded=True, engine="ray", capacity=[[1.0, 1.0]],
             rack=[0]).write(tmp_path)
    p = chaos(tmp_path, "kill", "machine")
    assert p.returncode == 2 and "no Ray cluster at 127.0.0.1:1" in p.stderr
    p = chaos(tmp_path, "monkey", "--roles", "machine,wizard")
    assert p.returncode == 2 and "unknown role 'wizard'" in p.stderr
