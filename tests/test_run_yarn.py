"""YARN end to end on the sim engine: the shipped ``yarn_queues`` scenario
(two Capacity queues): adhoc bursts into prod's idle guarantee up to its
maximum, and preemption reclaims it for prod when prod's load arrives."""
from __future__ import annotations

import json
from pathlib import Path

from schedlab.actors.common.metrics import read_events
from schedlab.actors.run import run_scenario
import tomllib

from schedlab.schedulers.scenario.parse import parse_scenario

ROOT = Path(__file__).resolve().parents[1]
MEM = 1


def test_a_queue_bursts_into_idle_capacity_and_preemption_reclaims_it(tmp_path: Path) -> None:
    path = ROOT / "scenarios" / "yarn_queues.toml"
    sc = parse_scenario(tomllib.loads(path.read_text()) | {"engine": "sim", "duration": 450.0}, str(path))
    summary = run_scenario(sc, tmp_path)
    assert not any(summary["invariants"].values()), summary["invariants"]
    events = read_events(tmp_path / "events.jsonl")
    samples = [(e["t"], {q["queue"]: q for q in e["queues"]}) for e in events if e["event"] == "queue_usage"]
    cell_mem = 16 * 16.0
    prod_arrives = 200.0
    # The burst: before prod's first job, adhoc holds far more than its 30%.
    before = [s["root.adhoc"]["used"][MEM] for t, s in samples if 60.0 <= t < prod_arrives]
    assert before and max(before) > 0.8 * cell_mem
    assert all(s["root.prod"]["used"][MEM] == 0 for t, s in samples if t < prod_arrives)
    # The reclaim: preemption takes containers from adhoc only, and prod
    # ends above adhoc, which falls far below its burst.
    pre = [e for e in events if e["event"] == "preempted"]
    assert pre and {e["queue"] for e in pre} == {"root.adhoc"} and min(e["t"] for e in pre) >= prod_arrives
    end = [s for t, s in samples if t >= 400.0]
    assert end and all(s["root.prod"]["used"][MEM] > s["root.adhoc"]["used"][MEM] for s in end)
    assert max(s["root.adhoc"]["used"][MEM] for s in end) < 0.6 * max(before)
    y = json.loads((tmp_path / "summary.json").read_text())["yarn"]
    assert y["queues"]["root.adhoc"]["preemptions"] == len(pre) and y["queues"]["root.prod"]["preemptions"] == 0
    assert y["queues"]["root.adhoc"]["used_over_entitlement"] > 1.0
