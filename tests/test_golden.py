"""Golden summaries: short sim runs of shipped scenarios (one or two per
architecture family), each summary.json compared value by value with
``tests/golden/<scenario>.json``. The sim engine is deterministic, so a
change in any number is a diff to review, not noise. After an intended
change, regenerate them all with one command and review ``git diff tests/golden``::

    python3 -m pytest -n0 tests/test_golden.py --update-golden

Keys named for wall time (``wall_seconds``, ``*_wall_ms_*``, ``downtime_wall_s``)
are left out: on sim they are the virtual clock's, but they measure the
substrate rather than the scheduling the files guard."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import schedlab

GOLDEN = Path(__file__).parent / "golden"
REGEN = "python3 -m pytest -n0 tests/test_golden.py --update-golden"

# shipped scenario -> emulated seconds: a few CPU seconds each, ~10 s in all
CASES = {
    "quickstart": 300.0,          # Omega: optimistic commits
    "mesos_failover": 500.0,      # Mesos offers, a master killed and replaced
    "borg_priorities": 300.0,     # Borg: priority bands, quota, preemption
    "k8s_preemption": 300.0,      # Kubernetes: the framework's plugins, preemption
    "yarn_queues": 300.0,         # YARN: capacity queues
    "slurm_failover": 500.0,      # SLURM: backfill, slurmctld failover
    "condor_matchmaking": 300.0,  # HTCondor: ClassAd matchmaking
    "dispatcher": 300.0,          # the central dispatcher
}


def comparable(value: Any) -> Any:
    """``value`` as JSON reads it back, without the keys named for wall time."""
    if isinstance(value, dict):
        return {k: comparable(v) for k, v in value.items() if "wall" not in k}
    if isinstance(value, (list, tuple)):
        return [comparable(v) for v in value]
    return value


def differences(want: Any, got: Any, where: str = "") -> list[str]:
    """Every value that differs, one line each: ``path: want -> got``."""
    if isinstance(want, dict) and isinstance(got, dict):
        out = []
        for k in sorted(set(want) | set(got), key=str):
            path = f"{where}.{k}" if where else str(k)
            if k not in got:
                out.append(f"{path}: {json.dumps(want[k])} -> (gone)")
            elif k not in want:
                out.append(f"{path}: (new) -> {json.dumps(got[k])}")
            else:
                out.extend(differences(want[k], got[k], path))
        return out
    if isinstance(want, list) and isinstance(got, list) and len(want) == len(got):
        return [d for i, (w, g) in enumerate(zip(want, got)) for d in differences(w, g, f"{where}[{i}]")]
    return [] if want == got else [f"{where}: {json.dumps(want)} -> {json.dumps(got)}"]


def render(summary: Any) -> str:
    return json.dumps(summary, indent=1, sort_keys=True) + "\n"


@pytest.mark.parametrize("name", sorted(CASES))
def test_sim_summary_matches_its_golden_file(name: str, tmp_path: Path, request: pytest.FixtureRequest) -> None:
    got = comparable(json.loads(json.dumps(schedlab.run(name, engine="sim", duration=CASES[name], out=tmp_path).summary)))
    path = GOLDEN / f"{name}.json"
    if request.config.getoption("--update-golden"):
        path.write_text(render(got))
    assert path.is_file(), f"no golden summary for {name}: write it with `{REGEN}`"
    diffs = differences(json.loads(path.read_text()), got)
    shown = "\n".join(f"  {d}" for d in diffs[:40]) + (f"\n  ... and {len(diffs) - 40} more" if len(diffs) > 40 else "")
    assert not diffs, (f"{name}'s sim summary differs from {path.relative_to(GOLDEN.parent.parent)} in {len(diffs)} values "
                       f"(golden -> now):\n{shown}\nIf the change is intended, regenerate with `{REGEN}` and review the diff.")


def test_every_golden_file_has_its_case() -> None:
    assert sorted(p.stem for p in GOLDEN.glob("*.json")) == sorted(CASES)


def test_differences_names_each_changed_value_and_comparable_drops_wall_time() -> None:
    want = {"jobs": {"completed": 20, "pending": 0}, "schedulers": [{"name": "a", "busyness": 0.1}], "gone": 1}
    got = {"jobs": {"completed": 21, "pending": 0}, "schedulers": [{"name": "a", "busyness": 0.2}], "new": [1]}
    assert differences(want, got) == ["gone: 1 -> (gone)", "jobs.completed: 20 -> 21", "new: (new) -> [1]",
                                      "schedulers[0].busyness: 0.1 -> 0.2"]
    assert differences(want, want) == []
    assert differences({"x": [1, 2]}, {"x": [1]}) == ["x: [1, 2] -> [1]"]
    summary = {"wall_seconds": 6.2, "substrate": {"rtt_wall_ms_p50": 0.02, "rtt_emulated_s_p50": 0.001},
               "failovers": [{"role": "master", "downtime_wall_s": 1.0, "downtime_emulated_s": 50.0}]}
    assert comparable(summary) == {"substrate": {"rtt_emulated_s_p50": 0.001},
                                   "failovers": [{"role": "master", "downtime_emulated_s": 50.0}]}
