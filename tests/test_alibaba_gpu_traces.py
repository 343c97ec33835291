"""Readers of Alibaba's GPU traces (openb 2023, PAI 2020) on the shipped
samples (their exact schemas), compressed as published, with one-line
errors; and the workload inflation experiment on them."""
from __future__ import annotations

import csv
import gzip
import io
import subprocess
import sys
import tarfile
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from schedlab.experiments.inflation import cell_of, inflate, shape_of
from schedlab.schedulers.model.alibaba_gpu import (OPENB_PODS, TraceError, openb_nodes, openb_tasks, pai_devices,
                                                   pai_job_submits, pai_machines, pai_tasks)
from schedlab.schedulers.placement.fragmentation import typical, workload_of

ROOT = Path(__file__).resolve().parent.parent
W = ROOT / "scenarios" / "workloads"


def test_the_openb_samples_read_in_cores_gib_and_devices() -> None:
    nodes = list(openb_nodes(W / "openb_node_list_sample.csv"))
    pods = list(openb_tasks(W / "openb_pod_list_sample.csv"))
    assert len(nodes) == 64 and len(pods) == 1200
    assert nodes[0].devices == 0 and nodes[0].model == "" and nodes[0].cpu == 96.0 and nodes[0].mem == 384.0
    assert {n.model for n in nodes if n.devices} == {"V100M32", "V100M16", "T4", "A10"}
    shares = [p for p in pods if 0 < p.devices < 1]
    assert shares and all(round(p.devices * 1000) in (100, 200, 250, 300, 500, 700) for p in shares)
    assert {p.devices for p in pods if p.devices >= 1} <= {1.0, 2.0, 4.0, 8.0}
    assert any(p.models for p in pods) and all(p.end is None or p.end >= p.submit for p in pods)


def test_the_pai_samples_join_tasks_to_their_jobs_submission() -> None:
    machines = list(pai_machines(W / "pai_machine_spec_sample.csv"))
    submits = pai_job_submits(W / "pai_job_table_sample.csv")
    tasks = list(pai_tasks(W / "pai_task_table_sample.csv", submits))
    assert len(machines) == 16 and len(submits) == 120
    assert machines[0].devices == 0 and machines[1].devices == 8 and machines[1].model == "P100"
    assert all(t.submit == submits[t.name.split("/")[0]] for t in tasks)
    assert {t.devices for t in tasks} <= {0.0, 0.25, 0.5, 1.0, 2.0, 8.0}
    assert all((t.devices > 0) == bool(t.models) for t in tasks)
    assert pai_devices(50) == 0.5 and pai_devices(100) == 1.0 and pai_devices(150) == 2.0 and pai_devices(800) == 8.0


def test_compressed_files_read_as_published(tmp_path: Path) -> None:
    src = W / "openb_pod_list_sample.csv"
    gz = tmp_path / "pods.csv.gz"
    gz.write_bytes(gzip.compress(src.read_bytes()))
    tgz = tmp_path / "pai_task_table.tar.gz"
    with tarfile.open(tgz, "w:gz") as tar:
        tar.add(W / "pai_task_table_sample.csv", arcname="pai_task_table.csv")
    assert list(openb_tasks(gz)) == list(openb_tasks(src))
    assert list(pai_tasks(tgz)) == list(pai_tasks(W / "pai_task_table_sample.csv"))


def _write(p: Path, header: list[str] | None, rows: list[list[str]]) -> Path:
    with open(p, "w", newline="") as f:
        w = csv.writer(f)
        if header:
            w.writerow(header)
        w.writerows(rows)
    return p


POD = ["p0", "4000", "16384", "1", "500", "nan", "LS", "Running", "10", "20", "11"]


@pytest.mark.parametrize(("change", "message"), [
    ({1: "4k"}, ":2: cpu_milli: '4k' is not a number"),
    ({4: "1500"}, ":2: gpu_milli: '1500' is not a whole number of thousandths of one GPU (0 to 1000)"),
    ({4: "0.0001"}, ":2: gpu_milli: '0.0001' is not a whole number of thousandths of one GPU (0 to 1000)"),
    ({3: "1.5"}, ":2: num_gpu: '1.5' is not a whole number of GPUs"),
    ({3: "0"}, ":2: gpu_milli: '500' for a pod asking no GPU (num_gpu 0)"),
    ({9: "5"}, ":2: deletion_time: 5 is before creation_time 10"),
    ({8: ""}, ":2: creation_time: empty"),
    ({2: "-1"}, ":2: memory_mib: '-1' is not a number >= 0"),
])
def test_a_bad_openb_row_is_one_line_naming_file_line_and_column(tmp_path: Path, change: dict, message: str) -> None:
    row = list(POD)
    for i, v in change.items():
        row[i] = v
    p = _write(tmp_path / "pods.csv", list(OPENB_PODS), [row])
    with pytest.raises(TraceError) as e:
        list(openb_tasks(p))
    assert str(e.value) == f"{p}{message}"


def test_a_corrupt_archive_and_a_byte_order_mark_are_read_as_users_meet_them(tmp_path: Path) -> None:
    good = gzip.compress((W / "openb_pod_list_sample.csv").read_bytes())
    bad = tmp_path / "pods.csv.gz"
    bad.write_bytes(good[:200] + bytes(64) + good[264:])
    with pytest.raises(TraceError, match=r"pods.csv.gz: cannot read \("):
        list(openb_tasks(bad))
    bom = tmp_path / "nodes.csv"
    bom.write_bytes(b"\xef\xbb\xbf" + (W / "openb_node_list_sample.csv").read_bytes())
    assert len(list(openb_nodes(bom))) == 64


def test_a_missing_column_or_a_short_row_or_no_file_is_one_line(tmp_path: Path) -> None:
    p = _write(tmp_path / "pods.csv", [c for c in OPENB_PODS if c != "gpu_milli"], [POD[:4] + POD[5:]])
    with pytest.raises(TraceError, match=r"pods.csv:1: gpu_milli: missing column"):
        list(openb_tasks(p))
    p = _write(tmp_path / "short.csv", list(OPENB_PODS), [POD[:5]])
    with pytest.raises(TraceError, match=r"short.csv:2: 5 fields, expected 11"):
        list(openb_tasks(p))
    with pytest.raises(TraceError, match=r"absent.csv: no such file"):
        list(openb_tasks(tmp_path / "absent.csv"))
    p = _write(tmp_path / "tasks.csv", None, [["j", "t", "0", "Terminated", "1", "2", "100", "4", "", ""]])
    with pytest.raises(TraceError, match=r"tasks.csv:1: inst_num: '0' is not a count of instances"):
        list(pai_tasks(p))


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 128000), st.integers(0, 10**6), st.sampled_from([0, 1, 2, 4, 8]),
                          st.integers(1, 999), st.integers(0, 10**7), st.integers(0, 10**5)), min_size=1, max_size=20))
def test_openb_pods_round_trip(rows: list[tuple[int, int, int, int, int, int]]) -> None:
    buf = io.StringIO()
    w = csv.writer(buf)
    w.writerow(OPENB_PODS)
    for i, (cpu, mem, n, milli, t, run) in enumerate(rows):
        m = milli if n == 1 else (1000 if n else 0)
        w.writerow([f"p{i}", cpu, mem, n, m, "A10|T4" if i % 2 else "nan", "BE", "Succeeded", t, t + run, t])
    import tempfile

    with tempfile.TemporaryDirectory() as d:
        p = Path(d) / "pods.csv"
        p.write_text(buf.getvalue())
        got = list(openb_tasks(p))
    for (cpu, mem, n, milli, t, run), task in zip(rows, got):
        assert task.cpu == cpu / 1000 and task.mem == mem / 1024 and task.submit == t and task.end == t + run
        assert task.devices == (milli / 1000 if n == 1 else n)
    assert [bool(x.models) for x in got] == [bool(i % 2) for i in range(len(rows))]


def test_inflation_curves_are_consistent_and_fgd_leaves_no_more_than_random() -> None:
    nodes = list(openb_nodes(W / "openb_node_list_sample.csv"))
    pods = list(openb_tasks(W / "openb_pod_list_sample.csv"))
    cell, models = cell_of(nodes)
    shapes = [shape_of(t, models) for t in pods]
    workload = typical(workload_of([s.request for s in shapes], [s.models for s in shapes]), 0.95)
    assert abs(sum(p for _, p in workload) - 1) < 1e-9
    unallocated = {}
    for policy in ("fgd", "random_fit"):
        curve = inflate(cell, shapes, policy, workload, seed=0, until=1.1)
        arrived, alloc, frag = (np.array(x) for x in zip(*curve))
        assert np.all(np.diff(arrived) > 0) and np.all(alloc <= arrived + 1e-9) and np.all(np.diff(alloc) >= -1e-12)
        assert np.all(frag >= -1e-12) and np.all(frag <= 1 - alloc + 1e-9) and arrived[-1] >= 1.1
        unallocated[policy] = 1 - alloc[np.argmax(arrived >= 1.0)]
    assert unallocated["fgd"] <= unallocated["random_fit"]


def test_the_inflation_command_prints_its_table_and_refuses_a_bad_policy_in_one_line(tmp_path: Path) -> None:
    run = lambda *a: subprocess.run([sys.executable, "-m", "schedlab", "inflation", *a],  # noqa: E731
                                    capture_output=True, text=True, timeout=300)
    png = tmp_path / "inflation.png"
    r = run("--seeds", "1", "--policies", "random_fit,gpu_packing", "--until", "1.0", "--plot", str(png))
    assert r.returncode == 0, r.stderr
    assert "random_fit" in r.stdout and "gpu_packing" in r.stdout and "unallocated GPUs" in r.stdout
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    r = run("--trace", "pai", "--seeds", "1", "--policies", "fgd", "--until", "1.0")
    assert r.returncode == 0 and "(pai): 318 tasks drawn onto 16 nodes (112 GPUs)" in r.stdout, r.stderr
    r = run("--trace", "pai", "--pods", str(W / "openb_pod_list_sample.csv"))  # an openb file given as PAI's
    assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1 and "openb_pod_list_sample.csv:1:" in r.stderr
    r = run("--policies", "tetris")
    assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1 and "'tetris' is not one of" in r.stderr
