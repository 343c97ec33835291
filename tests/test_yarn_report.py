"""YARN's report plots (``actors/archs/yarn/report.py``): extraction from
synthetic events of the real shapes (pure: no Ray, no drawing), the
registration, and one end-to-end report of ``yarn_queues`` on the sim
engine."""
from __future__ import annotations

import json
import math
import tomllib
from pathlib import Path

import pytest
from schedlab.actors.analysis.report_parts import Events, Skip
from schedlab.actors.arch import of_summary
from schedlab.actors.archs.yarn import report
from schedlab.actors.analysis.run_info import RunInfo
from schedlab.actors.archs.yarn.summary import yarn_section
from schedlab.actors.run import run_scenario
from schedlab.schedulers.archs.yarn.events import CONTAINER_ALLOCATED, QUEUE_USAGE
from schedlab.schedulers.events.shared import PREEMPTED
from schedlab.schedulers.scenario.parse import parse_scenario
from schedlab.api.report import RUN_PLOTS, TIMELINE, load_run, write_report

ROOT = Path(__file__).resolve().parents[1]
END = 100.0
SUMMARY = {"architecture": "yarn", "emulated_seconds": END}


def usage(t: float, cell: float, **queues: tuple[float, float]) -> dict:
    """A ``queue_usage`` event as the RM emits it: root (whose entitlement is
    the cell), a parent ``root.a`` and the given leaves under it, each
    (used mem, entitled mem); cpu is 1/4 of memory, so a mix-up shows."""
    def q(name: str, used: float, ent: float, pre: int = 0) -> dict:
        return {"queue": name, "used": [used / 4, used], "pending": [0.0, 0.0], "entitlement": [ent / 4, ent],
                "preemptions": pre}
    total_used = sum(u for u, _ in queues.values())
    return {"event": QUEUE_USAGE, "t": t, "queues": [q("root", total_used, cell), q("root.a", total_used, cell)]
            + [q(f"root.a.{n}", u, e) for n, (u, e) in queues.items()]}


def preempted(t: float, queue: str, am: bool = False) -> dict:
    return {"event": PREEMPTED, "t": t, "app": 1, "task": 0, "container": 9, "node": 0, "queue": queue, "am": am}


def allocated(t: float, queue: str, level: str) -> dict:
    return {"event": CONTAINER_ALLOCATED, "t": t, "app": 1, "task": 0, "container": 9, "node": 0, "queue": queue,
            "locality": level, "latency": 0.5, "at": t}


def events(*evs: dict) -> Events:
    out: Events = {}
    for e in evs:
        out.setdefault(e["event"], []).append(e)
    return out


# ---- queue usage ---------------------------------------------------------------

def test_leaves_are_the_queues_no_other_name_extends_sorted() -> None:
    assert report.leaves(["root", "root.b", "root.a", "root.a.x", "root.ab"]) == ["root.a.x", "root.ab", "root.b"]


def test_queue_usage_is_memory_as_a_share_of_the_root_entitlement_per_sample() -> None:
    ev = events(usage(0.0, 200.0, x=(50.0, 60.0), y=(0.0, 140.0)),
                usage(10.0, 100.0, x=(80.0, 30.0), y=(20.0, 70.0)),  # the cell shrank to 100
                usage(END + 1.0, 200.0, x=(0.0, 60.0), y=(0.0, 140.0)))  # after the run's end: left out
    d = report.queue_data(SUMMARY, ev)
    assert d["t"] == [0.0, 10.0]
    assert list(d["queues"]) == ["root.a.x", "root.a.y"]  # leaves only, not root or root.a
    assert d["queues"]["root.a.x"] == {"used": [0.25, 0.8], "entitlement": [0.3, 0.3]}
    assert d["queues"]["root.a.y"] == {"used": [0.0, 0.2], "entitlement": [0.7, 0.7]}


def test_queue_usage_marks_a_queue_missing_from_a_sample_and_drops_samples_without_a_cell() -> None:
    no_root = usage(5.0, 100.0, x=(10.0, 10.0))
    no_root["queues"] = no_root["queues"][1:]
    ev = events(usage(0.0, 100.0, x=(10.0, 30.0), y=(5.0, 70.0)), no_root,
                usage(7.0, 0.0, x=(0.0, 0.0)),  # an empty cell (every node lost): no share to draw
                usage(9.0, 100.0, x=(40.0, 30.0)))
    d = report.queue_data(SUMMARY, ev)
    assert d["t"] == [0.0, 9.0]
    assert d["queues"]["root.a.x"]["used"] == [0.1, 0.4]
    y = d["queues"]["root.a.y"]["used"]
    assert y[0] == 0.05 and math.isnan(y[1])


def test_queue_usage_is_skipped_without_samples() -> None:
    assert isinstance(report.queue_data(SUMMARY, events(preempted(1.0, "root.a.x"))), Skip)
    assert isinstance(report.queue_data(SUMMARY, events(usage(0.0, 0.0, x=(0.0, 0.0)))), Skip)


# ---- preemptions ----------------------------------------------------------------

def test_preemptions_per_leaf_sorted_with_am_counts_and_idle_queues_at_zero() -> None:
    ev = events(usage(0.0, 100.0, x=(0.0, 30.0), y=(0.0, 70.0)),
                preempted(40.0, "root.a.x"), preempted(20.0, "root.a.x", am=True), preempted(30.0, "root.a.x"),
                preempted(END + 5.0, "root.a.x"))  # after the run's end: left out
    d = report.preemption_data(SUMMARY, ev)
    assert d == {"end": END, "queues": {"root.a.x": [20.0, 30.0, 40.0], "root.a.y": []}, "am": {"root.a.x": 1, "root.a.y": 0}}


def test_preemptions_are_skipped_when_there_are_none() -> None:
    skip = report.preemption_data(SUMMARY, events(usage(0.0, 100.0, x=(0.0, 30.0)), preempted(END + 5.0, "root.a.x")))
    assert isinstance(skip, Skip) and "preempted" in skip.reason


# ---- locality -------------------------------------------------------------------

def test_locality_counts_per_queue_and_over_all_match_the_summary_fractions() -> None:
    allocs = ([allocated(1.0, "root.a.x", "node_local")] * 3 + [allocated(2.0, "root.a.x", "off_switch")]
              + [allocated(3.0, "root.a.y", "rack_local")] * 2 + [allocated(4.0, "root.a.y", "node_local")]
              + [allocated(END + 1.0, "root.a.y", "rack_local")])  # after the end: left out, as the summary does
    ev = events(*allocs)
    d = report.locality_data(SUMMARY, ev)
    assert list(d) == [report.ALL, "root.a.x", "root.a.y"]
    assert d["root.a.x"] == {"node_local": 3, "rack_local": 0, "off_switch": 1}
    assert d["root.a.y"] == {"node_local": 1, "rack_local": 2, "off_switch": 0}
    total = d[report.ALL]
    assert total == {"node_local": 4, "rack_local": 2, "off_switch": 1}
    inside = events(*allocs[:-1])
    fractions = yarn_section(inside, RunInfo(scenario="t", architecture="yarn", engine="sim", seed=0, time_scale=1.0,
                                             emulated_seconds=END, wall_seconds=END, machines_per_actor=1, substrate={}),
                             {"emulated_seconds": END})["locality"]
    assert {k: round(n / 7, 6) for k, n in total.items()} == fractions


def test_locality_with_one_queue_has_no_separate_total_row() -> None:
    d = report.locality_data(SUMMARY, events(allocated(1.0, "root.default", "rack_local")))
    assert d == {"root.default": {"node_local": 0, "rack_local": 1, "off_switch": 0}}


@pytest.mark.parametrize("allocs", [[], [allocated(1.0, "root.a.x", "off_switch")] * 4], ids=["none", "all-off-switch"])
def test_locality_is_skipped_when_no_task_preferred_a_node(allocs: list[dict]) -> None:
    skip = report.locality_data(SUMMARY, events(*allocs))
    assert isinstance(skip, Skip) and f"all {len(allocs)} task containers were off-switch" in skip.reason


def test_locality_draws_a_png(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    png = tmp_path / "locality.png"
    report.locality({report.ALL: {"node_local": 3, "rack_local": 1, "off_switch": 0},
                     "root.a.x": {"node_local": 3, "rack_local": 0, "off_switch": 0},
                     "root.a.y": {"node_local": 0, "rack_local": 1, "off_switch": 0}}, png)
    assert png.stat().st_size > 0


# ---- registration -----------------------------------------------------------------

def test_yarn_registers_its_plots_with_names_apart_from_the_run_plots() -> None:
    arch = of_summary({"architecture": "yarn"})
    assert arch is not None and arch.plots is not None
    specs = arch.plots()
    assert [s.name for s in specs] == ["queue_usage", "preemptions", "locality"]
    assert all(s.how.strip() for s in specs)
    assert not {s.name for s in specs} & {s.name for s in RUN_PLOTS + (TIMELINE,)}


# ---- end to end -------------------------------------------------------------------

def test_yarn_queues_report_shows_adhoc_over_its_guarantee_and_preemptions(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    path = ROOT / "scenarios" / "yarn_queues.toml"
    sc = parse_scenario(tomllib.loads(path.read_text()) | {"engine": "sim", "duration": 450.0}, str(path))
    run_scenario(sc, tmp_path)
    md = write_report(tmp_path).read_text()
    assert (tmp_path / "plots" / "queue_usage.png").stat().st_size > 0
    assert (tmp_path / "plots" / "preemptions.png").stat().st_size > 0
    assert "![Queue usage over time](plots/queue_usage.png)" in md
    assert "## Container locality\n\n*Skipped: all " in md  # yarn_queues has no data_replicas
    summary, ev = load_run(tmp_path)
    q = report.queue_data(summary, ev)["queues"]["root.adhoc"]
    over = [u - e for u, e in zip(q["used"], q["entitlement"])]
    assert max(q["entitlement"]) == pytest.approx(0.3)  # its Capacity guarantee
    assert max(over) > 0.5  # the burst: adhoc far above its 30%, into prod's idle guarantee
    pre = report.preemption_data(summary, ev)
    n = len(pre["queues"]["root.adhoc"])
    assert n > 0 and pre["queues"]["root.prod"] == []
    assert n == json.loads((tmp_path / "summary.json").read_text())["yarn"]["queues"]["root.adhoc"]["preemptions"]
