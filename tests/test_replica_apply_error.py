"""A coordinator replica whose state machine cannot apply a committed entry
says so where the invariants look (``loop_crashed``), on the sim engine."""
from __future__ import annotations

from pathlib import Path
from typing import Any

from schedlab.actors import engines
from schedlab.actors.coordinator.client import CoordinatorClient
from schedlab.actors.coordinator.group import CoordinatorGroup
from schedlab.actors.common.event_files import read_events
from schedlab.actors.common.metrics import MetricsCollector
from schedlab.actors.engines.sim_engine import SimEngine
from schedlab.schedulers.consensus.statemachine import KVStateMachine
from schedlab.schedulers.events.shared import LOOP_CRASHED
from schedlab.schedulers.scenario.parse import CoordinatorSpec


class RefusingMachine(KVStateMachine):
    def apply(self, command: Any) -> Any:
        if command[0] == "refuse":
            raise ValueError("unknown command 'refuse'")
        return super().apply(command)


def test_an_entry_the_state_machine_cannot_apply_is_a_crashed_loop(tmp_path: Path) -> None:
    eng = SimEngine()
    ns = "apply-error"
    eng.connect(None, ns)
    with engines.use(eng):
        rt = eng.runtime(1.0, ns)
        metrics = eng.spawn(MetricsCollector, "metrics", ns, str(tmp_path / "events.jsonl"))
        spec = CoordinatorSpec(replicas=3, heartbeat_ms=100.0, election_ms=1000.0)  # a leader within the deadline
        g = CoordinatorGroup(spec, ns, tmp_path, RefusingMachine, rt, metrics, 1, None, lambda h: None)
        g.spawn_all()
        g.start(0.0)
        client = CoordinatorClient("c", 3, eng.runtime(1.0, ns))
        eng.outcomes([eng.loop.create_task(client.submit(("refuse",), deadline=3.0))], timeout=5.0)
        eng.gather([eng.call(h, "stop") for h in g.live.values()])
        eng.gather([eng.call(metrics, "close")])
        eng.shutdown()
    crashed = [e for e in read_events(tmp_path / "events.jsonl") if e["event"] == LOOP_CRASHED]
    assert crashed and all("unknown command 'refuse'" in e["error"] for e in crashed)
