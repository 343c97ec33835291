"""The registry's contract, for every registered architecture, without Ray:
its ArchSpec parses its own example, counts the actors its roster names,
describes every role it uses, names a live half that loads, and a malformed
section is refused with exit 2 in one line naming the key; and the generic
modules never name an architecture (they iterate over the registry)."""
from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from schedlab.actors.arch import Architecture, architecture
from schedlab.schedulers import arch as registry
from schedlab.schedulers.scenario.parse import parse_scenario, roster_for
from tests.conformance.scenarios import conformance_data

ROOT = Path(__file__).resolve().parents[2]
ARCHS = registry.names()
# The modules every architecture shares: they look architectures up, never name one.
GENERIC = (
    "actors/run.py", "actors/topology.py", "actors/arch.py", "actors/analysis", "actors/chaos", "actors/common",
    "actors/engines", "actors/coordinator", "schedulers/arch.py", "schedulers/scenario", "schedulers/faults", "schedulers/events",
    "cli", "api/scenario_files.py", "api/compare.py", "api/report.py", "api/report_sweep.py",
    "experiments/soak.py", "experiments/crosscheck_table.py",
)


def test_the_registry_lists_the_builtins_once_in_order() -> None:
    from schedlab.schedulers.archs import BUILTIN, DEFAULT

    assert ARCHS[: len(BUILTIN)] == tuple(registry._load(p).name for p in BUILTIN)
    assert len(set(ARCHS)) == len(ARCHS) and DEFAULT in ARCHS


@pytest.mark.parametrize("name", ARCHS)
def test_spec_and_live_half_agree(name: str) -> None:
    spec = registry.spec_of(name)
    live = architecture(name)
    assert isinstance(live, Architecture) and live.name == spec.name == name
    assert spec.live.split(":")[0].startswith(("schedlab.actors.", spec.live.split(".")[0]))
    assert spec.title and callable(live.build)


@pytest.mark.parametrize("name", ARCHS)
def test_roster_actors_and_roles_are_consistent(name: str) -> None:
    spec = registry.spec_of(name)
    sc = parse_scenario(conformance_data(name), f"{name}.toml")
    own = spec.roster(sc)
    assert sum(n for _, n in spec.actors(sc)) == sum(len(v) for v in own.values())
    described = {r.name for r in spec.roles}
    assert set(own) <= described, "every role the roster uses is described in ArchSpec.roles"
    for key, _n in spec.actors(sc):
        assert key.split(".")[0].split("[")[0] in (name, "coordinator"), f"{key}: a key of the architecture's section"
    roster = roster_for(sc)
    names = roster.names()
    assert len(names) == len(set(names)), "actor names are unique"
    for role, peers in spec.peers.items():
        assert role in roster.members or role in described, role
        assert all(p in registry.all_roles() for p in peers), peers
    for d in spec.deciders(sc):
        assert d.t_job >= 0 and d.t_task >= 0


def _schedlab(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "RAY_ADDRESS"}
    return subprocess.run([sys.executable, "-m", "schedlab", *args], cwd=cwd, capture_output=True, text=True, timeout=60, env=env)


@pytest.mark.parametrize("name", ARCHS)
def test_a_malformed_section_is_refused_in_one_line(name: str, tmp_path: Path) -> None:
    import tomllib

    data = conformance_data(name)
    data[name] = dict(data.get(name, {}), no_such_key_here=1)
    path = tmp_path / "bad.toml"
    path.write_text(_toml(data))
    assert tomllib.loads(path.read_text()) == data
    r = _schedlab("run", str(path), cwd=tmp_path)
    lines = r.stderr.strip().splitlines()
    assert r.returncode == 2 and len(lines) == 1, r.stderr
    assert f"bad.toml: {name}.no_such_key_here: unknown key" in lines[0], lines[0]
    data[name] = 3  # not a table at all
    path.write_text(_toml(data))
    r = _schedlab("run", str(path), cwd=tmp_path)
    assert r.returncode == 2 and f"bad.toml: {name}: expected" in r.stderr, r.stderr


def test_generic_modules_never_name_an_architecture() -> None:
    words = re.compile(r"\b(" + "|".join(re.escape(n) for n in ARCHS) + r")\b", re.I)
    hits = []
    for where in GENERIC:
        p = ROOT / where
        for f in ([p] if p.is_file() else sorted(p.rglob("*.py"))):
            for i, line in enumerate(f.read_text().splitlines(), 1):
                if words.search(line):
                    hits.append(f"{f.relative_to(ROOT)}:{i}: {line.strip()}")
    assert not hits, "\n".join(hits)


def _toml(data: dict) -> str:
    """Just enough TOML for the conformance scenarios (tables, arrays of tables, scalars, lists)."""
    def value(v: object) -> str:
        if isinstance(v, bool):
            return "true" if v else "false"
        if isinstance(v, str):
            return '"' + v.replace("\\", "\\\\").replace('"', '\\"') + '"'
        if isinstance(v, list):
            return "[" + ", ".join(value(x) for x in v) + "]"
        if isinstance(v, dict):
            return "{" + ", ".join(f"{k} = {value(x)}" for k, x in v.items()) + "}"
        return repr(v)

    return "\n".join(f"{k} = {value(v)}" for k, v in data.items()) + "\n"


def test_outside_packages_register_through_the_entry_point_group(monkeypatch: pytest.MonkeyPatch) -> None:
    """A distribution names its ArchSpec under ``schedlab.architectures``;
    generic code then lists and parses it like a built-in. A broken or
    clashing registration fails in one line naming it."""
    import dataclasses
    from importlib.metadata import EntryPoint

    from schedlab.schedulers.archs.dispatcher.spec import SPEC as DISPATCHER

    toy = dataclasses.replace(DISPATCHER, name="toy", title="a toy (the dispatcher under another name)")
    monkeypatch.setattr(sys.modules[__name__], "TOY", toy, raising=False)

    def points(group: str) -> list[EntryPoint]:
        assert group == registry.ENTRY_POINT_GROUP
        return [EntryPoint("toy", f"{__name__}:TOY", group)]

    registry.registry.cache_clear()
    monkeypatch.setattr(registry, "entry_points", lambda group: points(group))
    try:
        assert registry.names()[-1] == "toy" and registry.spec_of("toy") is toy
        data = conformance_data("dispatcher")
        data["architecture"] = "toy"
        data["toy"] = data.pop("dispatcher")
        assert parse_scenario(data, "toy.toml").section.queue == "fair"
        clash = "schedlab.schedulers.archs.dispatcher.spec:SPEC"  # a second 'dispatcher'
        monkeypatch.setattr(registry, "entry_points", lambda group: [EntryPoint("again", clash, group)])
        registry.registry.cache_clear()
        with pytest.raises(registry.RegistryError, match="entry point again = .*: the name 'dispatcher' is taken"):
            registry.registry()
        monkeypatch.setattr(registry, "entry_points", lambda group: [EntryPoint("gone", "no_such_module:SPEC", group)])
        registry.registry.cache_clear()
        with pytest.raises(registry.RegistryError, match="entry point gone = no_such_module:SPEC: cannot load"):
            registry.registry()
    finally:
        monkeypatch.undo()
        registry.registry.cache_clear()
        assert "toy" not in registry.names()
