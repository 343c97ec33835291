"""A scenario on a real 2-node Ray cluster (scripts/cluster.sh), with one
node killed mid-run by the chaos script (kill-node, a rack failure): its
machine hosts die, Borg reschedules their tasks, and the run ends with
every invariant holding."""
from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SCENARIO = """
name = "two_node"
architecture = "borg"
seed = 4
time_scale = 20.0
duration = 500.0
[cell]
machines_per_actor = 5
[[cell.machine_classes]]
name = "s"
count = 20
cpu = 8.0
mem = 32.0
racks = 4
[workload]
prefill_utilization = 0.2
[[workload.classes]]
name = "batch"
interarrival = 5.0
tasks = 4.0
duration = { dist = "exponential", mean = 200.0 }
cpu = 1.0
mem = 2.0
priority = 120
[borg]
t_job = 0.5
[coordinator]
replicas = 3
"""

pytestmark = [pytest.mark.ray, pytest.mark.skipif(shutil.which("ray") is None, reason="needs the ray CLI")]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _cluster(state: Path, tmp: Path, *args: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, SCHEDLAB_CLUSTER_DIR=str(state), PYTHON=sys.executable, RAY_TMPDIR=str(tmp))
    env.pop("RAY_ADDRESS", None)
    return subprocess.run(["bash", str(ROOT / "scripts/cluster.sh"), *args], capture_output=True, text=True, timeout=240, env=env)


def _wait_for(path: Path, event: str, timeout: float) -> None:
    end = time.time() + timeout
    while time.time() < end:
        if path.exists() and any(json.loads(line).get("event") == event for line in path.read_text().splitlines() if line.strip()):
            return
        time.sleep(0.2)
    raise TimeoutError(f"no {event} event in {path} within {timeout:g}s")


def test_two_node_cluster_survives_a_node_kill(tmp_path: Path) -> None:
    state, out, port = tmp_path / "cluster", tmp_path / "out", _free_port()
    (tmp_path / "s.toml").write_text(SCENARIO)
    # Ray's temp dir of its own (a short path: Ray's socket paths must fit
    # 107 bytes), so the cluster's sessions and its address record
    # (ray_current_cluster) stay out of the machine's /tmp/ray.
    ray_tmp = Path(tempfile.mkdtemp(prefix="rt-", dir="/tmp"))
    up = _cluster(state, ray_tmp, "up", "2", str(port))
    assert up.returncode == 0, up.stderr
    address_file = ray_tmp / "ray" / "ray_current_cluster"
    assert address_file.read_text().strip().endswith(f":{port}")
    try:
        # The run's driver carries out chaos faults, kill_node included: it finds
        # the node's process group where cluster.sh keeps it.
        env = {k: v for k, v in os.environ.items() if k != "RAY_ADDRESS"} | {"SCHEDLAB_CLUSTER_DIR": str(state),
                                                                               "RAY_TMPDIR": str(ray_tmp)}
        run = subprocess.Popen([sys.executable, "-m", "schedlab", "run", str(tmp_path / "s.toml"), "--address",
                                f"127.0.0.1:{port}", "--out", str(out), "--no-progress"], cwd=ROOT, env=env,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            _wait_for(out / "events.jsonl", "tasks_completed", timeout=120)  # well into the run
            killed = subprocess.run([sys.executable, "-m", "schedlab", "chaos", "--run", str(out), "kill-node", "node-1"],
                                    cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
            assert killed.returncode == 0, killed.stderr[-2000:]
            assert json.loads(killed.stdout.splitlines()[-1])["target"] == "node-1"
            stdout, stderr = run.communicate(timeout=240)
        finally:
            if run.poll() is None:
                run.kill()
        assert run.returncode == 0, stderr[-2000:]
        s = json.loads((out / "summary.json").read_text())
        hosts = s["placement"]["hosts"]
        assert set(hosts.values()) == {"node-0", "node-1"}
        lost = {h for h, node in hosts.items() if node == "node-1"}
        assert [f["source"] for f in s["faults"] if f["kind"] == "kill_node"] == ["chaos"]
        down = [f for f in s["faults"] if f["kind"] in ("node_down", "host_lost")]
        assert {f["target"] for f in down} == lost
        assert s["borg"]["machines_down"]["hosts"] == sorted(int(h.rsplit("-", 1)[1]) for h in lost)
        assert not any(s["invariants"].values()), s["invariants"]
        j = s["jobs"]
        assert j["scheduled"] + j["pending"] + j["abandoned"] == j["submitted"] > 0
        assert "placement" in stdout
    finally:
        down = _cluster(state, ray_tmp, "down")
        assert down.returncode == 0, down.stderr
        # A plain ray.init() after this must not find the dead cluster's address.
        assert not address_file.exists()
        shutil.rmtree(ray_tmp, ignore_errors=True)
