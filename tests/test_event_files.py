"""A run's events written compressed (``[metrics] events = "jsonl.gz"``):
the same run, the same events line for line, the same summary, every reader
(check, report, the API's tables) reads it, and ``schedlab export --format
jsonl`` writes it out plain."""
from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

import schedlab
from schedlab.actors.common.event_files import NoEvents, events_file, iter_events, read_events
from schedlab.cli.main import main

FAULTS = [{"at": 150.0, "action": "kill", "target": "machine-host-1"}]  # lost tasks: the checker has work to do


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> tuple[schedlab.Run, schedlab.Run]:
    base = tmp_path_factory.mktemp("formats")
    plain = schedlab.run("quickstart", engine="sim", out=base / "plain", duration=300, overrides={"faults": FAULTS})
    packed = schedlab.run("quickstart", engine="sim", out=base / "packed", duration=300,
                          overrides={"faults": FAULTS, "metrics.events": "jsonl.gz"})
    return plain, packed


def test_a_compressed_run_holds_the_same_events_and_summary(runs: tuple[schedlab.Run, schedlab.Run]) -> None:
    plain, packed = runs
    assert events_file(plain.path).name == "events.jsonl" and not (packed.path / "events.jsonl").exists()
    raw = gzip.decompress(events_file(packed.path).read_bytes())
    assert raw == (plain.path / "events.jsonl").read_bytes()  # the sim is deterministic: byte for byte
    a, b = plain.summary, packed.summary
    assert a["events"] == b["events"] > 0
    assert {k: v for k, v in a.items() if k != "namespace"} == {k: v for k, v in b.items() if k != "namespace"}


def test_every_reader_reads_a_compressed_run(runs: tuple[schedlab.Run, schedlab.Run], capsys: pytest.CaptureFixture) -> None:
    plain, packed = runs
    assert main(["check", str(packed.path)]) == 0
    assert json.loads(capsys.readouterr().out)["invariants"] == plain.summary["invariants"]
    assert list(packed.table("tasks")) == list(plain.table("tasks"))
    assert main(["report", str(packed.path)]) == 0
    assert (packed.path / "report.md").is_file()


def test_export_jsonl_writes_the_events_plain(runs: tuple[schedlab.Run, schedlab.Run], tmp_path: Path) -> None:
    plain, packed = runs
    assert main(["export", str(packed.path), "--format", "jsonl", "--out", str(tmp_path)]) == 0
    assert (tmp_path / "events.jsonl").read_bytes() == (plain.path / "events.jsonl").read_bytes()
    # A plain run exported into its own directory is left as it is.
    before = (plain.path / "events.jsonl").stat().st_mtime_ns
    assert main(["export", str(plain.path), "--format", "jsonl"]) == 0
    assert (plain.path / "events.jsonl").stat().st_mtime_ns == before


def test_iter_events_shares_repeated_strings_and_reads_what_json_reads(runs: tuple[schedlab.Run, schedlab.Run]) -> None:
    plain, _ = runs
    lines = (plain.path / "events.jsonl").read_text().splitlines()
    got = read_events(plain.path)
    assert got == [json.loads(line) for line in lines]
    txns = [e for e in got if e["event"] == got[-1]["event"]]
    assert len(txns) > 1
    # One object per distinct key and per short value (what halves a long run's events in memory).
    assert len({id(k) for e in txns for k in e if k == "event"}) == 1
    assert len({id(e["event"]) for e in txns}) == 1


def test_a_directory_without_events_is_named(tmp_path: Path) -> None:
    with pytest.raises(NoEvents, match=str(tmp_path)):
        next(iter_events(tmp_path))


def test_an_unknown_format_is_refused_before_anything_runs(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    assert main(["run", "quickstart", "--engine", "sim", "--out", str(tmp_path / "r"), "--set", "metrics.events=bson"]) == 2
    err = capsys.readouterr().err
    assert "metrics.events" in err and "jsonl.gz" in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "r").exists()
