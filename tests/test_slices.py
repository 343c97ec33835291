"""Long passes cut into slices (``actors.common.slices``) so a leader's
lease renewal is not kept waiting: the slice is wall time (a sim run, whose
clock stands still while code runs, is never cut, and decides as before);
cut after every step on the sim engine (``SLICE_WALL_S = 0``), YARN's
node heartbeats and SLURM's scheduling passes still fail over without
breaking an invariant."""
from __future__ import annotations

import asyncio
import collections
import copy
import tomllib
from pathlib import Path

import pytest

import schedlab.actors.common.slices as slices_mod
from schedlab.actors.common.event_files import read_events
from schedlab.actors.common.slices import Slices
from schedlab.actors.run import run_scenario
from schedlab.schedulers.archs.slurm.events import SLURM_END, SLURM_START, SLURMCTLD_RESTORED
from schedlab.schedulers.events.shared import JOB_SCHEDULED
from schedlab.schedulers.scenario.parse import parse_scenario

SCENARIOS = Path(__file__).resolve().parents[1] / "scenarios"


class Clock:
    """A runtime with a wall clock the test moves, and a yield that counts."""

    def __init__(self) -> None:
        self.t = 0.0
        self.yields = 0

    def wall_clock(self) -> float:
        return self.t

    async def sleep_wall(self, seconds: float) -> None:
        self.yields += 1
        await asyncio.sleep(seconds)


def test_a_slice_is_due_after_its_wall_time_and_a_cut_yields_and_starts_the_next() -> None:
    rt = Clock()
    s = Slices(rt, wall_s=0.02)  # type: ignore[arg-type]
    assert not s.due()
    rt.t = 0.019
    assert not s.due()
    rt.t = 0.02
    assert s.due()
    asyncio.run(s.cut())
    assert rt.yields == 1 and s.cuts == 1 and not s.due()
    rt.t = 0.05
    assert s.due()


def _sim(name: str, tmp_path: Path, **top: object) -> tuple[dict, collections.Counter]:
    path = SCENARIOS / f"{name}.toml"
    data = tomllib.loads(path.read_text()) | {"engine": "sim"} | top
    summary = run_scenario(parse_scenario(copy.deepcopy(data), str(path)), tmp_path)
    return summary, collections.Counter(e["event"] for e in read_events(tmp_path / "events.jsonl"))


@pytest.fixture
def cut_everywhere(monkeypatch: pytest.MonkeyPatch) -> collections.Counter:
    """Every slice is due at once (a cut after every step), counted."""
    monkeypatch.setattr(slices_mod, "SLICE_WALL_S", 0.0)
    cuts: collections.Counter = collections.Counter()
    cut = Slices.cut

    async def counted(self: Slices) -> None:
        cuts["cut"] += 1
        await cut(self)

    monkeypatch.setattr(Slices, "cut", counted)
    return cuts


def test_yarn_node_heartbeats_cut_per_machine_still_fail_over_cleanly(tmp_path: Path,
                                                                     cut_everywhere: collections.Counter) -> None:
    summary, kinds = _sim("yarn_ha", tmp_path, duration=320.0)
    assert cut_everywhere["cut"] > 100
    assert not any(summary["invariants"].values()), summary["invariants"]
    assert kinds["rm_elected"] == 2 and kinds["container_launched"] > 20  # the start, and the takeover after the kill
    assert summary["jobs"]["scheduled"] > 0


def test_slurm_passes_cut_per_job_still_fail_over_cleanly(tmp_path: Path, cut_everywhere: collections.Counter) -> None:
    summary, kinds = _sim("slurm_failover", tmp_path)
    assert cut_everywhere["cut"] > 20
    assert not any(summary["invariants"].values()), summary["invariants"]
    assert kinds["slurmctld_active"] == 2 and kinds["slurm_start"] > 10
    assert summary["jobs"]["submitted"] == summary["jobs"]["scheduled"] + summary["jobs"]["pending"]


def test_a_sim_run_is_never_cut(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cuts: list[int] = []
    cut = Slices.cut

    async def counted(self: Slices) -> None:
        cuts.append(1)
        await cut(self)

    monkeypatch.setattr(Slices, "cut", counted)
    summary, _ = _sim("slurm_failover", tmp_path)
    assert not cuts and summary["jobs"]["scheduled"] > 0


def test_a_slurm_pass_still_running_when_the_run_ends_starts_nothing_more(tmp_path: Path,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """As live at 10,000 nodes: a pass takes wall time (here each slice a
    fifth of a virtual wall second, 5 emulated s), so the run can end in the
    middle of one. The controller stops before the daemons' last poll: a
    pass that went on would start jobs no daemon pulls any more (live,
    thousands of lost commits). It ends at its next cut instead."""
    from schedlab.actors.archs.slurm.slurmctld import SlurmController

    monkeypatch.setattr(slices_mod, "SLICE_WALL_S", 0.0)

    async def slow_cut(self: Slices) -> None:
        await self.rt.sleep_wall(0.2)
        self.cuts += 1

    monkeypatch.setattr(Slices, "cut", slow_cut)
    late: list[int] = []
    log_starts = SlurmController._log_starts

    def logged(self: SlurmController, started: list, now: float) -> None:
        if not self.running:
            late.append(len(started))
        log_starts(self, started, now)

    monkeypatch.setattr(SlurmController, "_log_starts", logged)
    summary, kinds = _sim("slurm_failover", tmp_path)
    assert not any(summary["invariants"].values()), summary["invariants"]
    assert kinds["slurm_start"] > 10 and summary["jobs"]["pending"] > 10  # passes were long: a queue stood at the end
    assert late == []


def test_a_job_started_by_a_killed_controller_whose_events_died_is_still_scheduled(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A controller killed before it shipped its events takes the
    job_scheduled of every job it started with it (live, the crosscheck's
    slurm_failover seed 6 lost one so). The controller that restores the
    saved state finds them started and says so again (``recovered``): here
    the controllers ship their events only every 500 emulated s, so the
    whole first incarnation's events die with it at t = 300."""
    from schedlab.actors.archs.slurm.slurmctld import SlurmController

    monkeypatch.setattr(SlurmController, "EVENT_FLUSH_EVERY", 400)  # x 1.25 emulated s per batch interval
    _summary, kinds = _sim("slurm_failover", tmp_path)
    events = read_events(tmp_path / "events.jsonl")
    restored = next(e for e in events if e["event"] == SLURMCTLD_RESTORED)
    started_after = {e["job_id"] for e in events if e["event"] == SLURM_START}
    ran_through = {e["job_id"] for e in events if e["event"] == SLURM_END and e["actor"] == restored["actor"]
                   and e["job_id"] not in started_after}  # started by the killed controller, ended under the new one
    scheduled = {e["job_id"] for e in events if e["event"] == JOB_SCHEDULED}
    assert ran_through and kinds["slurmctld_restored"] == 1
    assert ran_through <= scheduled, sorted(ran_through - scheduled)
