"""The [sparrow] section: bad input exits 2 in one line naming the key."""
from __future__ import annotations

import copy

import pytest

from schedlab.schedulers.scenario.parse import parse_scenario
from schedlab.schedulers.scenario.toml_table import ScenarioError
from tests.conformance.scenarios import conformance_data

BASE = conformance_data("sparrow")  # 12 machines


def _parse(**section: object) -> object:
    data = copy.deepcopy(BASE)
    data["sparrow"] = section
    return parse_scenario(data, "s.toml").section


def test_defaults_and_example_parse() -> None:
    s = _parse()
    assert (s.policy, s.d, s.schedulers, s.hawk) == ("late_binding", 2, 2, False)
    h = _parse(**BASE["sparrow"])
    assert h.hawk and h.long_cutoff == 40.0 and h.hybrid.steal


def test_d_larger_than_the_cell_is_refused() -> None:
    with pytest.raises(ScenarioError, match=r"s\.toml: sparrow\.d: probe ratio d=13 must be between 1 and the number of workers \(12\)"):
        _parse(policy="batch", d=13)
    _parse(policy="batch", d=12)


@pytest.mark.parametrize("bad, key", [({"policy": "round_robin"}, "sparrow.policy"), ({"d": 0}, "sparrow.d"),
                                       ({"hybrid": {"short_fraction": 0.5}}, "sparrow.hybrid.cutoff"),
                                       ({"hybrid": {"cutoff": 10.0, "short_fraction": 1.0}}, "sparrow.hybrid.short_fraction"),
                                       ({"hybrid": {"cutoff": 10.0, "nope": 1}}, "sparrow.hybrid.nope"),
                                       ({"slots": -1}, "sparrow.slots")])
def test_bad_keys_are_named(bad: dict, key: str) -> None:
    with pytest.raises(ScenarioError) as e:
        _parse(**bad)
    msg = str(e.value)
    assert msg.startswith(f"s.toml: {key}:") and "\n" not in msg, msg


def test_d_too_large_exits_2_in_one_line(tmp_path) -> None:
    import subprocess
    import sys

    p = tmp_path / "bad.toml"
    p.write_text('name = "x"\narchitecture = "sparrow"\nduration = 10.0\n[[cell.machine_classes]]\nname = "a"\ncount = 2\n'
                 'cpu = 2.0\nmem = 4.0\n[[workload.classes]]\nname = "b"\nkind = "batch"\ninterarrival = 1.0\ntasks = 1.0\n'
                 'duration = 1.0\ncpu = 1.0\nmem = 1.0\n[sparrow]\nd = 3\n')
    r = subprocess.run([sys.executable, "-m", "schedlab", "run", str(p)], capture_output=True, text=True, timeout=60)
    assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1, r.stderr
    assert "sparrow.d: probe ratio d=3" in r.stderr
