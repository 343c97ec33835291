"""A scenario on a real 2-node Ray cluster (scripts/cluster.sh), with one
node killed in the last seconds of the run (kill_node, a rack failure): its
machine hosts die, Borg writes them off and reschedules their tasks, and the
run ends with every invariant holding, though the driver learns of the
hosts' deaths only when Ray declares the node dead, ~15 wall s after the
kill here: after the run's end. The node kill names the hosts it took, and
that is what ties Borg's write-offs to it."""
from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Callable

import pytest

ROOT = Path(__file__).resolve().parent.parent
SCENARIO = """
name = "two_node"
architecture = "borg"
seed = 4
time_scale = 20.0
duration = 240.0
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
# 9 wall s before the end: Borg writes the node's hosts off ~100 emulated s
# (5 wall s) after the kill; Ray declares the node dead ~15 wall s after it.
[[faults]]
at = 60.0
action = "kill_node"
target = "node-1"
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


def test_two_node_cluster_survives_a_node_kill_near_the_end(tmp_path: Path, invariants_hold: Callable) -> None:
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
        # The run's driver carries out the node kill: it finds the node's
        # process group where cluster.sh keeps it.
        env = {k: v for k, v in os.environ.items() if k != "RAY_ADDRESS"} | {"SCHEDLAB_CLUSTER_DIR": str(state),
                                                                               "RAY_TMPDIR": str(ray_tmp)}
        run = subprocess.run([sys.executable, "-m", "schedlab", "run", str(tmp_path / "s.toml"), "--address",
                              f"127.0.0.1:{port}", "--out", str(out), "--no-progress"], cwd=ROOT, env=env,
                             capture_output=True, text=True, timeout=300)
        assert run.returncode in (0, 3), run.stderr[-2000:]  # 3: an invariant broken, judged next
        s = json.loads((out / "summary.json").read_text())
        invariants_hold(s["invariants"], out)
        assert run.returncode == 0, run.stderr[-2000:]
        hosts = s["placement"]["hosts"]
        assert set(hosts.values()) == {"node-0", "node-1"}
        lost = sorted((h for h, node in hosts.items() if node == "node-1"), key=lambda h: int(h.rsplit("-", 1)[1]))
        [kill] = [f for f in s["faults"] if f["kind"] == "kill_node"]
        assert (kill["target"], kill["took"]) == ("node-1", lost)
        assert "skipped" not in kill and kill["at_s"] < s["emulated_seconds"]
        # Borg wrote every host of the node off before the end, and only those.
        assert s["borg"]["machines_down"]["hosts"] == [int(h.rsplit("-", 1)[1]) for h in lost]
        # Whatever the driver noticed of the node's death by the end, it was these hosts'.
        assert {f["target"] for f in s["faults"] if f["kind"] in ("node_down", "host_lost")} <= set(lost)
        j = s["jobs"]
        assert j["scheduled"] + j["pending"] + j["abandoned"] == j["submitted"] > 0
        assert "placement" in run.stdout
    finally:
        down = _cluster(state, ray_tmp, "down")
        assert down.returncode == 0, down.stderr
        # A plain ray.init() after this must not find the dead cluster's address.
        assert not address_file.exists()
        shutil.rmtree(ray_tmp, ignore_errors=True)
