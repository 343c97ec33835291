"""The cluster-trace-v2018 reader on synthetic tables in the trace's exact
schema (schedulers.traces.samples.alibaba2018): a conversion holds what
the sample wrote (machines over time, batch tasks as jobs after their DAG
parents, instances folded over their attempts, online containers), in
any row order, gzipped or not; DAG names and empty values read as the
reader's docstring says; bad input is one line naming file, line and column."""
from __future__ import annotations

import gzip
import random
import tempfile
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from schedlab.schedulers.traces import alibaba2018 as ali
from schedlab.schedulers.traces import form, readers
from schedlab.schedulers.traces.form import Trace, TraceError
from schedlab.schedulers.traces.samples import alibaba2018 as sample

FMT = "alibaba2018"


@pytest.fixture(scope="module")
def written(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict, Trace, Path]:
    out = tmp_path_factory.mktemp("alibaba")
    w = sample.write(out, machines=40, jobs=200, hours=6.0, seed=3)
    return w, readers.convert(out, FMT), out


def _jobs(trace: Trace) -> dict[int, int]:
    return {int(s): j for j, s in enumerate(trace.job_source.tolist())}


def _tasks_of(trace: Trace, j: int) -> slice:
    a, b = np.searchsorted(trace.task_job, [j, j + 1])
    return slice(int(a), int(b))


def _same(got: np.ndarray, want: np.ndarray | list[float]) -> bool:
    return bool(np.array_equal(np.asarray(got, np.float64), np.asarray(want, np.float64), equal_nan=True))


def test_the_trace_says_what_it_is_in_the_traces_units(written: tuple[dict, Trace, Path]) -> None:
    w, trace, _ = written
    assert trace.format == FMT and trace.recorded and trace.resources == ("cpu", "mem")
    assert trace.units == ali.UNITS and "cores" in trace.units[0] and "100" in trace.units[1]
    assert trace.service_tiers == ("online",) and set(trace.tiers) == {"batch", "online"}
    assert trace.origin == 0.0 and w["span"] / 2 < trace.span <= w["span"] + 60  # the latest time a row names
    assert sorted(trace.sources) == sorted(str(p) for p in w["files"])
    assert trace.jobs == len(w["tasks"]["name"]) + w["apps"]["number"].size
    assert trace.tasks == w["instances"]["task"].size + w["containers"]["app"].size


def test_machines_are_present_with_their_capacity_when_machine_meta_says(written: tuple[dict, Trace, Path]) -> None:
    w, trace, _ = written
    assert np.array_equal(trace.machine_source, w["machines"])
    rows = w["machine_rows"]
    assert (~rows["present"]).any() and (rows["time"] > 0).any()  # removals and mid-trace rows to check
    for t in np.linspace(0.0, w["span"], 37) + 0.5:
        want: dict[int, tuple[float, float]] = {}
        for k in np.argsort(rows["time"], kind="stable"):
            if rows["time"][k] <= t:
                m = int(rows["id"][k])
                if rows["present"][k]:
                    want[m] = (rows["cpu"][k], rows["mem"][k])
                else:
                    want.pop(m, None)
        ids, cap = trace.machines_at(float(t))
        got = {int(trace.machine_source[i]): (float(c[0]), float(c[1])) for i, c in zip(ids.tolist(), cap)}
        assert got == want


def test_each_batch_task_is_a_job_after_its_dag_parents(written: tuple[dict, Trace, Path]) -> None:
    w, trace, _ = written
    jobs, tasks = _jobs(trace), w["tasks"]
    batch = trace.tiers.index("batch")
    dags = 0
    for job, name, node, after, submit in zip(tasks["job"].tolist(), tasks["name"], tasks["node"].tolist(), tasks["after"],
                                              tasks["submit"].tolist()):
        j = jobs[ali.batch_job_source(f"j_{job}", name)]
        assert trace.job_tier[j] == batch and trace.users[trace.job_user[j]] == f"j_{job}"
        assert trace.job_submit[j] == submit and trace.job_parent[j] == -1
        parents = {jobs[ali.batch_job_source(f"j_{job}", f"M{d}")] for d in after}
        assert set(trace.job_after[trace.job_after_ptr[j]:trace.job_after_ptr[j + 1]].tolist()) == parents
        assert (node >= 0) == (ali.dag(name) is not None)
        dags += len(after) > 1
    assert dags > 0


def test_instances_fold_their_attempts_into_the_sample_s_task_rows(written: tuple[dict, Trace, Path]) -> None:
    w, trace, _ = written
    jobs, tasks, inst = _jobs(trace), w["tasks"], w["instances"]
    bounds = np.searchsorted(inst["task"], np.arange(len(tasks["name"]) + 1))
    machine = np.where(trace.task_machine >= 0, trace.machine_source[np.maximum(trace.task_machine, 0)], -1)
    for i, (job, name) in enumerate(zip(tasks["job"].tolist(), tasks["name"])):
        got = _tasks_of(trace, jobs[ali.batch_job_source(f"j_{job}", name)])
        want = slice(int(bounds[i]), int(bounds[i + 1]))
        assert np.array_equal(trace.task_index[got], np.arange(want.stop - want.start))
        for col in ("submit", "start", "last_start", "end"):
            assert _same(getattr(trace, f"task_{col}")[got], inst[col][want]), (name, col)
        assert np.array_equal(trace.task_end_reason[got], inst["reason"][want]), name
        assert np.array_equal(trace.task_attempts[got], inst["attempts"][want]), name
        assert np.array_equal(machine[got], inst["machine"][want]), name
        req = np.asarray([tasks["cpu"][i], tasks["mem"][i]], np.float32)
        assert (trace.task_request[got] == req).all(), name
    reasons = set(trace.task_end_reason.tolist())
    assert {form.NONE, form.FINISHED, form.FAILED, form.KILLED} <= reasons
    assert (trace.task_attempts > 1).any() and (trace.task_attempts == 0).any()
    assert trace.meta["ended_without_end_time"] > 0 and trace.meta["requests_missing"] > 0


def test_online_deploy_units_are_service_jobs_of_their_containers(written: tuple[dict, Trace, Path]) -> None:
    w, trace, _ = written
    jobs, apps, c = _jobs(trace), w["apps"], w["containers"]
    online = trace.tiers.index("online")
    machine = np.where(trace.task_machine >= 0, trace.machine_source[np.maximum(trace.task_machine, 0)], -1)
    for number, submit in zip(apps["number"].tolist(), apps["submit"].tolist()):
        j = jobs[ali.online_job_source(f"app_{number}")]
        assert trace.job_tier[j] == online and trace.job_submit[j] == submit
        assert trace.users[trace.job_user[j]] == f"app_{number}"
        got, want = _tasks_of(trace, j), c["app"] == number
        assert _same(trace.task_start[got], c["start"][want]) and _same(trace.task_end[got], c["end"][want])
        assert _same(trace.task_submit[got], c["start"][want])
        assert np.array_equal(trace.task_end_reason[got], c["reason"][want])
        assert np.array_equal(machine[got], c["machine"][want])
        assert np.array_equal(trace.task_request[got], np.column_stack([c["cpu"][want], c["mem"][want]]).astype(np.float32))
    assert (c["reason"] == form.KILLED).any() and (c["start"] > 0).any()


def test_row_order_and_compression_do_not_change_the_conversion(written: tuple[dict, Trace, Path], tmp_path: Path) -> None:
    _, trace, src = written
    rng = random.Random(5)
    for path in sorted(src.iterdir()):
        lines = path.read_text().splitlines(keepends=True)
        rng.shuffle(lines)
        with gzip.open(tmp_path / (path.name + ".gz"), "wt") as fh:
            fh.writelines(lines)
    again = readers.convert(tmp_path, FMT)
    for name in ("machine_source", "machine_capacity", "job_source", "job_submit", "job_after", "task_index", "task_start",
                 "task_last_start", "task_end", "task_end_reason", "task_machine", "task_attempts", "task_request"):
        assert _same(getattr(again, name), getattr(trace, name)), name
    assert again.meta == trace.meta


def test_a_sample_written_gzipped_converts_as_the_plain_one(written: tuple[dict, Trace, Path], tmp_path: Path) -> None:
    w = sample.write(tmp_path, machines=40, jobs=200, hours=6.0, seed=3, gz=True)
    assert all(p.name.endswith(".csv.gz") for p in w["files"])
    again = readers.convert(tmp_path, FMT)
    assert _same(again.task_end, written[1].task_end) and np.array_equal(again.job_source, written[1].job_source)


# -- names and ids ---------------------------------------------------------------------------------------

@given(node=st.integers(0, 10**6), after=st.lists(st.integers(0, 10**6), max_size=6),
       letters=st.text(alphabet="MRJabcXYZ", min_size=1, max_size=3))
@settings(max_examples=150, deadline=None)
def test_a_dag_name_gives_its_node_and_parents(node: int, after: list[int], letters: str) -> None:
    name = letters + str(node) + "".join(f"_{a}" for a in after)
    want = tuple(dict.fromkeys(a for a in after if a != node))
    assert ali.dag(name) == (node, want)
    assert ali.batch_job_source("j_7", name) == ali.batch_job_source("j_7", "M" + str(node))


@given(st.text(min_size=0, max_size=20))
@settings(max_examples=150, deadline=None)
def test_names_of_any_other_shape_are_independent_tasks(name: str) -> None:
    import re
    if re.fullmatch(r"[A-Za-z]+[0-9]+(_[0-9]+)*", name):
        assert ali.dag(name) is not None
    else:
        assert ali.dag(name) is None
    assert ali.dag("task_" + name) is None


def test_ids_map_to_integers_deterministically() -> None:
    assert ali.batch_job_source("j_3", "M5_1") == 3 << 20 | 5 == ali.batch_job_source("j_3", "R5")
    assert ali.entity_id("m_1932", "m_") == 1932 and ali.entity_id("ins_12", "ins_") == 12
    assert ali.online_job_source("app_7") == (1 << 60) + 7
    hashed = {ali.batch_job_source("j_3", "task_Nzg3ODAwNDgzMTAwNTc2NTQ2Mw=="), ali.entity_id("m_x", "m_"),
              ali.batch_job_source("job-3", "M1"), ali.online_job_source("du-9")}
    assert len(hashed) == 4 and all(h >= 1 << 62 for h in hashed)
    assert ali.batch_job_source("j_3", "task_a") == ali.batch_job_source("j_3", "task_a") != ali.batch_job_source("j_4", "task_a")


# -- empty values and time 0 ----------------------------------------------------------------------------

def _tiny(folder: Path, task: list[str], instances: list[list[str]]) -> Trace:
    (folder / "machine_meta.csv").write_text("m_1,0,1,a,96,100,USING\nm_2,0,1,a,64,50,USING\n")
    (folder / "batch_task.csv").write_text(",".join(task) + "\nM1,1,j_1,1,Terminated,50,60,100,1.0\n")
    (folder / "batch_instance.csv").write_text("".join(",".join(r) + "\n" for r in instances))
    return readers.convert(folder, FMT)


@given(cpu=st.sampled_from(["", "250"]), mem=st.sampled_from(["", "0.5"]), start=st.sampled_from(["", "0", "100"]),
       end=st.sampled_from(["", "0", "180"]), machine=st.sampled_from(["", "m_2"]),
       status=st.sampled_from(["Terminated", "Failed", "Running", "Cancelled", "Waiting"]))
@settings(max_examples=60, deadline=None)
def test_empty_values_read_as_the_docstring_says(cpu: str, mem: str, start: str, end: str, machine: str, status: str) -> None:
    with tempfile.TemporaryDirectory() as d:
        trace = _tiny(Path(d), ["R2_1", "1", "j_1", "1", "Terminated", "120", "200", cpu, mem],
                      [["ins_5", "R2_1", "j_1", "1", status, "110", end, machine, "1", "1"]])
    j = _jobs(trace)[ali.batch_job_source("j_1", "R2_1")]
    assert trace.job_submit[j] == 120.0
    assert trace.job_after[trace.job_after_ptr[j]:trace.job_after_ptr[j + 1]].tolist() == [_jobs(trace)[1 << 20 | 1]]
    k = _tasks_of(trace, j).start
    assert trace.task_request[k].tolist() == [2.5 if cpu else 0.0, 0.5 if mem else 0.0]
    assert trace.meta.get("requests_missing", 0) == (not cpu) + (not mem)
    if status == "Waiting":
        assert np.isnan(trace.task_start[k]) and trace.task_attempts[k] == 0 and trace.task_machine[k] == -1
        return
    assert trace.task_start[k] == 110.0 and trace.task_attempts[k] == 1
    assert trace.task_machine[k] == (1 if machine else -1)
    if status == "Running":
        assert np.isnan(trace.task_end[k]) and trace.task_end_reason[k] == form.NONE
    else:  # an end left empty or 0: the task's end_time
        assert trace.task_end[k] == (180.0 if end == "180" else 200.0)
        assert trace.task_end_reason[k] == {"Terminated": form.FINISHED, "Failed": form.FAILED, "Cancelled": form.KILLED}[status]


def test_time_zero_is_the_window_start_for_a_start_and_unknown_for_an_end(tmp_path: Path) -> None:
    trace = _tiny(tmp_path, ["R2_1", "3", "j_1", "1", "Waiting", "0", "0", "100", "1"], [
        ["ins_1", "R2_1", "j_1", "1", "Terminated", "0", "30", "m_1", "1", "1"],  # ran before the trace
        ["ins_2", "R2_1", "j_1", "1", "Cancelled", "0", "0", "", "1", "1"],  # cancelled before it started
        ["ins_3", "R2_1", "j_1", "1", "Running", "0", "0", "m_1", "1", "1"],  # running since before the trace
    ])
    j = _jobs(trace)[ali.batch_job_source("j_1", "R2_1")]
    assert trace.job_submit[j] == 50.0  # no start_time, still waiting: its Alibaba job's first task start
    got = _tasks_of(trace, j)
    assert _same(trace.task_start[got], [0.0, np.nan, 0.0]) and _same(trace.task_end[got], [30.0, np.nan, np.nan])
    assert trace.task_end_reason[got].tolist() == [form.FINISHED, form.NONE, form.NONE]
    assert trace.meta["batch_tasks_without_start"] == 1


def test_a_task_begun_before_the_trace_is_submitted_at_its_start(tmp_path: Path) -> None:
    trace = _tiny(tmp_path, ["M2", "1", "j_1", "1", "Terminated", "0", "40", "100", "1"],
                  [["ins_1", "M2", "j_1", "1", "Terminated", "0", "40", "m_1", "1", "1"]])
    j = _jobs(trace)[ali.batch_job_source("j_1", "M2")]
    assert trace.job_submit[j] == 0.0 and trace.task_start[_tasks_of(trace, j).start] == 0.0
    assert "batch_tasks_without_start" not in trace.meta


def test_a_retry_starting_the_second_its_failure_ended_is_the_last_attempt(tmp_path: Path) -> None:
    trace = _tiny(tmp_path, ["M2", "1", "j_1", "1", "Running", "100", "0", "100", "1"], [
        ["ins_1", "M2", "j_1", "1", "Running", "150", "0", "m_2", "2", "2"],  # written before the attempt it retries
        ["ins_1", "M2", "j_1", "1", "Failed", "100", "150", "m_1", "1", "2"],
    ])
    k = _tasks_of(trace, _jobs(trace)[ali.batch_job_source("j_1", "M2")]).start
    assert (trace.task_start[k], trace.task_last_start[k], trace.task_attempts[k]) == (100.0, 150.0, 2)
    assert np.isnan(trace.task_end[k]) and trace.task_end_reason[k] == form.NONE
    assert trace.machine_source[trace.task_machine[k]] == 1


# -- bad input -------------------------------------------------------------------------------------------

def _good(folder: Path) -> None:
    (folder / "machine_meta.csv").write_text("m_1,0,1,a,96,100,USING\nm_1,500,1,a,96,100,OFFLINE\n")
    (folder / "batch_task.csv").write_text("M1,1,j_1,1,Terminated,50,60,100,1.0\n")
    (folder / "batch_instance.csv").write_text("ins_1,M1,j_1,1,Terminated,50,60,m_1,1,1,1,1,0.1,0.1\n")
    (folder / "container_meta.csv").write_text("c_1,m_1,0,app_1,started,100,100,1.0\n")


@pytest.mark.parametrize("table, line, message", [
    ("batch_instance", "ins_1,M1,j_1,1,Terminated", "batch_instance.csv: line 2: column 'start_time': missing: the row has 5 fields"),
    ("batch_instance", "ins_1,M1,j_1,1,Terminated,50,6O,m_1,1,1", "batch_instance.csv: line 2: column 'end_time': not a number: '6O'"),
    ("batch_instance", "ins_1,M1,j_1,1,Exploded,50,60,m_1,1,1", "batch_instance.csv: line 2: column 'status': unknown instance status 'Exploded'"),
    ("batch_task", "M2,1,j_1,1,Terminated,50,60,1e999,1", "batch_task.csv: line 2: column 'plan_cpu': not a finite number: '1e999'"),
    ("batch_task", "M2,1,,1,Terminated,50,60,100,1", "batch_task.csv: line 2: column 'job_name': missing value"),
    ("batch_task", "M2,1,j_1,1,Lost,50,60,100,1", "batch_task.csv: line 2: column 'status': unknown task status 'Lost'"),
    ("machine_meta", "m_2,zero,1,a,96,100,USING", "machine_meta.csv: line 3: column 'time_stamp': not a number: 'zero'"),
    ("machine_meta", "m_2,0,1,a,96,100,BROKEN", "machine_meta.csv: line 3: column 'status': unknown machine status 'BROKEN'"),
    ("container_meta", "c_2,m_1,0,app_1,paused,100,100,1.0", "container_meta.csv: line 2: column 'status': unknown container status 'paused'"),
    ("container_meta", "c_2,m_1,,app_1,started,100,100,1.0", "container_meta.csv: line 2: column 'time_stamp': missing value"),
])
def test_a_bad_row_is_refused_naming_file_line_and_column(tmp_path: Path, table: str, line: str, message: str) -> None:
    _good(tmp_path)
    with open(tmp_path / f"{table}.csv", "a") as fh:
        fh.write(line + "\n")
    with pytest.raises(TraceError) as e:
        readers.convert(tmp_path, FMT)
    assert message in str(e.value) and "\n" not in str(e.value)


@pytest.mark.parametrize("change, message", [
    (lambda d: (d / "machine_meta.csv").unlink(), "no machine_meta.csv or machine_meta.csv.gz"),
    (lambda d: (d / "machine_meta.csv").rename(d / "machine_meta.tar.gz"), "machine_meta.tar.gz: extract it first"),
    (lambda d: (d / "batch_instance.csv").unlink(), "batch_task without batch_instance"),
    (lambda d: [(d / f"{t}.csv").unlink() for t in ("batch_task", "batch_instance", "container_meta")], "no workload"),
])
def test_missing_tables_are_refused_in_one_line(tmp_path: Path, change: object, message: str) -> None:
    _good(tmp_path)
    assert readers.convert(tmp_path, FMT).tasks == 2
    change(tmp_path)  # type: ignore[operator]
    with pytest.raises(TraceError, match=message):
        readers.convert(tmp_path, FMT)
