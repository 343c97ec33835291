"""The trace samples schedlab ships (scenarios/traces/, written by
scripts/make_trace_samples.py): each converted sample is what its sources
convert to today, each replays (sim), the shipped comparison parses on all
ten architectures, and a replay runs live on a real local Ray with
machines joining and leaving."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from schedlab.actors.run import run_scenario
from schedlab.schedulers import arch as registry
from schedlab.schedulers.scenario.parse import parse_comparison, parse_scenario
from schedlab.schedulers.scenario.toml_table import read_toml
from schedlab.schedulers.traces.form import Trace
from schedlab.schedulers.traces.readers import FORMATS, convert
from tests.conformance.scenarios import conformance_data

ROOT = Path(__file__).resolve().parents[2]
TRACES = ROOT / "scenarios" / "traces"
SAMPLED = ("google2019", "google2011", "alibaba2018", "azure2020")


@pytest.mark.parametrize("fmt", SAMPLED)
def test_a_shipped_conversion_is_what_its_sources_convert_to(fmt: str) -> None:
    shipped, fresh = Trace.load(TRACES / f"{fmt}_sample.npz"), convert(TRACES / fmt, fmt)
    for name in ("machine_time", "machine_id", "machine_capacity", "job_source", "job_submit", "job_tier", "task_job",
                 "task_request", "task_start", "task_end", "task_end_reason", "task_machine"):
        np.testing.assert_array_equal(getattr(shipped, name), getattr(fresh, name), err_msg=f"{fmt}: {name}")
    assert shipped.tiers == fresh.tiers and shipped.resources == fresh.resources


def _pairs() -> list[tuple[str, str]]:
    """Each sampled format once, on architectures in turn (every architecture
    replays a trace with machines coming and going in test_replay and
    test_machine_events; here each format's own sample replays)."""
    archs = registry.names()
    return [(fmt, archs[i % len(archs)]) for i, fmt in enumerate(SAMPLED)]


@pytest.mark.parametrize("fmt, arch", _pairs())
def test_a_shipped_sample_replays(fmt: str, arch: str, tmp_path: Path) -> None:
    trace = Trace.load(TRACES / f"{fmt}_sample.npz")
    data = conformance_data(arch) | {"engine": "sim", "duration": 200.0}
    data["cell"] = {"machines_per_actor": 1}
    service = {"google2019": ("production", "monitoring"), "google2011": ("production", "monitoring"),
               "alibaba2018": ("online",)}.get(fmt, ())
    data["workload"] = {"trace": {"file": str(TRACES / f"{fmt}_sample.npz"), "compress": 20.0, "max_jobs": 80,
                                  "units": {"cpu": 64.0 if fmt.startswith("google") or fmt == "azure2020" else 1.0,
                                            "mem": 256.0 if fmt.startswith("google") or fmt == "azure2020" else 1.0},
                                  "classes": {t: "service" if t in service else "batch" for t in trace.tiers}}}
    classes = {c for c in data["workload"]["trace"]["classes"].values()}
    data[arch] = registry.spec_of(arch).example(tuple(sorted(classes)))
    summary = run_scenario(parse_scenario(data, f"<{fmt} on {arch}>"), tmp_path)
    assert not any(summary["invariants"].values()), summary["invariants"]
    assert summary["jobs"]["submitted"] > 0 and summary["jobs"]["scheduled"] > 0


def test_the_shipped_comparison_parses_for_every_architecture() -> None:
    path = ROOT / "scenarios" / "trace_replay.toml"
    scs = parse_comparison(read_toml(path), str(path))
    assert [s.architecture for s in scs] == list(registry.names()) or {s.architecture for s in scs} == set(registry.names())
    trace = Trace.load(TRACES / "google2019_sample.npz")
    assert scs[0].cell.machines == trace.machines  # every machine the six hours see, some joining later


def test_every_format_has_a_reader() -> None:
    assert set(SAMPLED) < set(FORMATS)


def _small_cell_with_comings_and_goings(out: Path) -> tuple[Path, float]:
    """The Google-2019 sample scaled down (a share of its machines and jobs,
    as ``trace convert --scale`` keeps them) to a cell where, early on, a
    machine joins and another leaves: a live run's host actors stay few.
    Returns the file and the compression that brings both into 60 s."""
    from schedlab.schedulers.traces.builder import Select
    from schedlab.schedulers.traces.lifecycle import presence

    for seed in range(100):
        t = convert(TRACES / "google2019", "google2019", Select(scale=0.3, seed=seed))
        spans = presence(t, 0.0, t.span).intervals
        joins = [s[0][0] for s in spans if s[0][0] > 0]
        leaves = [b for s in spans for _a, b in s if b != float("inf")]
        if joins and leaves and t.machines <= 16:
            path = out / "small.npz"
            t.save(path)
            return path, max(min(joins), min(leaves)) / 50.0
    raise AssertionError("no seed gives a small cell with a machine joining and one leaving")


@pytest.mark.ray
def test_a_trace_replays_live_with_machines_joining_and_leaving(ray_session: object, tmp_path: Path) -> None:
    path = ROOT / "scenarios" / "trace_replay.toml"
    data = read_toml(path)
    for other in data.pop("architectures"):
        if other != "omega":
            data.pop(other, None)
    data |= {"architecture": "omega", "engine": "ray", "duration": 60.0, "time_scale": 20.0}
    small, compress = _small_cell_with_comings_and_goings(tmp_path)
    data["workload"]["trace"] |= {"file": str(small), "compress": compress}
    sc = parse_scenario(data, str(path))
    summary = run_scenario(sc, tmp_path / "out")
    assert summary["engine"] == "ray" and not any(summary["invariants"].values()), summary["invariants"]
    assert summary["jobs"]["scheduled"] > 0 and summary["trace"]["tasks_compared"] > 0
    done = [(f["kind"], f["target"]) for f in summary["faults"] if not f.get("skipped")]
    joins = [f for f in sc.faults if f.at == 0.0 and f.restart_after is not None and f.restart_after < sc.duration]
    leaves = [f for f in sc.faults if f.at > 0.0]
    assert joins and leaves
    assert ("restart", joins[0].target) in done and ("kill", leaves[0].target) in done
