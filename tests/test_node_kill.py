"""A node kill carried out by the driver's fault timeline
(actors.chaos.timeline) names the actors it took, without Ray: the "node"
is a process group of its own, as scripts/cluster.sh starts each node."""
from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from schedlab.actors.chaos.timeline import FaultTimeline
from schedlab.actors.common.events import EventLog
from schedlab.actors.common.members import Members
from schedlab.schedulers.faults.plan import FaultSpec, Roster

HOSTS = [f"machine-host-{i}" for i in range(4)]


def _members(live: list[str]) -> Members:
    members = Members("test", lambda h: h)
    for name in HOSTS:
        members.roles[name] = "machine"
    members.handles.update({name: object() for name in live})
    return members


def test_a_node_kill_names_the_running_actors_placed_on_its_node(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    node = subprocess.Popen(["sleep", "60"], start_new_session=True)  # a node: its own process group
    try:
        (tmp_path / "node-1.pid").write_text(str(node.pid))
        monkeypatch.setenv("SCHEDLAB_CLUSTER_DIR", str(tmp_path))
        roster = Roster({"machine": HOSTS}, nodes=("node-0", "node-1"))
        # Hosts 1 and 3 were placed on node-1; host 3 was killed before the node.
        placement = {"machine-host-0": "node-0", "machine-host-1": "node-1", "machine-host-2": "node-0",
                     "machine-host-3": "node-1"}
        log = EventLog("driver", lambda: 12.5)
        timeline = FaultTimeline((FaultSpec(10.0, "kill_node", "node-1"),), roster, _members(HOSTS[:3]), {}, log, 1, 20.0, [],
                                 placement)
        timeline.step(11.0)
        assert node.wait(timeout=10) == -9  # SIGKILL to the whole group
        [fault] = [json.loads(line) for line in log.drain()]
        assert (fault["event"], fault["kind"], fault["target"], fault["t"]) == ("fault", "kill_node", "node-1", 12.5)
        assert fault["took"] == ["machine-host-1"]
        # Killing it again is skipped, and takes nothing.
        timeline.post(FaultSpec(13.0, "kill_node", "node-1"), 1)
        timeline.step(13.0)
        [again] = [json.loads(line) for line in log.drain()]
        assert "already down" in again["skipped"] and "took" not in again
    finally:
        node.kill()
        node.wait()
