"""Runs that broke an invariant are kept (actors.analysis.kept_runs); clean ones are not."""
from __future__ import annotations

from pathlib import Path

import pytest

from schedlab.actors.analysis.kept_runs import KEEP_ENV, keep_if_bad, violated


def run_dir(tmp_path: Path) -> Path:
    out = tmp_path / "run"
    (out / "coordinator").mkdir(parents=True)
    (out / "events.jsonl").write_text('{"event":"txn"}\n')
    (out / "coordinator" / "log-0").write_text("x")
    return out


def test_a_clean_run_keeps_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(KEEP_ENV, str(tmp_path / "kept"))
    assert keep_if_bad(run_dir(tmp_path), {"lost_commits": 0, "overcommit": 0}, "bench") is None
    assert not (tmp_path / "kept").exists()


def test_a_bad_run_is_copied_whole_and_never_over_another(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(KEEP_ENV, str(tmp_path / "kept"))
    out = run_dir(tmp_path)
    bad = {"lost_commits": 1, "overcommit": 0}
    first = keep_if_bad(out, bad, "test_mesos[x/y]")
    second = keep_if_bad(out, bad, "test_mesos[x/y]")
    assert violated(bad) == {"lost_commits": 1}
    assert first is not None and second is not None and first != second
    assert first.parent == tmp_path / "kept" and first.name.startswith("test_mesos_x_y")
    assert (first / "events.jsonl").read_text() == '{"event":"txn"}\n' and (second / "coordinator" / "log-0").exists()
