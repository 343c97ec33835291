"""Nothing of the fault timeline happens after the run's end (sim engine).

A fault aimed at a leader asks the role who leads; a paused leader answers
only when its pause ends (or the driver's patience, 2 wall s, runs out), so
one step of the timeline can outlast the run. A deferred fault carried out
past the end could kill a leader while another replica is already dead: no
quorum at the stop, and the leader's queue never reported."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from schedlab.actors.chaos.timeline import FaultTimeline
from schedlab.actors.common.events import EventLog
from schedlab.actors.common.members import Members
from schedlab.actors.common.event_files import read_events
from schedlab.actors.run import run_scenario
from schedlab.schedulers.events.shared import FAULT
from schedlab.schedulers.faults.plan import FaultSpec, Roster
from schedlab.schedulers.scenario.parse import parse_scenario
from tests.conftest import small_scenario_data

SCALE = 20.0  # 2 wall s (a status call's patience) = 40 emulated s
END = 100.0


def scenario() -> dict[str, Any]:
    data = small_scenario_data(engine="sim", time_scale=SCALE, duration=END)
    data["architecture"] = "borg"
    del data["omega"]
    data["borg"] = {"t_job": 0.5, "t_task": 0.01}
    data["coordinator"] = {"replicas": 3}
    # Due in one step, 10 s before the end: the leader paused past the end,
    # then two leader kills, whose lookups wait for the paused leader (the
    # first finds none: the others are electing; the second the new one).
    data["faults"] = [
        {"at": 90.0, "action": "pause", "target": "coordinator-leader", "duration": 30.0},
        {"at": 90.0, "action": "kill_leader", "restart_after": 5.0},
        {"at": 90.0, "action": "kill_leader", "restart_after": 5.0},
    ]
    return data


def test_no_fault_is_carried_out_after_the_end_and_those_held_back_are_logged_skipped(tmp_path: Path) -> None:
    summary = run_scenario(parse_scenario(scenario(), "faults_at_the_end.toml"), tmp_path)
    faults = [e for e in read_events(tmp_path / "events.jsonl") if e["event"] == FAULT]
    done = [(f["kind"], round(f["t"], 3)) for f in faults if not f.get("skipped")]
    assert [kind for kind, _ in done] == ["pause"], faults
    assert all(t <= END for _, t in done), faults
    # The leader kills waited for a leader until the run ended: said, not silently dropped.
    held = [f for f in faults if f.get("skipped")]
    assert [f["kind"] for f in held] == ["kill_leader", "kill_leader"], faults
    assert all("run ended" in f["skipped"] and f["t"] <= END + 0.1 for f in held), held  # logged as the run stops
    assert all(v == 0 for v in summary["invariants"].values()), summary["invariants"]


class _Group:
    """A leader role's controller: who leads, and how long each lookup was allowed."""

    def __init__(self, clock: list[float], lookup_s: float) -> None:
        self.clock, self.lookup_s, self.asked = clock, lookup_s, []

    def lead(self, within: float = 2.0) -> tuple[int, int] | None:
        self.asked.append(within)
        self.clock[0] += min(self.lookup_s, within * SCALE)  # the paused leader's answer, or patience out
        return None


def test_the_timeline_asks_no_longer_than_the_run_lasts_and_logs_what_it_held_back() -> None:
    clock = [95.0]
    log = EventLog("driver", lambda: clock[0])
    group = _Group(clock, lookup_s=40.0)
    roster = Roster({"coordinator": ["coordinator-0", "coordinator-1", "coordinator-2"]}, leader_roles=("coordinator",),
                    kill_leader={"kill_leader": "coordinator"})
    faults = (FaultSpec(94.0, "kill_leader"), FaultSpec(94.0, "pause", "coordinator-leader", duration=5.0),
              FaultSpec(120.0, "kill_leader"))
    timeline = FaultTimeline(faults, roster, Members("test", lambda h: h), {"coordinator": group}, log,  # type: ignore[dict-item]
                             1, SCALE, [], end=END)
    timeline.step(95.0)
    assert group.asked == [pytest.approx(5.0 / SCALE)] and clock[0] == pytest.approx(END)  # the time left, not 2 wall s
    assert not log.drain()  # held back for a leader; the pause behind it not tried: the run is over
    timeline.step(END)
    assert len(group.asked) == 1  # nothing asked at or after the end
    timeline.close(END)
    out = [json.loads(line) for line in log.drain()]
    assert [(e["kind"], e["skipped"]) for e in out] == [
        ("pause", "the run ended before it was carried out"),
        ("kill_leader", "the run ended while it waited for a leader"),
    ]  # the one due after the end never came due
    assert out[1]["waited_s"] == 6.0
