"""The run-kind table (``api.kinds``): what kind a file or an OUT directory
is, and that the command line, ``check``, ``report`` and the API dispatch on
the table rather than on a file's keys. One short federation on the sim
engine (seconds) for check, report and the API."""
from __future__ import annotations

import argparse
import dataclasses
import json
from pathlib import Path

import pytest

import schedlab
from schedlab.api import kinds
from schedlab.api.report import write_report
from schedlab.cli.main import main
from schedlab.schedulers.scenario.parse import ScenarioError

CALLED: list[tuple[dict, argparse.Namespace]] = []


def fake_cli(data: dict, args: argparse.Namespace, console: object) -> int:
    """The handler of the made-up kind below: records the call, exits 7."""
    CALLED.append((data, args))
    return 7


def test_each_file_is_the_first_kind_whose_marker_it_has() -> None:
    assert kinds.of_data({"sites": [], "architectures": ["x"]}, "f.toml").name == "federation"
    assert kinds.of_data({"architectures": ["x"]}, "f.toml").name == "comparison"
    assert kinds.of_data({"architecture": "x"}, "f.toml").name == "cell"
    assert [k.marker for k in kinds.KINDS][-1] is None, "the last row takes any file"
    with pytest.raises(ScenarioError, match=r"f\.toml: <top level>: must be a table"):
        kinds.of_data([], "f.toml")  # type: ignore[arg-type]


def test_a_command_refuses_a_kind_it_does_not_take_naming_the_file_the_key_and_the_command() -> None:
    with pytest.raises(ScenarioError, match=r"^f\.toml: sites: this file is a federation of sites: run it with `schedlab run`$"):
        kinds.of_data({"sites": []}, "f.toml", "compare")
    with pytest.raises(ScenarioError, match=r"^f\.toml: architectures: .* run it with `schedlab compare`$"):
        kinds.of_data({"architectures": ["omega"]}, "f.toml", "run")


def test_schedlab_run_dispatches_on_the_table(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                              capsys: pytest.CaptureFixture) -> None:
    """A kind added to the table is what `schedlab run` calls for a file
    that has its marker; a command it does not list refuses the file in one
    line naming it, exit 2."""
    fake = dataclasses.replace(kinds.kind("federation"), name="fake", what="a made-up kind", marker="fake_marker",
                               commands=("run",), cli=f"{__name__}:fake_cli")
    monkeypatch.setattr(kinds, "KINDS", (fake, *kinds.KINDS))
    path = tmp_path / "fake.toml"
    path.write_text('fake_marker = 1\nname = "x"\n')
    CALLED.clear()
    assert main(["run", str(path), "-q"]) == 7
    assert [d["fake_marker"] for d, _ in CALLED] == [1]
    assert main(["compare", str(path), "-q"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [f"error: {path}: fake_marker: this file is a made-up kind: run it with `schedlab run`"]


def test_a_directory_of_no_kind_is_refused_naming_it(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    with pytest.raises(schedlab.NotARun, match=f"^{tmp_path}: not a schedlab run directory"):
        kinds.of_out(tmp_path)
    assert main(["check", str(tmp_path)]) == 2
    assert capsys.readouterr().err.count("\n") == 1


@pytest.fixture(scope="module")
def federation(tmp_path_factory: pytest.TempPathFactory) -> schedlab.Run:
    out = tmp_path_factory.mktemp("fed") / "out"
    return schedlab.run("multicluster", engine="sim", duration=80, out=out)


def test_the_api_runs_a_federation_through_the_table(federation: schedlab.Run) -> None:
    s = federation.summary
    assert s["kind"] == "federation" and kinds.of_out(federation.path).name == "federation"
    sites = federation.sites()
    assert list(sites) == [x["name"] for x in s["sites"]]
    assert sum(len(r.jobs().rows) for r in sites.values()) == s["jobs"]["routed"] > 0
    with pytest.raises(schedlab.NotARun, match="a federation: its tables are its sites'"):
        federation.jobs()
    assert schedlab.load(federation.path).summary == s


def test_check_recomputes_a_federations_invariants_from_its_files(federation: schedlab.Run, tmp_path: Path,
                                                                   capsys: pytest.CaptureFixture) -> None:
    assert main(["check", str(federation.path)]) == 0
    printed = json.loads(capsys.readouterr().out)["invariants"]
    assert printed["lost_jobs"] == 0 and set(printed) >= {"lost_jobs", "overcommit", "double_placement"}
    # A job released that no site ever saw, nor held: lost, found from the files alone.
    import shutil

    copy = tmp_path / "fed"
    shutil.copytree(federation.path, copy)
    with (copy / "events.jsonl").open("a") as f:
        f.write(json.dumps({"t": 1.0, "event": "fed_released", "actor": "users", "job_id": 10**9, "work": 1.0}) + "\n")
    assert main(["check", str(copy)]) == 3
    assert "lost_jobs" in capsys.readouterr().err


def test_report_writes_a_federations_report_with_a_section_per_site(federation: schedlab.Run) -> None:
    pytest.importorskip("matplotlib")
    text = write_report(federation.path).read_text()
    names = [x["name"] for x in federation.summary["sites"]]
    assert text.startswith(f"# {federation.summary['scenario']}: federation of {len(names)} sites")
    for n in names:
        assert f"\n## {n} (" in text and (federation.path / "plots" / n / "utilization.png").is_file()
