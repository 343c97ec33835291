"""The scenario files' JSON Schema (``schedlab schema``): generated from the
parsers' field tables, shipped in the package as generated, every shipped
scenario valid against it, and a mistake a user types flagged by it (what
an editor reading the schema shows as they type)."""
from __future__ import annotations

import copy
import json
import tomllib
from pathlib import Path

import jsonschema
import pytest

from schedlab.cli.main import main
from schedlab.schedulers.scenario.schema import scenario_schema, schema_text

ROOT = Path(__file__).resolve().parents[1]
SHIPPED_SCHEMA = ROOT / "scenarios" / "schedlab.schema.json"
SCENARIOS = sorted((ROOT / "scenarios").rglob("*.toml"))
VALIDATOR = jsonschema.Draft202012Validator(scenario_schema())


def test_the_schema_is_valid_and_the_shipped_copy_is_what_the_code_generates(capsys: pytest.CaptureFixture) -> None:
    jsonschema.Draft202012Validator.check_schema(scenario_schema())
    assert SHIPPED_SCHEMA.read_text() == schema_text(), "run: schedlab schema --out scenarios/schedlab.schema.json"
    assert main(["schema"]) == 0
    assert json.loads(capsys.readouterr().out) == scenario_schema()


@pytest.mark.parametrize("path", SCENARIOS, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_shipped_scenario_validates(path: Path) -> None:
    errors = [f"{'/'.join(map(str, e.absolute_path))}: {e.message}" for e in VALIDATOR.iter_errors(tomllib.loads(path.read_text()))]
    assert not errors, errors


def _errors(data: dict) -> list[str]:
    return sorted("/".join(map(str, e.absolute_path)) for e in VALIDATOR.iter_errors(data))


@pytest.mark.parametrize("mistake, where", [
    (lambda d: d.update(duraton=600.0), ""),  # a key misspelt at the top
    (lambda d: d.update(duration="ten minutes"), "duration"),  # a wrong type
    (lambda d: d.update(engine="slurm"), "engine"),  # not one of the choices
    (lambda d: d["cell"]["machine_classes"][0].update(count=0), "cell/machine_classes/0/count"),  # out of bounds
    (lambda d: d["omega"].update(conflict_modes="resource"), "omega"),  # a key misspelt in an architecture's section
    (lambda d: d["metrics"].update(events="bson"), "metrics/events"),
])
def test_a_mistake_is_flagged_where_it_is(mistake, where: str) -> None:  # type: ignore[no-untyped-def]
    data = tomllib.loads((ROOT / "scenarios" / "quickstart.toml").read_text())
    data.setdefault("metrics", {})
    assert _errors(data) == []
    bad = copy.deepcopy(data)
    mistake(bad)
    assert _errors(bad) == [where]
