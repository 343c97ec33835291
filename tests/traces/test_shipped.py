"""The trace samples schedlab ships (scenarios/traces/, written by
scripts/make_trace_samples.py): each converted sample is what its sources
convert to today, each replays on architectures (every architecture meets
one format's sample; sim), the shipped comparison parses on all ten, and a
replay runs live on a real local Ray."""
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
    """Each sampled format on every architecture in turn: all ten meet one."""
    archs = registry.names()
    return [(SAMPLED[i % len(SAMPLED)], a) for i, a in enumerate(archs)]


@pytest.mark.parametrize("fmt, arch", _pairs())
def test_a_shipped_sample_replays(fmt: str, arch: str, tmp_path: Path) -> None:
    trace = Trace.load(TRACES / f"{fmt}_sample.npz")
    data = conformance_data(arch) | {"engine": "sim", "duration": 200.0}
    data["cell"] = {"machines_per_actor": 10}
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
    assert scs[0].cell.machines == Trace.load(TRACES / "google2019_sample.npz").machines_at(0.0)[0].size


def test_every_format_has_a_reader() -> None:
    assert set(SAMPLED) < set(FORMATS)


@pytest.mark.ray
def test_a_trace_replays_live(ray_session: object, tmp_path: Path) -> None:
    path = ROOT / "scenarios" / "trace_replay.toml"
    scs = {s.architecture: s for s in parse_comparison(read_toml(path), str(path))}
    from dataclasses import replace
    sc = replace(scs["omega"], engine="ray", duration=60.0, time_scale=20.0)
    summary = run_scenario(sc, tmp_path)
    assert summary["engine"] == "ray" and not any(summary["invariants"].values()), summary["invariants"]
    assert summary["jobs"]["scheduled"] > 0 and summary["trace"]["tasks_compared"] > 0
