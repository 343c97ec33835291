"""A cell at an instant from a converted trace (the Borg paper's compaction
input) and `schedlab compaction --trace`."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np

from schedlab.schedulers.traces.snapshot import snapshot
from tests.traces.small import MACHINES, small_trace

SAMPLE = Path(__file__).resolve().parents[2] / "scenarios" / "traces" / "google2019_sample.npz"


def test_the_snapshot_holds_the_machines_present_and_the_tasks_running_then() -> None:
    t = small_trace()
    for at in (0.0, 100.0, 350.0):
        capacity, running = snapshot(t, at)
        assert capacity.shape == (MACHINES - (at >= t.span / 2), 2)
        ran = [i for i in range(t.tasks) if t.task_last_start[i] <= at and not t.task_end[i] <= at]
        assert sum(r.tasks for r in running) == len(ran)
        for r in running:
            assert r.request.shape == (2,) and r.tasks >= 1


def test_a_task_that_ended_or_had_not_started_is_not_in_it() -> None:
    t = small_trace()
    _cap, running = snapshot(t, -50.0)  # only the standing jobs had started (at -90 s)
    assert sum(r.tasks for r in running) == 6 and {r.priority for r in running} == {200, 100}
    still = np.isnan(t.task_end) & ~np.isnan(t.task_last_start)  # running when the trace ends
    assert sum(r.tasks for r in snapshot(t, 10_000.0)[1]) == int(still.sum()) > 0


def test_compaction_of_a_trace_snapshot_from_the_command_line() -> None:
    r = subprocess.run([sys.executable, "-m", "schedlab", "compaction", "--trace", str(SAMPLE), "--at", "3600", "--seeds", "2"],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    words = " ".join(r.stdout.split())  # the table's title wraps where the path is long
    assert "│ hybrid │" in words and "at 3,600 s," in words
    both = subprocess.run([sys.executable, "-m", "schedlab", "compaction", "x.toml", "--trace", str(SAMPLE)],
                          capture_output=True, text=True, timeout=60)
    assert both.returncode == 2 and both.stderr.strip() == "error: give a scenario file or --trace, not both"
