"""Shared fixtures: one session-scoped local Ray for every integration test."""
from __future__ import annotations

import copy
import os
import shutil
import socket
import tempfile
from pathlib import Path
from typing import Any, Callable, Iterator

import pytest

from schedlab.actors.analysis.kept_runs import keep_if_bad, violated


def pytest_itemcollected(item: pytest.Item) -> None:
    """Under pytest-xdist (``-n``, ``--dist loadgroup``: the default, see
    pyproject), every live Ray test goes to one worker: they share one
    session-scoped local Ray (a second one would fight it for 2 cores and
    double the start-up), and mostly wait on time-scaled wall time, while
    the other tests, CPU-bound and independent, run on the other worker
    beside them. Marked as each item is collected: xdist reads the groups
    in its own ``pytest_collection_modifyitems``, which runs before ours
    under pytest 9.2 (both workers would then start a Ray). Without xdist the
    mark does nothing."""
    if item.get_closest_marker("ray") is not None:
        # Untimed live tests (marked ``untimed``: a run that completes, its
        # files) form a group of their own, which xdist may give the other
        # worker: run beside the CPU-bound tests there, under that worker's
        # lowered priority, they shortened the suite by their length without
        # judging any time.
        item.add_marker(pytest.mark.xdist_group("ray-untimed" if item.get_closest_marker("untimed") else "ray"))


_yielded = False


def pytest_runtest_setup(item: pytest.Item) -> None:
    """A worker running tests without Ray under xdist lowers its own CPU
    priority first: live tests judge time-scaled wall time (at x50 an
    offer's 30 s timeout is 0.6 wall s), and CPU-bound tests running beside
    them at the same priority make them miss those deadlines."""
    global _yielded
    timed = item.get_closest_marker("ray") is not None and item.get_closest_marker("untimed") is None
    if not _yielded and os.environ.get("PYTEST_XDIST_WORKER") and not timed:
        os.nice(10)
        _yielded = True


def small_scenario_data(**top: Any) -> dict:
    """A small, fast Omega scenario as raw TOML data; tests tweak it.
    Live Ray by default; ``engine="sim"`` for tests of scheduling behaviour,
    which the virtual clock runs in seconds and repeats exactly."""
    data: dict[str, Any] = {
        "name": "small",
        "architecture": "omega",
        "seed": 3,
        "time_scale": 50.0,
        "duration": 300.0,
        "cell": {
            "machines_per_actor": 4,
            "machine_classes": [
                {"name": "a", "count": 8, "cpu": 4.0, "mem": 16.0, "racks": 2},
                {"name": "b", "count": 4, "cpu": 8.0, "mem": 32.0, "labels": ["big"]},
            ],
        },
        "workload": {
            "prefill_utilization": 0.3,
            "classes": [
                {"name": "batch", "kind": "batch", "interarrival": 2.0, "tasks": {"dist": "exponential", "mean": 3.0},
                 "duration": {"dist": "exponential", "mean": 30.0}, "cpu": 0.5, "mem": 1.0},
                {"name": "service", "kind": "service", "interarrival": 30.0, "tasks": 2.0, "cpu": 1.0, "mem": 2.0},
            ],
        },
        "omega": {
            "schedulers": [
                {"name": "batch", "classes": ["batch"], "count": 2, "t_job": 0.5, "t_task": 0.01},
                {"name": "service", "classes": ["service"], "t_job": 5.0, "t_task": 0.1, "policy": "best_fit"},
            ],
        },
        "metrics": {"sample_interval": 5.0},
    }
    data.update(copy.deepcopy(top))
    return data


@pytest.fixture(scope="session")
def ray_session() -> Iterator[None]:
    from schedlab.actors.engines import ray_engine  # first: it sets Ray's auth mode before Ray is imported

    import ray

    ray_engine.start_local(num_cpus=2, namespace="schedlab-tests")
    try:
        yield
    finally:
        ray.shutdown()


def assert_events_declared(events: list[dict], where: str) -> None:
    """Every event of a run is declared (schedlab.schedulers.events), with
    its required fields present, no undeclared one, and values of their
    declared types; every distinct problem listed once."""
    from schedlab.schedulers.events import EventFieldError, check_line, declared

    every, problems = declared(), set()
    for e in events:
        try:
            check_line(every, e)
        except EventFieldError as x:
            problems.add(str(x))
    assert events and not problems, f"{where}: " + "\n".join(sorted(problems))


def assert_invariants_hold(invariants: dict[str, int], out: str | Path, label: str) -> None:
    """Fail if any invariant is broken, keeping the run's directory first
    (actors.analysis.kept_runs: a test's tmp_path is gone after a few sessions and
    the rare failure with it) and naming the kept copy in the message."""
    kept = keep_if_bad(out, invariants, label)
    assert kept is None, f"invariants violated: {violated(invariants)}; run kept in {kept}"


@pytest.fixture
def invariants_hold(request: pytest.FixtureRequest) -> Callable[[dict[str, int], str | Path], None]:
    """``assert_invariants_hold`` with the test's own name as the label."""
    return lambda invariants, out: assert_invariants_hold(invariants, out, request.node.name)


@pytest.fixture
def stale_ray_tmp() -> Iterator[dict[str, str]]:
    """An environment whose Ray temp dir records a cluster that is gone."""
    tmp = Path(tempfile.mkdtemp(prefix="rt-", dir="/tmp"))  # short: Ray's socket paths must fit 107 bytes
    with socket.socket() as s:  # a port that is certainly closed: bound, never listening
        s.bind(("127.0.0.1", 0))
        dead = s.getsockname()[1]
        (tmp / "ray").mkdir()
        (tmp / "ray" / "ray_current_cluster").write_text(f"127.0.0.1:{dead}")
        env = {k: v for k, v in os.environ.items() if k != "RAY_ADDRESS"} | {"RAY_TMPDIR": str(tmp)}
        try:
            yield env
        finally:
            shutil.rmtree(tmp, ignore_errors=True)


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--update-golden", action="store_true",
                     help="tests/test_golden.py: rewrite tests/golden/*.json from this tree's sim runs")


def scenario_error(data: dict, source: str = "bad.toml") -> str:
    """The one line ``parse_scenario`` refuses ``data`` with (it must refuse
    it, in one line naming the file)."""
    from schedlab.schedulers.scenario.parse import ScenarioError, parse_scenario

    with pytest.raises(ScenarioError) as e:
        parse_scenario(data, source)
    msg = str(e.value)
    assert "\n" not in msg and msg.startswith(f"{source}: ")
    return msg


def cli_run_refused(scenario_text: str, tmp_path: Path) -> str:
    """``schedlab run`` of ``scenario_text`` (written to tmp_path/bad.toml)
    must exit 2 with one line on stderr and write nothing; returns the line."""
    import subprocess
    import sys

    bad = tmp_path / "bad.toml"
    bad.write_text(scenario_text)
    r = subprocess.run([sys.executable, "-m", "schedlab", "run", str(bad), "--out", str(tmp_path / "o")],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 2, r.stderr
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1, lines
    assert not (tmp_path / "o").exists()  # nothing started, nothing written
    return lines[0]
