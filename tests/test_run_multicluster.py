"""A federation of sites (scenarios/multicluster.toml, shortened) end to
end on the sim engine: observational clients herd where a meta-scheduler
spreads, p2p sharing moves jobs off the overloaded sites, a killed
meta-scheduler holds jobs until it is back, every site keeps its own
invariants; bad input refused in one line; and one small federation on a
real Ray."""
from __future__ import annotations

import copy
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from schedlab.actors.common.event_files import read_events
from schedlab.actors.federation.run import run_federation
from schedlab.schedulers.federation.spec import parse_federation
from schedlab.schedulers.scenario.parse import ScenarioError
from tests.conftest import assert_events_declared

ROOT = Path(__file__).resolve().parent.parent
DATA = tomllib.loads((ROOT / "scenarios/multicluster.toml").read_text())


def _data(mode: str, duration: float = 400.0) -> dict:
    data = copy.deepcopy(DATA)
    data.update(duration=duration, engine="sim")
    data["multicluster"]["mode"] = mode
    return data


def _run(data: dict, out: Path, least: int = 300) -> dict:
    s = run_federation(parse_federation(data, "mc.toml"), out)
    assert all(v == 0 for v in s["invariants"].values()), s["invariants"]
    for f in sorted(out.rglob("events.jsonl")):
        assert_events_declared(read_events(f), str(f))
    j = s["jobs"]
    assert j["released"] == j["routed"] + j["held_at_end"] > least
    return s


@pytest.fixture(scope="module")
def modes(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict]:
    return {m: _run(_data(m), tmp_path_factory.mktemp(m)) for m in ("observational", "meta", "p2p")}


def test_observational_clients_herd_and_the_meta_scheduler_spreads(modes: dict[str, dict]) -> None:
    obs, meta = modes["observational"]["imbalance"], modes["meta"]["imbalance"]
    # Every client reads the same board: in most windows some site gets nothing.
    assert obs["windows"]["with_an_idle_site"] > obs["windows"]["n"] / 2, obs
    assert meta["windows"]["with_an_idle_site"] == 0, meta
    assert obs["windows"]["mean_max_mean"] > 1.5 * meta["windows"]["mean_max_mean"], (obs, meta)
    # Larger than the sites' size imbalance: the busiest site gets over
    # twice the mean per capacity, and in most windows some site nothing.
    assert obs["windows"]["mean_max_mean"] > 2.0 and obs["capacity_ratio"] == 2.5
    assert modes["meta"]["wait_from_release_s"]["p90"] < modes["observational"]["wait_from_release_s"]["p90"]


def test_p2p_moves_jobs_off_overloaded_sites(modes: dict[str, dict], tmp_path: Path) -> None:
    p2p = modes["p2p"]
    assert p2p["jobs"]["transferred"] > 20
    data = _data("p2p")
    data["multicluster"]["threshold"] = 1e9  # nobody ever shares: every job stays home
    home = _run(data, tmp_path / "home")
    assert home["jobs"]["transferred"] == 0
    assert p2p["wait_from_release_s"]["p90"] < home["wait_from_release_s"]["p90"]
    big = next(s for s in p2p["sites"] if s["name"] == "big")
    big_home = next(s for s in home["sites"] if s["name"] == "big")
    assert big["routed"] > big_home["routed"]  # the big site took work the small ones shed


def test_every_site_ran_its_own_architecture_and_kept_its_invariants(modes: dict[str, dict]) -> None:
    for s in modes["meta"]["sites"]:
        assert s["jobs"]["submitted"] == s["routed"]
        assert all(v == 0 for v in s["invariants"].values())
    assert {s["architecture"] for s in modes["meta"]["sites"]} == {"omega", "borg", "dispatcher"}


def test_a_killed_meta_scheduler_holds_jobs_until_it_is_back_or_sends_them_home(tmp_path: Path) -> None:
    data = _data("meta", duration=400.0)
    data["faults"] = [{"target": "meta", "at": 100.0, "restart_after": 60.0}]
    s = _run(data, tmp_path / "wait")
    assert [f["kind"] for f in s["faults"]] == ["kill", "restart"]
    assert s["jobs"]["held_at_end"] == 0 and s["jobs"]["fell_back"] == 0
    data["multicluster"]["on_failure"] = "home"
    home = _run(data, tmp_path / "home")
    assert home["jobs"]["fell_back"] > 10


@pytest.mark.parametrize("change, message", [
    (lambda d: d["sites"][2].update(architecture="kubernetess"), "mc.toml: sites[2].architecture: must be one of"),
    (lambda d: d["sites"].__delitem__(slice(1, None)), "mc.toml: sites: a federation needs at least two sites"),
    (lambda d: d["sites"][1].update(name="a"), "mc.toml: sites[1].name: site names must be unique"),
    (lambda d: d["sites"][1]["cell"]["machine_classes"][0].update(count=0),
     "mc.toml: sites[1].cell.machine_classes[0].count: must be > 0"),
    (lambda d: d["multicluster"].update(mode="gossip"), "mc.toml: multicluster.mode: must be one of"),
    (lambda d: d.update(faults=[{"target": "client-0", "at": 5.0}]), "mc.toml: faults[0].target: unknown federation actor"),
    (lambda d: d["sites"][0].update(users=0.0), "mc.toml: sites[0].users: must be > 0"),
])
def test_bad_federations_are_refused_in_one_line(change, message: str) -> None:
    data = _data("meta")
    change(data)
    with pytest.raises(ScenarioError) as e:
        parse_federation(data, "mc.toml")
    assert "\n" not in str(e.value) and str(e.value).startswith(message), str(e.value)


def test_the_command_refuses_a_bad_federation_with_exit_2_and_nothing_left(tmp_path: Path) -> None:
    bad = (ROOT / "scenarios/multicluster.toml").read_text().replace('architecture = "borg"', 'architecture = "borgg"')
    (tmp_path / "bad.toml").write_text(bad)
    r = subprocess.run([sys.executable, "-m", "schedlab", "run", str(tmp_path / "bad.toml"), "--out", str(tmp_path / "o")],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1, r.stderr
    assert "sites[2].architecture" in r.stderr and not (tmp_path / "o").exists()


@pytest.mark.ray
@pytest.mark.untimed
def test_a_small_federation_runs_live(ray_session: None, tmp_path: Path) -> None:
    """Two sites (Omega and the dispatcher) on a real Ray behind a
    meta-scheduler: every job routed and every invariant held."""
    data = _data("meta", duration=200.0)
    data["engine"] = "ray"
    data["sites"] = [s for s in data["sites"] if s["name"] in ("a", "d")]
    data["workload"]["classes"][0]["interarrival"] = 2.5
    s = _run(data, tmp_path / "live", least=40)
    assert s["engine"] == "ray" and {x["name"] for x in s["sites"]} == {"a", "d"}
    assert all(x["routed"] > 0 and x["jobs"]["completed"] > 0 for x in s["sites"])
