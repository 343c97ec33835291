"""scripts/bench_kernel.py: ``--quick`` runs every workload on both loops
and prints its table; each workload schedules the loop callbacks its
operation should (the same on both loops: the kernel changes what an event
costs, not how many there are). No timing assertions: speed targets belong
to the bench's own output, not to tests on a shared machine."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from schedlab.actors.engines.reference_loop import ReferenceLoop
from schedlab.actors.engines.virtual_loop import VirtualLoop
from schedlab.scripts import bench_kernel


def test_quick_bench_prints_a_row_per_workload(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "kernel.json"
    assert bench_kernel.main(["--quick", "--json", str(out)]) == 0
    printed = capsys.readouterr().out
    rows = json.loads(out.read_text())
    assert [r["workload"] for r in rows] == list(bench_kernel.WORKLOADS)
    for r in rows:
        assert f"| {r['workload']} |" in printed
        assert r["ops"] > 0 and r["old_ns"] > 0 and r["new_ns"] > 0
        assert r["old_callbacks"] == pytest.approx(r["new_callbacks"])


@pytest.mark.parametrize("name, callbacks", [("timer", 2.0), ("call_soon", 1.0), ("task step", 1.0)])
def test_each_operation_schedules_the_callbacks_it_should(name: str, callbacks: float) -> None:
    """A sleep is a timer and the task's wake-up; a callback is one; a task
    step is one (plus the start and end of ``WIDTH`` tasks)."""
    workload = bench_kernel.WORKLOADS[name][0]
    for cls in (ReferenceLoop, VirtualLoop):
        assert bench_kernel.callbacks_per_op(workload, cls, 10_000) == pytest.approx(callbacks, abs=0.05)
