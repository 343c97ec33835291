"""Cell compaction, on cells small enough to work out by hand."""
from __future__ import annotations

import numpy as np

from schedlab.schedulers.archs.borg.compaction import SnapshotJob, fits, smallest_cell
from schedlab.schedulers.archs.borg.placement import PlacementParams
from schedlab.experiments.compaction import main


def test_smallest_cell_by_hand() -> None:
    cap = np.tile([4.0, 16.0], (6, 1))
    jobs = [SnapshotJob(np.array([4.0, 1.0]), 3, 100)]  # one whole machine per task
    for policy in ("best_fit", "worst_fit", "hybrid"):
        assert smallest_cell(cap, jobs, PlacementParams(policy), seed=3) == 3
    too_big = [SnapshotJob(np.array([4.0, 1.0]), 7, 100)]
    assert smallest_cell(cap, too_big, PlacementParams("best_fit"), seed=3) == 7  # n + 1: does not fit at all


def test_packing_beats_spreading_when_a_big_task_comes_last() -> None:
    """Two machines of 4 cpu: four 1-cpu tasks, then one 4-cpu task. Packing
    leaves a whole machine free; spreading leaves 2 + 2 and strands it."""
    cap = np.tile([4.0, 16.0], (2, 1))
    jobs = [SnapshotJob(np.array([1.0, 1.0]), 4, 200), SnapshotJob(np.array([4.0, 1.0]), 1, 100)]
    rng = np.random.default_rng(0)
    assert fits(cap, jobs, PlacementParams("best_fit"), rng)
    assert not fits(cap, jobs, PlacementParams("worst_fit"), rng)


def test_compaction_script_bad_policy_exits_2(capsys) -> None:
    assert main(["scenarios/borg_compaction.toml", "--policies", "first_fit"]) == 2
    assert "unknown scoring policy 'first_fit'" in capsys.readouterr().err
