"""The schedlab command as a user meets it (real subprocesses)."""
from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from schedlab.actors.analysis.run_info import RunSetup
from schedlab.api.scenario_files import apply_set, load_scenario
from schedlab.schedulers.scenario.parse import ScenarioError

ROOT = Path(__file__).resolve().parent.parent


def schedlab(*args: str, timeout: float = 240, cwd: Path = ROOT, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    env = env or {k: v for k, v in os.environ.items() if k != "RAY_ADDRESS"}
    return subprocess.run(
        [sys.executable, "-m", "schedlab", *args], cwd=cwd, capture_output=True, text=True, timeout=timeout, env=env
    )


def users_own_folders(where: Path) -> Path:
    """A directory like a user's project: its own scripts/, actors/ and
    schedulers/ packages, each of which breaks loudly if imported."""
    for name in ("scripts", "actors", "schedulers"):
        (where / name).mkdir(parents=True)
        (where / name / "__init__.py").write_text(f"raise ImportError('the user\\'s own {name} was imported')\n")
        (where / name / "cli.py").write_text("raise SystemExit(99)\n")
    return where


def test_malformed_scenario_exits_2_with_one_line(tmp_path: Path) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_text((ROOT / "scenarios/quickstart.toml").read_text().replace("duration = 1200.0", "duration = -3.0"))
    r = schedlab("run", str(bad))
    assert r.returncode == 2
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and "bad.toml: duration: must be > 0" in lines[0]
    assert "schedlab-" not in r.stdout  # no namespace was ever created: nothing started


def test_not_toml_and_missing_file(tmp_path: Path) -> None:
    bad = tmp_path / "broken.toml"
    bad.write_text("name = [unclosed\n")
    r = schedlab("run", str(bad))
    assert r.returncode == 2 and "not valid TOML" in r.stderr
    r = schedlab("run", str(tmp_path / "absent.toml"))
    assert r.returncode == 2 and "absent.toml: no such file, nor a scenario shipped with schedlab" in r.stderr
    d = tmp_path / "a-directory.toml"
    d.mkdir()
    r = schedlab("run", str(d))
    assert r.returncode == 2 and "cannot read scenario" in r.stderr


def test_no_cluster_at_address() -> None:
    with socket.socket() as s:  # a port that is certainly closed: bound, never listening
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
        r = schedlab("run", "scenarios/quickstart.toml", "--address", f"127.0.0.1:{port}")
    assert r.returncode == 2
    assert f"no Ray cluster at 127.0.0.1:{port}" in r.stderr


def test_set_overrides_nested_values() -> None:
    sc = load_scenario(ROOT / "scenarios/omega_conflicts.toml", ["omega.schedulers.1.t_job=30", "omega.conflict_mode=sequence"])
    assert sc.section.schedulers[1].t_job == 30.0
    assert sc.section.conflict_mode.value == "sequence"
    with pytest.raises(ScenarioError, match="unknown key"):
        load_scenario(ROOT / "scenarios/omega_conflicts.toml", ["omega.schedulers.0.speed=3"])
    with pytest.raises(ScenarioError, match="expected KEY=VALUE"):
        apply_set({}, "novalue")


@pytest.mark.ray
@pytest.mark.untimed
def test_quickstart_runs_end_to_end_from_the_command(tmp_path: Path, stale_ray_tmp: dict[str, str]) -> None:
    """The README's first command, shortened: embedded Ray, live progress
    (forced on, as in a terminal), table, files; the shipped scenario by
    name, from a directory with a user's own scripts/ and actors/, on a
    machine where a dead cluster's address is recorded (conftest)."""
    env_cols = {"COLUMNS": "200", "FORCE_COLOR": "0", "TTY_COMPATIBLE": "1", "TTY_INTERACTIVE": "1"}
    os.environ.update(env_cols)
    here = users_own_folders(tmp_path / "project")
    out = tmp_path / "out"
    try:
        r = schedlab("run", "quickstart", "--out", str(out), "--set", "duration=200", cwd=here,
                     env={**stale_ray_tmp, **env_cols})
    finally:
        for k in env_cols:
            os.environ.pop(k, None)
    assert r.returncode == 0, r.stderr[-2000:]
    assert "quickstart" in r.stdout and "invariants" in r.stdout and "all hold" in r.stdout
    assert "attempts" in r.stdout and "━" in r.stdout  # the progress line and bar were drawn
    s = json.loads((out / "summary.json").read_text())
    assert s["emulated_seconds"] == 200 and s["jobs"]["submitted"] > 0
    assert (out / "events.jsonl").stat().st_size > 0


def test_version_and_python_m() -> None:
    import schedlab as pkg

    for cmd in (["schedlab", "--version"], [sys.executable, "-m", "schedlab", "--version"]):
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
        assert r.returncode == 0 and r.stdout.strip() == f"schedlab {pkg.__version__}", (cmd, r.stdout, r.stderr)


def test_shipped_scenarios_are_listed_and_copied(tmp_path: Path) -> None:
    r = schedlab("scenarios", cwd=users_own_folders(tmp_path / "project"))
    assert r.returncode == 0, r.stderr
    listed = {line.split()[0]: line for line in r.stdout.splitlines()}
    shipped = {p.relative_to(ROOT / "scenarios").with_suffix("").as_posix()
               for p in (ROOT / "scenarios").rglob("*") if p.suffix in (".toml", ".py")}
    assert set(listed) == shipped
    assert "two Omega schedulers share a small cell." in listed["quickstart"]
    assert all(len(line.split(None, 1)) == 2 for line in listed.values()), "every scenario has a description"
    dest = tmp_path / "mine"
    r = schedlab("scenarios", "copy", str(dest))
    assert r.returncode == 0, r.stderr
    assert (dest / "paper" / "omega_paper.toml").read_text() == (ROOT / "scenarios/paper/omega_paper.toml").read_text()
    assert (dest / "quickstart.toml").is_file()
    assert json.loads((dest / "schedlab.schema.json").read_text())["title"] == "schedlab scenario file"  # for editors
    r = schedlab("scenarios", "copy", str(dest))  # would overwrite: refused, nothing touched
    assert r.returncode == 2 and "exists" in r.stderr and "--force" in r.stderr
    assert schedlab("scenarios", "copy", str(dest), "--force").returncode == 0


def test_a_path_wins_over_a_shipped_name(tmp_path: Path) -> None:
    """``schedlab run quickstart`` in a directory holding a file named
    quickstart reads that file (here: malformed, so refused naming it)."""
    (tmp_path / "quickstart").write_text("name = [\n")
    r = schedlab("run", "quickstart", cwd=tmp_path)
    assert r.returncode == 2 and "quickstart: not valid TOML" in r.stderr
    r = schedlab("run", "paper/raft_election.toml", "--set", "duration=-1", cwd=tmp_path)  # a shipped name with its suffix
    assert r.returncode == 2 and "raft_election.toml: duration: must be > 0" in r.stderr


# --- Refusals that must come before anything starts --------------------------
#
# Each runs the real entry point (cli.main.main) in a fresh interpreter
# that reports on stdout's last line whether Ray was ever imported: a refusal
# with Ray never loaded cannot have started an actor (run_scenario imports
# Ray first), which is the structural form of "refused within a second".

_BARE = ("import sys\nfrom schedlab.cli.main import main\nrc = main(sys.argv[1:])\n"
         "print('ray-imported' if 'ray' in sys.modules else 'ray-never-imported')\nsys.exit(rc)\n")


def refused(*args: str) -> str:
    """Run ``schedlab ARGS``; assert it exits 2 with one error line and
    without ever importing Ray; return that line."""
    env = {k: v for k, v in os.environ.items() if k != "RAY_ADDRESS"}
    r = subprocess.run([sys.executable, "-c", _BARE, *args], cwd=ROOT, capture_output=True, text=True, timeout=60, env=env)
    assert r.returncode == 2, r.stderr[-2000:]
    assert r.stdout.strip().splitlines()[-1] == "ray-never-imported"
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), r.stderr
    return lines[0]


def quickstart_with(tmp_path: Path, old: str, new: str) -> Path:
    """quickstart.toml with one line changed, as tmp_path/bad.toml."""
    text = (ROOT / "scenarios/quickstart.toml").read_text()
    assert old in text
    bad = tmp_path / "bad.toml"
    bad.write_text(text.replace(old, new, 1))
    return bad


def test_a_file_that_is_not_utf8_is_refused_by_every_command(tmp_path: Path) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_bytes(b"\xff\xfe garbage")
    out = tmp_path / "out"
    for args in (["run", str(bad), "--out", str(out)], ["compare", str(bad), "--out", str(out)],
                 ["sweep", str(bad), "--out", str(out)], ["chaos", "--run", str(tmp_path), "plan", str(bad)]):
        line = refused(*args)
        assert f"{bad}: <file>: not UTF-8 text (byte 0xff at line 1, column 1" in line, (args, line)
        assert not out.exists()


def test_a_non_utf8_value_names_its_key(tmp_path: Path) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_bytes((ROOT / "scenarios/quickstart.toml").read_bytes().replace(b'name = "standard"', b'name = "st\xe4ndard"'))
    line = refused("run", str(bad), "--out", str(tmp_path / "out"))
    assert f"{bad}: name: not UTF-8 text (byte 0xe4 at line 25, column 11)" in line
    assert not (tmp_path / "out").exists()


def test_a_corrupt_saved_run_is_refused_by_check(tmp_path: Path) -> None:
    (tmp_path / "run.json").write_bytes(b"\xff\xfe{}")
    (tmp_path / "events.jsonl").write_text("")
    assert "run.json: <file>: not UTF-8 text" in refused("check", str(tmp_path))
    (tmp_path / "run.json").write_text('{"capacity": [[1, 1]]')
    assert "run.json: not a run.json (JSONDecodeError" in refused("check", str(tmp_path))
    (tmp_path / "run.json").write_text('{"capacity": [[1, 1]]}')  # not all of a run.json (RunSetup)
    (tmp_path / "events.jsonl").write_text("")
    assert "run.json: not a run.json (KeyError: 'scenario')" in refused("check", str(tmp_path))
    RunSetup(scenario="s", source="s.toml", architecture="omega", seed=1, machines_per_actor=1, replicas=1, namespace="n",
             address=None, embedded=False, engine="sim", capacity=[[1.0, 1.0]], rack=[0]).write(tmp_path)
    (tmp_path / "events.jsonl").write_bytes(b"\xff\n")
    assert "events.jsonl: not UTF-8 JSON lines" in refused("check", str(tmp_path))


def test_a_task_count_too_big_to_build_is_refused(tmp_path: Path) -> None:
    bad = quickstart_with(tmp_path, "mean = 6.0, sigma", "mean = 1e12, sigma")
    line = refused("run", str(bad), "--out", str(tmp_path / "out"))
    assert f"{bad}: workload.classes[0].tasks: lognormal with a mean of 1,000,000,000,000 tasks per job" in line
    assert "at most 100,000 tasks" in line
    assert not (tmp_path / "out").exists()


def test_a_job_count_too_big_to_build_is_refused(tmp_path: Path) -> None:
    bad = quickstart_with(tmp_path, "duration = 1200.0", "duration = 1e9")
    line = refused("run", str(bad), "--out", str(tmp_path / "out"), "--set", "workload.classes.0.interarrival=0.001")
    assert f"{bad}: workload.classes[0].interarrival: ~" in line and "at most 1,000,000 jobs" in line
    assert not (tmp_path / "out").exists()


def test_a_cell_too_big_to_build_is_refused(tmp_path: Path) -> None:
    bad = quickstart_with(tmp_path, "count = 30", "count = 100000000")
    line = refused("run", str(bad), "--out", str(tmp_path / "out"))
    assert f"{bad}: cell.machine_classes: 100,000,010 machines in all; a cell can have at most 100,000" in line
    assert not (tmp_path / "out").exists()


def test_too_many_host_actors_names_the_knob_and_the_limit(tmp_path: Path) -> None:
    bad = quickstart_with(tmp_path, "count = 30", "count = 20000")
    line = refused("run", str(bad), "--out", str(tmp_path / "out"), "--set", "cell.machines_per_actor=1")
    assert f"{bad}: cell.machines_per_actor: 20,010 machines at 1 per host actor are 20,010 host actors" in line
    assert "on this machine" in line and "raise machines_per_actor to at least" in line
    # A cluster allows more actors, but not 20,010: Ray's envelope is 10,000.
    line = refused("run", str(bad), "--out", str(tmp_path / "out"), "--set", "cell.machines_per_actor=1", "--address", "127.0.0.1:1")
    assert "at most 10,000 actors on a Ray cluster" in line and "raise machines_per_actor to at least 3" in line
    assert not (tmp_path / "out").exists()


@pytest.mark.ray
@pytest.mark.untimed
def test_ctrl_c_stops_a_quiet_run_cleanly(tmp_path: Path) -> None:
    """-q prints nothing; Ctrl-C mid-run ends it with one line and exit 130,
    no traceback, and its embedded Ray (every actor with it) is gone."""
    import signal
    import time

    out = tmp_path / "run"
    env = {k: v for k, v in os.environ.items() if k != "RAY_ADDRESS"}
    p = subprocess.Popen([sys.executable, "-m", "schedlab", "run", "quickstart", "-q", "--out", str(out)],
                         cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    try:
        deadline = time.monotonic() + 120
        while not ((out / "events.jsonl").exists() and (out / "events.jsonl").stat().st_size > 0):
            assert p.poll() is None and time.monotonic() < deadline, "the run never started"
            time.sleep(0.2)
        address = json.loads((out / "run.json").read_text())["address"]
        p.send_signal(signal.SIGINT)
        stdout, stderr = p.communicate(timeout=60)
    finally:
        if p.poll() is None:
            p.kill()
    assert p.returncode == 130, stderr[-2000:]
    assert stdout == "" and "Traceback" not in stderr
    assert stderr.strip().splitlines() == ["error: interrupted (Ctrl-C): the run's actors were stopped; what it logged so "
                                           "far is in its OUT"]
    host, port = address.rsplit(":", 1)
    with socket.socket() as s:  # its Ray (GCS, raylet, every worker) is down
        s.settimeout(2.0)
        assert s.connect_ex((host, int(port))) != 0


@pytest.mark.ray
@pytest.mark.untimed
def test_verbose_sends_actor_output_to_the_terminal(tmp_path: Path) -> None:
    """-v sets what connect starts Ray with: actors' stdout reaches the
    driver's terminal (Ray's log_to_driver), so a user's print shows."""
    from schedlab.cli.main import build_parser

    args = build_parser().parse_args(["run", "quickstart", "-v"])
    assert args.verbose and not args.quiet
    with pytest.raises(SystemExit):
        build_parser().parse_args(["run", "quickstart", "-v", "-q"])  # one or the other
    code = (
        "from schedlab.actors.engines import ray_engine, verbosity\n"
        "import ray, sys\n"
        "verbosity.set_verbose(sys.argv[1] == '1')\n"
        "ray_engine.connect(None, 'schedlab-verbose-test')\n"
        "@ray.remote(num_cpus=0)\n"
        "class A:\n"
        "    def hi(self):\n"
        "        print('hello-from-an-actor', flush=True)\n"
        "a = A.remote()\n"
        "ray.get(a.hi.remote())\n"
        "import time; time.sleep(2)\n"
        "ray_engine.shutdown()\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "RAY_ADDRESS"}
    r = subprocess.run([sys.executable, "-c", code, "1"], capture_output=True, text=True, timeout=120, env=env)
    assert r.returncode == 0, r.stderr[-2000:]
    assert "hello-from-an-actor" in r.stdout + r.stderr, (r.stdout[-500:], r.stderr[-500:])


def test_verbose_shows_the_drivers_events_as_they_happen(tmp_path: Path) -> None:
    """-v also echoes the driver's own events (faults carried out, failovers)
    to stderr, one readable line each (structlog's console renderer),
    without changing what events.jsonl holds."""
    args = ["run", "quickstart", "--engine", "sim", "--set", "duration=120",
            "--set", 'faults=[{at=50.0, action="kill", target="machine-host-1", restart_after=20.0}]']
    loud = subprocess.run([sys.executable, "-m", "schedlab", *args, "-v", "--out", str(tmp_path / "v")],
                          capture_output=True, text=True, timeout=120)
    quiet = subprocess.run([sys.executable, "-m", "schedlab", *args, "-q", "--out", str(tmp_path / "q")],
                           capture_output=True, text=True, timeout=120)
    assert loud.returncode == 0 and quiet.returncode == 0, (loud.stderr[-2000:], quiet.stderr[-2000:])
    lines = [ln for ln in loud.stderr.splitlines() if ln.startswith("fault ")]
    assert len(lines) == 2 and "kind=kill" in lines[0] and "target=machine-host-1" in lines[0], loud.stderr[-2000:]
    assert "kind=restart" in lines[1] and "fault " not in quiet.stderr
    assert (tmp_path / "v" / "events.jsonl").read_bytes() == (tmp_path / "q" / "events.jsonl").read_bytes()


def test_the_think_time_warning_suggests_only_a_scale_that_exists() -> None:
    """A scheduler with zero think time is shorter than any round trip; the
    warning once suggested "a time_scale of 0 or less", which no run accepts
    (time_scale must be > 0). A positive think time gets a positive scale."""
    from schedlab.actors.run import think_time_warnings
    from schedlab.schedulers.scenario.parse import parse_scenario
    from tests.conftest import small_scenario_data

    data = small_scenario_data()
    data["omega"]["schedulers"][0].update(t_job=0.0, t_task=0.0)
    warnings = think_time_warnings(parse_scenario(data, "t.toml"), rtt_emulated=10.0)
    zero = [w for w in warnings if w.startswith("scheduler batch")]
    positive = [w for w in warnings if w.startswith("scheduler service")]
    assert zero and all("or less fits" not in w and "zero think time" in w for w in zero), zero
    assert positive and "A time_scale of 25.5 or less fits." in positive[0], positive
