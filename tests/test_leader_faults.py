"""A control plane's own trouble must cost no healthy work: a
paused leader and a leader cut off from every machine, each for longer
than the write-off threshold, kill no task on a machine no fault touched;
a machine that really dies is still written off in bounded time."""
from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from schedlab.actors.common.event_files import read_events
from schedlab.actors.run import run_scenario
from schedlab.schedulers.scenario.parse import parse_scenario
from tests.conftest import small_scenario_data

pytestmark = pytest.mark.ray

SCALE = 20.0
PAUSE = (40.0, 40.0)  # at, for (emulated s): 2 wall s, past every watcher's threshold
PARTITION = (110.0, 40.0)
KILL = 180.0  # machine-host-2, for good


def scenario(arch: str) -> dict[str, Any]:
    data = small_scenario_data(time_scale=SCALE, duration=250.0)
    data["substrate"] = {"batch_interval": 0.1}
    data["coordinator"] = {"replicas": 3}
    role = "coordinator"
    if arch == "borg":
        data["architecture"] = "borg"
        del data["omega"]
        data["borg"] = {"t_job": 0.5, "t_task": 0.01}
    elif arch == "mesos":
        data["architecture"] = "mesos"
        del data["omega"]
        # Agents ping every 5 s when idle (Mesos' agent_ping_timeout is
        # configurable; its default 15 s writes a dead agent off 45 s
        # later, too close to this run's end for the kill at 180 s).
        data["mesos"] = {"masters": 3, "heartbeat": 5.0, "frameworks": [{"name": "all", "classes": ["batch", "service"]}]}
        role = "master"
    data["faults"] = [
        {"at": PAUSE[0], "action": "pause", "target": f"{role}-leader", "duration": PAUSE[1]},
        {"at": PARTITION[0], "action": "partition", "target": f"{role}-leader", "peer": "machine", "duration": PARTITION[1]},
        {"at": KILL, "action": "kill", "target": "machine-host-2"},
    ]
    return data


@pytest.mark.parametrize("arch", ["omega", "mesos", "borg"])
def test_leader_pause_and_partition_kill_nothing_healthy(ray_session: None, tmp_path: Path, arch: str) -> None:
    summary = run_scenario(parse_scenario(scenario(arch), f"{arch}_leader_faults.toml"), tmp_path)
    ev = read_events(tmp_path / "events.jsonl")
    by = lambda name: [e for e in ev if e["event"] == name]  # noqa: E731

    assert [f["kind"] for f in summary["faults"]] == ["pause", "partition", "kill"], summary["faults"]
    assert all(v == 0 for v in summary["invariants"].values()), summary["invariants"]
    # Nothing happened to hosts 0 and 1: never written off, nothing killed on them.
    assert not [e for e in by("machines_down") if {0, 1} & set(e["hosts"])]
    assert not [e for e in by("tasks_killed") if e.get("reason") == "written_off" and e["host"] in (0, 1)]
    assert not [e for e in by("host_reset") if e["host"] in (0, 1)]
    # The pause was outlasted by the hosts' short calls and the new leader's
    # grace, not by disruption mode. The partition silenced every host at
    # once: what spared them is either disruption mode or, on a loaded
    # machine, the watch's own stall or lease lapse restarting every clock
    # (then disruption mode is never entered, and nothing is written off
    # either). Which one is timing; that nothing healthy was
    # written off (above) is the contract; the watch's rules have their own
    # unit tests (tests/test_liveness.py).
    disrupted = [e["t"] for e in by("watch_disrupted") if e["on"]]
    fault_t = {f["kind"]: f["at_s"] for f in summary["faults"]}
    assert not [t for t in disrupted if t < fault_t["partition"]], disrupted
    # The machine that really died is written off, within its watcher's
    # silence span plus a couple of wall seconds for the checks themselves.
    # (A leader elected after the first write-off may judge it again: the
    # first is the one that counts.)
    dead = min((e for e in by("machines_down") if 2 in e["hosts"]), key=lambda e: e["t"])
    assert fault_t["kill"] < dead["t"] <= fault_t["kill"] + dead["timeout_s"] + 2 * SCALE
    j = summary["jobs"]
    assert j["submitted"] == j["scheduled"] + j["abandoned"] + j["pending"] > 0
