"""The docs' reference pages are what the code generates now: a scenario
key, a command or flag, an event or an exit code added, renamed or removed
in the code without the page (or on the page without the code) fails here.
Rewrite them with ``python scripts/gen_reference.py``."""
from __future__ import annotations

from pathlib import Path

import pytest

from schedlab.api.reference import PAGES
from schedlab.schedulers import arch as registry
from schedlab.schedulers.events import declared
from schedlab.schedulers.model.workload import DIST_KINDS
from schedlab.schedulers.scenario import section_fields as common
from schedlab.schedulers.scenario.toml_table import DIST_KEYS, ScenarioError, Table, read_dist

DOCS = Path(__file__).resolve().parents[1] / "docs"


@pytest.mark.parametrize("rel", sorted(PAGES))
def test_a_reference_page_is_what_the_code_generates(rel: str) -> None:
    assert (DOCS / rel).read_text() == PAGES[rel](), f"docs/{rel} is stale: python scripts/gen_reference.py"


def test_the_pages_name_every_key_event_and_command() -> None:
    """What the generator walks is everything there is (so a page equal to
    its generator is complete): spot checks from the other side."""
    keys = (DOCS / "reference" / "scenario-keys.md").read_text()
    for f in (*common.TOP, *common.METRICS, *common.COORDINATOR):
        assert f"| `{f.name}` |" in keys
    for name, spec in registry.registry().items():
        assert f"### `{name}`" in keys
        for f in spec.fields:
            assert f"| `{f.name}` |" in keys
    events = (DOCS / "reference" / "events.md").read_text()
    assert all(f"### `{name}`" in events for name in declared())
    cli = (DOCS / "reference" / "cli.md").read_text()
    for command in ("run", "compare", "chaos", "sweep", "report", "check", "export", "schema", "scenarios", "soak"):
        assert f"## `schedlab {command}`" in cli


def _paths(value: object, at: str = "") -> set[str]:
    """A summary's key paths, lists as ``[]`` and maps of names as ``<name>``
    where the schema says so (matched below)."""
    if isinstance(value, dict) and value and at:
        return {p for k, v in value.items() for p in _paths(v, f"{at}.{k}")}
    if isinstance(value, dict) and not at:
        return {p for k, v in value.items() for p in _paths(v, k)}
    if isinstance(value, list) and value and all(isinstance(x, dict) for x in value) and at == "schedulers":
        return {p for x in value for p in _paths(x, f"{at}[]")}
    return {at}


def _generalize(path: str) -> str:
    import re

    path = re.sub(r"^(wait_time_s|trace)\.by_class\.[^.]+\.", r"\1.by_class.<class>.", path)
    path = re.sub(r"^utilization\.by_resource\.[^.]+$", "utilization.by_resource.<resource>", path)
    path = re.sub(r"^devices\.by_model\.[^.]+\..*$", "devices.by_model.<model>", path)
    return re.sub(r"^actors\.[^.]+$", "actors.<role>", path)


@pytest.mark.parametrize("arch", registry.names())
def test_the_summary_schema_is_what_a_run_writes_both_ways(arch: str, tmp_path: Path) -> None:
    """Every key a run writes is declared (the architecture's own section
    aside), and every declared key is written by this run (in a cell with
    devices and a gang class where the architecture runs them; the devices
    and gangs blocks are null, a leaf, where it cannot)."""
    from schedlab.actors.analysis.summary_schema import SUMMARY
    from schedlab.actors.run import run_scenario
    from schedlab.schedulers.scenario.parse import parse_scenario
    from tests.conformance.scenarios import everything_data

    data = everything_data(arch) | {"engine": "sim"}
    summary = run_scenario(parse_scenario(data, f"<conformance {arch}>"), tmp_path)
    written = {_generalize(p) for p in _paths({k: v for k, v in summary.items() if k != arch})}
    # null where the architecture runs none (inflation, trace: their own tests, tests/traces for the trace)
    blocks = ("devices", "gangs", "inflation", "trace")
    written |= {b for b in blocks if summary[b] is not None}  # the block's own entry, declared beside its keys
    declared_paths = {k.path for k in SUMMARY
                      if not any(k.path.startswith(f"{b}.") and summary[b] is None for b in blocks)}
    assert written - declared_paths == set(), "written, not declared (actors/analysis/summary_schema.py)"
    # placement is written only on a multi-node cluster (null here: a leaf, as declared).
    assert declared_paths - written == set(), "declared, not written"


@pytest.mark.parametrize("kind", sorted(DIST_KINDS))
def test_a_distribution_tables_keys_are_what_its_parser_reads(kind: str) -> None:
    """Every declared key of a ``dist`` is read (a table with them all
    parses), and no other is (one more is refused by name)."""
    assert set(DIST_KEYS) == set(DIST_KINDS)
    keys = dict(DIST_KEYS[kind])
    sample = {"value": 2.0, "mean": 2.0, "sigma": 0.5, "low": 1.0, "high": 3.0, "values": [1.0, 2.0], "weights": [1.0, 3.0]}
    table = {"dist": kind, **{k: sample[k] for k in keys}}
    read_dist(Table({"x": table}, "", "<test>"), "x")
    with pytest.raises(ScenarioError, match="extra"):
        read_dist(Table({"x": {**table, "extra": 1.0}}, "", "<test>"), "x")
