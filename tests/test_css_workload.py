"""CSS's workload inputs (google/cluster-scheduler-simulator): the readers,
its quantile-table sampling, the init-state prefill and ``[workload.css]``.
Pure: no Ray. The reference draws re-implement CSS's ``getQuantile`` line by
line so the histogram ``sampler`` builds is checked against the source, not
against itself."""
from __future__ import annotations

import math
import re
import shutil
from pathlib import Path

import numpy as np
import pytest

from schedlab.schedulers.model import css_workload as css
from schedlab.schedulers.model.cluster import MachineClass, build_cell
from schedlab.schedulers.model.jobs import JobKind
from schedlab.schedulers.model.resources import DEFAULT
from schedlab.schedulers.model.workload import Dist, JobClass, StandingJob, generate_jobs, prefill
from schedlab.schedulers.scenario.parse import ScenarioError, parse_scenario

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "scenarios" / "paper" / "css-example"
TRACES = EXAMPLE / "job-distribution-traces"
CPU, MEM = DEFAULT.index("cpu"), DEFAULT.index("mem")


def css_get_quantile(table: tuple[float, ...], u: float) -> float:
    """CSS's ``getQuantile`` (CoreClusterSimulation.scala), verbatim."""
    raw = u * (len(table) - 1)
    f = raw % 1
    if f == 0:
        return table[int(raw)]
    below, above = table[math.floor(raw)], table[math.ceil(raw)]
    return below + f * (below + above)


def css_draws(values: list[float], n: int, seed: int, scale: float = 1.0, below: float = math.inf) -> np.ndarray:
    """n draws as CSS makes them: quantile table, getQuantile, times scale,
    redrawn while at or above ``below``."""
    table = css.quantile_table(values)
    rng = np.random.default_rng(seed)
    out = []
    while len(out) < n:
        v = scale * css_get_quantile(table, float(rng.random()))
        if v < below:
            out.append(v)
    return np.asarray(out)


# --------------------------------------------------------------- readers

def test_reads_cssexample_job_distributions_per_scheduler_in_file_order() -> None:
    ia = css.read_job_distribution((TRACES / "example_interarrival_cmb.log").read_text())
    assert sorted(ia) == [css.BATCH, css.SERVICE]
    assert len(ia[css.BATCH]) == len(ia[css.SERVICE]) == 10
    assert ia[css.BATCH][:3] == (2.517473, 1.295932, 1.618243)
    assert ia[css.SERVICE][-1] == 1048.46673
    sizes = css.read_job_distribution((TRACES / "example_csizes_cmb.log").read_text())
    assert sorted(sizes[css.BATCH]) == [1.0] * 9 + [1600.0]


def test_a_scheduler_with_no_line_is_absent() -> None:
    assert css.read_job_distribution("c p 1 5\n\nc p 1 7\n") == {css.SERVICE: (5.0, 7.0)}


@pytest.mark.parametrize("text, problem", [
    ("c p 0\n", "line 1: expected 4 fields"),
    ("c p 0 1\nc p 2 1\n", "line 2: scheduler id must be 0 (batch) or 1 (service)"),
    ("c p 0 fast\n", "line 1: value 'fast' is not a number"),
    ("c p 0 nan\n", "line 1: value 'nan' is not finite"),
    ("c p 0 -1\n", "line 1: value must be >= 0"),
    ("\n\n", "no data points"),
])
def test_malformed_job_distribution_names_line_and_problem(text: str, problem: str) -> None:
    with pytest.raises(css.CssFormatError, match=re.escape(problem)):
        css.read_job_distribution(text)


def test_reads_the_init_state_with_ends_and_ram_in_gib() -> None:
    jobs = css.read_init_state((EXAMPLE / "example-init-cluster-state.log").read_text())
    assert [j.job_id for j in jobs] == ["049475829738997701", "610339428128088085", "856292140335049805"]
    first, second, third = jobs
    assert (first.prod, first.sched_class, first.tasks, first.end) == (True, 3, 1, math.inf)
    assert first.mem == pytest.approx(524288000 / 1024 ** 3)
    assert second.end == pytest.approx(6.844149)  # CSS reads the row 12's column 1 as the task duration
    assert third.tasks == 1000 and third.cpu_per_task == pytest.approx(0.0001)
    assert third.mem_per_task == pytest.approx(1074000000000 / 1024 ** 3 / 1000)


@pytest.mark.parametrize("text, problem", [
    ("12 5.0 7 0 0 9\n", "line 1: job 7 ends but has no row 11 before it"),
    ("11 0 7 0 0 1 1 1\n11 0 7 0 0 1 1 1\n", "line 2: job 7 has a second row 11"),
    ("11 0 7 0 0 1 1\n", "line 1: a row 11 has 8 fields, got 7"),
    ("13 0 7 0 0 1 1 1\n", "line 1: the first field must be 11"),
    ("11 0 7 2 0 1 1 1\n", "line 1: prod must be 0 or 1"),
    ("11 0 7 0 4 1 1 1\n", "line 1: sched_class must be 0, 1, 2 or 3"),
    ("11 0 7 0 0 0 1 1\n", "line 1: tasks must be >= 1"),
    ("11 0 7 0 0 1 1 1\n12 0 7 0 0 9\n", "line 2: job 7's end must be > 0"),
    ("", "no row 11"),
])
def test_malformed_init_state_names_line_and_problem(text: str, problem: str) -> None:
    with pytest.raises(css.CssFormatError, match=re.escape(problem)):
        css.read_init_state(text)


def test_cmb_pbb_split_is_prod_and_sched_class_2_or_3() -> None:
    def job(prod: bool, sc: int) -> css.InitJob:
        return css.InitJob("j", prod, sc, 1, 1.0, 1.0)

    got = {(p, sc): css.scheduler_of(job(p, sc)) for p in (False, True) for sc in range(4)}
    assert [k for k, v in got.items() if v == css.SERVICE] == [(True, 2), (True, 3)]
    jobs = css.read_init_state((EXAMPLE / "example-init-cluster-state.log").read_text())
    split = css.split(jobs)
    assert [j.job_id for j in split[css.SERVICE]] == ["049475829738997701"]
    assert len(split[css.BATCH]) == 2
    with pytest.raises(ValueError, match="unknown split policy"):
        css.scheduler_of(jobs[0], "pbb")


# --------------------------------------------------------------- sampling

def test_quantile_table_is_cssexample_1001_entries_largest_only_at_the_end() -> None:
    t = css.quantile_table([1.0] * 9 + [1600.0])
    assert len(t) == 1001
    assert t[:1000] == (1.0,) * 1000 and t[1000] == 1600.0
    t2 = css.quantile_table([3.0, 1.0, 2.0])  # sorted; index int(2 * i / 1000)
    assert t2[0] == 1.0 and t2[499] == 1.0 and t2[500] == 2.0 and t2[999] == 2.0 and t2[1000] == 3.0


@pytest.mark.parametrize("name", ["example_interarrival_cmb.log", "example_runtimes_cmb.log", "example_csizes_cmb.log"])
@pytest.mark.parametrize("sid", [css.BATCH, css.SERVICE])
def test_css_sampling_matches_cssexample_getquantile(name: str, sid: int) -> None:
    """The histogram's mean equals CSS's draw's exact mean (1.5 b + 0.5 a per
    permille bin), and its draws match CSS's in distribution."""
    values = list(css.read_job_distribution((TRACES / name).read_text())[sid])
    d = css.sampler(values, "css")
    t = css.quantile_table(values)
    exact = sum(1.5 * t[i] + 0.5 * t[i + 1] for i in range(1000)) / 1000
    assert d.expected() == pytest.approx(exact, rel=1e-9)
    ours = np.sort(d.sample(np.random.default_rng(1), 40000))
    theirs = np.sort(css_draws(values, 40000, seed=2))
    for q in (0.1, 0.25, 0.5, 0.75, 0.9, 0.99):
        assert np.quantile(ours, q) == pytest.approx(np.quantile(theirs, q), rel=0.05, abs=0.05)


def test_flat_data_draws_average_twice_the_value_as_in_css() -> None:
    """CSS's interpolation ``b + f (b + a)`` makes a flat table uniform on
    [b, 3b): data all equal to 1 draw a mean of 2 (a faithful reading keeps
    this, rather than the b + f (a - b) CSS meant)."""
    d = css.sampler([1.0] * 5, "css")
    assert d.expected() == pytest.approx(2.0)
    x = d.sample(np.random.default_rng(0), 10000)
    assert x.min() >= 1.0 and x.max() < 3.0
    assert css_draws([1.0] * 5, 10000, 0).mean() == pytest.approx(2.0, rel=0.02)


def test_a_cap_is_the_css_redraw_conditioned_and_scaled() -> None:
    values = [0.5, 1.0, 2.0, 4.0, 8.0]
    d = css.sampler(values, "css", scale=0.7, below=3.9)
    ours = d.sample(np.random.default_rng(3), 40000)
    theirs = css_draws(values, 40000, seed=4, scale=0.7, below=3.9)
    assert ours.max() < 3.9 and d.maximum() <= 3.9
    assert ours.mean() == pytest.approx(theirs.mean(), rel=0.02)
    assert d.expected() == pytest.approx(theirs.mean(), rel=0.02)


def test_zero_values_draw_zero_and_above_excludes_them() -> None:
    assert css.sampler([0.0, 0.0], "css").sample(np.random.default_rng(0), 5).tolist() == [0.0] * 5
    with pytest.raises(ValueError, match="no draw"):
        css.sampler([0.0, 0.0], "css", above=0.0)
    kept = css.sampler([0.0, 0.0, 5.0], "css", above=0.0)  # the one bin reaching 5 is all that is left
    assert kept.sample(np.random.default_rng(0), 200).min() > 0.0


def test_empirical_sampling_draws_each_data_point_equally() -> None:
    d = css.sampler([1.0, 2.0, 10.0], "empirical", scale=2.0, below=15.0)
    assert d.kind == "empirical" and sorted(d.values) == [2.0, 4.0]
    with pytest.raises(ValueError, match="unknown sampling"):
        css.sampler([1.0], "kde")


def test_css_shares_batch_task_shapes_with_service() -> None:
    assert css.shapes_for(css.SERVICE, "css") == css.BATCH
    assert css.shapes_for(css.SERVICE, "empirical") == css.SERVICE


# --------------------------------------------------------------- jobs and prefill

def test_one_duration_per_job_every_task_runs_for_it() -> None:
    jc = JobClass("b", JobKind.BATCH, Dist("constant", value=1.0), Dist("constant", value=5.0),
                  Dist("exponential", mean=10.0), tuple(Dist("constant", value=0.1) for _ in DEFAULT), one_duration=True)
    jobs = generate_jobs((jc,), 20.0, seed=1)
    assert jobs and all(len(set(j.durations)) == 1 and len(j.durations) == 5 for j in jobs)
    assert len({j.durations[0] for j in jobs}) > 1


def _standing(tasks: int, cpu: float, end: float = math.inf) -> StandingJob:
    request = [0.0] * len(DEFAULT)
    request[CPU], request[MEM] = cpu, 1.0
    return StandingJob("batch", tasks, tuple(request), end, 100)


def test_standing_jobs_fill_in_order_until_the_cpu_limit() -> None:
    cell = build_cell((MachineClass("m", 10, tuple(4.0 if r == "cpu" else 16.0 if r == "mem" else 0.0 for r in DEFAULT)),))  # 40 cpu
    standing = (_standing(4, 2.0, end=30.0), _standing(1, 9.0), _standing(10, 1.0), _standing(4, 2.0))
    pre = prefill(cell, (), 0.0, seed=1, standing=standing, standing_cpu_limit=0.6)  # stop before 24 cpu
    # 8 cpu, then a task bigger than any machine (skipped, but counted as CSS counts it: 17), then
    # 10 cpu would reach 27 >= 24: stop, and nothing after it is placed.
    assert [len(m) for m in pre.machines] == [4]
    assert pre.jobs[0].kind is JobKind.BATCH and pre.jobs[0].durations == (30.0,) * 4
    assert cell.capacity[:, CPU].sum() - pre.free[:, CPU].sum() == pytest.approx(8.0)
    runs_through = prefill(cell, (), 0.0, seed=1, standing=(_standing(3, 1.0),))
    assert runs_through.jobs[0].kind is JobKind.SERVICE and runs_through.jobs[0].job_id < 0


# --------------------------------------------------------------- [workload.css]

def _data(**css_table: object) -> dict:
    return {"name": "css", "architecture": "omega", "duration": 600.0, "engine": "sim",
            "cell": {"machine_classes": [{"name": "m", "count": 20, "cpu": 4.0, "mem": 16.0}]},
            "workload": {"css": {"dir": str(EXAMPLE), **css_table}},
            "omega": {"schedulers": [{"name": "b", "classes": ["batch"]}, {"name": "s", "classes": ["service"]}]}}


def test_workload_css_makes_batch_and_service_from_the_files() -> None:
    sc = parse_scenario(_data(), "css.toml")
    batch, service = sc.workload.classes
    assert (batch.name, service.name) == ("batch", "service")
    assert batch.kind is service.kind is JobKind.BATCH and batch.one_duration
    assert (batch.priority, service.priority) == (100, 200)
    values = css.read_job_distribution((TRACES / "example_interarrival_cmb.log").read_text())
    assert batch.interarrival.expected() == pytest.approx(css.sampler(values[css.BATCH], "css").expected())
    # Task shapes: Batch's init-state jobs for both (CSS's cache), times 0.7.
    assert batch.request[CPU] == service.request[CPU]
    assert batch.request[CPU].maximum() <= 0.7 * 3 * 0.001 + 1e-12
    assert [s.job_class for s in sc.workload.standing] == ["service", "batch", "batch"]
    assert sc.workload.standing_cpu_limit == 0.6


def test_workload_css_finds_the_shipped_copy_by_name(tmp_path: Path) -> None:
    data = _data()
    data["workload"]["css"]["dir"] = "css-example"
    assert len(parse_scenario(data, str(tmp_path / "nowhere.toml")).workload.classes) == 2


@pytest.mark.parametrize("change, problem", [
    ({"dir": "no-such-folder"}, "workload.css.dir: no folder 'no-such-folder'"),
    ({"sampling": "kde"}, "workload.css.sampling"),
    ({"colour": "red"}, "workload.css.colour: unknown key"),
])
def test_workload_css_errors_name_the_key(change: dict, problem: str) -> None:
    with pytest.raises(ScenarioError, match=problem):
        parse_scenario(_data(**change), "css.toml")


def test_workload_css_a_malformed_file_names_file_and_line(tmp_path: Path) -> None:
    folder = tmp_path / "traces"
    shutil.copytree(EXAMPLE, folder)
    (folder / "job-distribution-traces" / "example_csizes_cmb.log").write_text("c p 0 1\nc p 0\n")
    with pytest.raises(ScenarioError, match=r"workload\.css\.tasks: .*example_csizes_cmb\.log: line 2: expected 4 fields"):
        parse_scenario(_data(dir=str(folder)), "css.toml")


def test_workload_css_and_classes_are_exclusive() -> None:
    data = _data()
    data["workload"]["classes"] = []
    with pytest.raises(ScenarioError, match="either"):
        parse_scenario(data, "css.toml")
