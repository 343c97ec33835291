"""Every command that starts Ray works on a machine where Ray ran before
(``~/.ray/auth_token`` exists: Ray 2.60 writes it when it starts a local
cluster, and a driver that does not send it is refused) and after the test
suite's multi-node cluster left its address record behind (Ray's
``ray_current_cluster``: a plain ``ray.init()`` waits minutes for that dead
cluster). schedlab joins or starts Ray only through
``ray_engine.connect``, which sends the token and starts an embedded Ray
with address "local", never reading the record: checked here structurally
and by running the entry points against a stale record (the ``stale_ray_tmp``
fixture, tests/conftest.py; the bench's own test uses it too)."""
from __future__ import annotations

import csv
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def test_only_the_ray_engine_calls_ray_init() -> None:
    calls = [f"{p.relative_to(ROOT)}" for top in ("actors", "schedulers", "scripts", "scenarios")
             for p in (ROOT / top).rglob("*.py") if re.search(r"\bray\.init\(", p.read_text())]
    assert calls == ["actors/engines/ray_engine.py"], calls


@pytest.mark.ray
@pytest.mark.untimed
@pytest.mark.parametrize("argv", [
    ["-m", "schedlab", "sweep", "quickstart", "-q", "--set", "duration=30,40", "--parallel", "2"],
], ids=["sweep-parallel"])  # schedlab run: tests/test_cli.py's quickstart test; the bench: tests/test_bench.py
def test_entry_points_ignore_a_dead_clusters_address(argv: list[str], stale_ray_tmp: dict[str, str], tmp_path: Path) -> None:
    # The parallel sweep's runs join the sweep's Ray: they must send the token.
    # (Also the parallel sweep's own test: each point ran as a process of its
    # own, on the sweep's Ray, and wrote its run.)
    out = tmp_path / "out"
    r = subprocess.run([sys.executable, *argv, "--out", str(out)], cwd=tmp_path, env=stale_ray_tmp,
                       capture_output=True, text=True, timeout=240)
    assert r.returncode == 0, r.stderr[-3000:]
    assert "InvalidAuthToken" not in r.stderr
    rows = list(csv.DictReader((out / "sweep.csv").open()))
    assert len(rows) == 2 and all(row["ok_runs"] == "1" for row in rows)
    for point in json.loads((out / "sweep.json").read_text())["points"]:
        (rel,) = point["runs"]["omega"]
        assert (out / rel / "run.log").exists() and json.loads((out / rel / "summary.json").read_text())["invariants"]
