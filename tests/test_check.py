"""``schedlab check OUT``: a saved run's invariants, from its files alone."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from schedlab.actors.analysis.saved_run import NotARun, check_saved
from schedlab.schedulers.events.shared import TASKS_LAUNCHED
from schedlab.cli.main import main
from tests.test_run_omega import small_run  # noqa: F401  (module fixture: one sim run)


def test_saved_run_checks_like_the_live_summary(small_run, capsys) -> None:  # noqa: F811
    summary, _events, _sc, out = small_run
    assert check_saved(out) == summary["invariants"]
    assert main(["check", str(out)]) == 0
    printed = json.loads(capsys.readouterr().out)
    assert printed["invariants"] == summary["invariants"]


def test_a_tampered_run_fails_the_check(small_run, tmp_path: Path, capsys) -> None:  # noqa: F811
    _summary, events, _sc, out = small_run
    copy = tmp_path / "run"
    shutil.copytree(out, copy)
    # A second task on a full machine: the replay must see the machine over capacity.
    launched = next(e for e in events if e["event"] == TASKS_LAUNCHED and not e["prefill"])
    job, task, machine, *_ = launched["tasks"][0]
    forged = dict(launched, t=launched["t"] + 1e-3, tasks=[[10**6, 0, machine, 1e3, 1e3, launched["t"]]])
    with (copy / "events.jsonl").open("a") as f:
        f.write(json.dumps(forged) + "\n")
    assert check_saved(copy)["overcommit"] >= 1
    assert main(["check", str(copy)]) == 3
    assert "invariants violated" in capsys.readouterr().err


def test_not_a_run_directory(tmp_path: Path, capsys) -> None:
    with pytest.raises(NotARun):
        check_saved(tmp_path)
    assert main(["check", str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "not a schedlab run directory" in err
