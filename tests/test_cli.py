"""The schedlab command as a user meets it (real subprocesses)."""
from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from scripts.cli import apply_set, load_scenario
from schedulers.scenario import ScenarioError

ROOT = Path(__file__).resolve().parent.parent


def schedlab(*args: str, timeout: float = 240) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "RAY_ADDRESS"}
    return subprocess.run(
        [sys.executable, "-m", "scripts.cli", *args], cwd=ROOT, capture_output=True, text=True, timeout=timeout, env=env
    )


def test_malformed_scenario_exits_2_with_one_line(tmp_path: Path) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_text((ROOT / "scenarios/quickstart.toml").read_text().replace("duration = 1200.0", "duration = -3.0"))
    r = schedlab("run", str(bad))
    assert r.returncode == 2
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and "bad.toml: duration: must be > 0" in lines[0]
    assert "schedlab-" not in r.stdout  # no namespace was ever created: nothing started


def test_not_toml_and_missing_file(tmp_path: Path) -> None:
    bad = tmp_path / "broken.toml"
    bad.write_text("name = [unclosed\n")
    r = schedlab("run", str(bad))
    assert r.returncode == 2 and "not valid TOML" in r.stderr
    r = schedlab("run", str(tmp_path / "absent.toml"))
    assert r.returncode == 2 and "cannot read scenario" in r.stderr


def test_no_cluster_at_address() -> None:
    with socket.socket() as s:  # a port that is certainly closed: bound, never listening
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
        r = schedlab("run", "scenarios/quickstart.toml", "--address", f"127.0.0.1:{port}")
    assert r.returncode == 2
    assert f"no Ray cluster at 127.0.0.1:{port}" in r.stderr


def test_set_overrides_nested_values() -> None:
    sc = load_scenario(ROOT / "scenarios/omega_conflicts.toml", ["omega.schedulers.1.t_job=30", "omega.conflict_mode=sequence"])
    assert sc.omega.schedulers[1].t_job == 30.0
    assert sc.omega.conflict_mode.value == "sequence"
    with pytest.raises(ScenarioError, match="unknown key"):
        load_scenario(ROOT / "scenarios/omega_conflicts.toml", ["omega.schedulers.0.speed=3"])
    with pytest.raises(ScenarioError, match="expected KEY=VALUE"):
        apply_set({}, "novalue")


@pytest.mark.ray
def test_quickstart_runs_end_to_end_from_the_command(tmp_path: Path) -> None:
    """The README's first command, shortened: embedded Ray, live progress
    (forced on, as in a terminal), table, files."""
    env_cols = {"COLUMNS": "200", "FORCE_COLOR": "0", "TTY_COMPATIBLE": "1", "TTY_INTERACTIVE": "1"}
    os.environ.update(env_cols)
    try:
        r = schedlab("run", "scenarios/quickstart.toml", "--out", str(tmp_path), "--set", "duration=200")
    finally:
        for k in env_cols:
            os.environ.pop(k, None)
    assert r.returncode == 0, r.stderr[-2000:]
    assert "quickstart" in r.stdout and "invariants" in r.stdout and "all hold" in r.stdout
    assert "attempts" in r.stdout and "━" in r.stdout  # the progress line and bar were drawn
    s = json.loads((tmp_path / "summary.json").read_text())
    assert s["emulated_seconds"] == 200 and s["jobs"]["submitted"] > 0
    assert (tmp_path / "events.jsonl").stat().st_size > 0
