"""`schedlab trace convert` and `schedlab trace info` as a user meets them
(real subprocesses), on the shipped SWF log and CSS's example inputs, and
the SWF and CSS readers' facts."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from schedlab.schedulers.model.swf import read_swf
from schedlab.schedulers.traces import form
from schedlab.schedulers.traces.form import TraceError
from schedlab.schedulers.traces.readers import ReadOptions, convert

ROOT = Path(__file__).resolve().parents[2]
SWF = ROOT / "scenarios" / "workloads" / "slurm_sample.swf"
CSS = ROOT / "scenarios" / "paper" / "css-example"


def schedlab(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "schedlab", "trace", *args], capture_output=True, text=True, timeout=120)


def test_convert_then_info_on_the_shipped_swf_log(tmp_path: Path) -> None:
    out = tmp_path / "swf.npz"
    r = schedlab("convert", str(SWF), "--format", "swf", "--out", str(out))
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith(f"wrote {out}: 64 machines, ")
    info = schedlab("info", str(out), "--json", "--plot", str(tmp_path / "load.png"))
    assert info.returncode == 0, info.stderr
    facts = json.loads(info.stdout)
    jobs = read_swf(SWF.read_text())
    assert facts["jobs"] == sum(1 for line in SWF.read_text().splitlines() if line.strip() and not line.startswith(";"))
    assert facts["tasks"] == sum(j.procs for j in jobs)
    assert facts["machines"]["at_start"] == 64 and facts["tasks_ended"]["finished"] == facts["tasks"]
    assert (tmp_path / "load.png").stat().st_size > 1000
    text = schedlab("info", str(out))
    assert "machines    64 at the start" in text.stdout


def test_the_swf_reader_keeps_each_jobs_run_time_and_size() -> None:
    t = convert(SWF, "swf")
    jobs = {j.job: j for j in read_swf(SWF.read_text())}
    run = t.run_times()
    for i in (0, 7, 100):
        job = int(t.job_source[i])
        tasks = t.task_job == i
        assert tasks.sum() == jobs[job].procs
        assert np.allclose(run[tasks], jobs[job].run)
        assert t.job_submit[i] == jobs[job].submit
    assert not t.recorded  # the sample leaves waits unknown: no reference start times


def test_a_swf_log_with_waits_records_the_starts(tmp_path: Path) -> None:
    log = tmp_path / "w.swf"
    log.write_text("; MaxNodes: 4\n; MaxProcs: 8\n"
                   "1 0 5 100 2 -1 -1 2 200 -1 1 1 1 -1 1 1 -1 -1\n"
                   "2 10 0 50 4 -1 -1 4 60 -1 0 2 1 -1 2 1 1 -1\n")
    t = convert(log, "swf")
    assert t.recorded and t.machines == 4 and t.machine_capacity[0].tolist() == [2.0, 2.0]
    assert t.task_start.tolist() == [5.0, 5.0, 10.0, 10.0, 10.0, 10.0]
    assert t.task_end_reason.tolist() == [form.FINISHED] * 2 + [form.FAILED] * 4
    assert t.tiers == ("queue-1", "queue-2") and t.job_after.tolist() == [0]  # job 2 follows job 1


def test_css_inputs_convert_to_a_drawn_day_with_the_initial_state_standing() -> None:
    t = convert(CSS, "css", options=ReadOptions(horizon=600.0, machines=50, seed=4))
    assert t.machines == 50 and t.tiers == ("batch", "service") and t.service_tiers == ("service",)
    assert (t.job_submit < 0).any() and (t.job_submit >= 0).any()
    assert t.job_submit.max() < 600.0
    again = convert(CSS, "css", options=ReadOptions(horizon=600.0, machines=50, seed=4))
    np.testing.assert_array_equal(t.task_request, again.task_request)  # seeded


@pytest.mark.parametrize("args, message", [
    (["convert", "/nonexistent", "--format", "swf", "--out", "{tmp}/x.npz"], "error: /nonexistent: no such file or folder"),
    (["convert", str(SWF), "--format", "swf", "--out", "{tmp}/x.npz", "--scale", "2"], "error: --scale: must be in (0, 1], got 2"),
    (["convert", str(SWF), "--format", "swf", "--out", "/nonexistent/x.npz"], "error: --out: no folder '/nonexistent'"),
    (["info", "{tmp}/missing.npz"], "error: {tmp}/missing.npz: no such file"),
])
def test_bad_input_is_one_line_and_exit_2(args: list[str], message: str, tmp_path: Path) -> None:
    r = schedlab(*(a.replace("{tmp}", str(tmp_path)) for a in args))
    assert r.returncode == 2 and r.stderr.strip() == message.replace("{tmp}", str(tmp_path))
    assert not (tmp_path / "x.npz").exists()


def test_a_garbled_swf_line_names_the_file_line_and_field(tmp_path: Path) -> None:
    log = tmp_path / "g.swf"
    log.write_text("1 0 5 100 2 -1 -1 2 200 -1 1 1 1 -1 1 1 -1 -1\n2 10 0 5x0 4 -1 -1 4 60 -1 0 2 1 -1 2 1 1 -1\n")
    r = schedlab("convert", str(log), "--format", "swf", "--out", str(tmp_path / "x.npz"))
    assert r.returncode == 2 and r.stderr.strip() == f"error: {log}: line 2: column 'run': not a number: '5x0'"
    log.write_text("1 10 5 100 2 -1 -1 2 200 -1 1 1 1 -1 1 1 -1 -1\n2 0 0 50 4 -1 -1 4 60 -1 0 2 1 -1 2 1 1 -1\n")
    with pytest.raises(TraceError, match=r"line 2: column 'submit': time 0 is before the previous job's 10"):
        convert(log, "swf")
