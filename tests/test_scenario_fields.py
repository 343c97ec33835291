"""Field tables (``schedulers.scenario.fields``): a section parsed from its
description, and that description as a JSON Schema covering every key the
parser accepts (each shipped scenario's keys of a converted section validate)."""
from __future__ import annotations

import copy
import math
import tomllib
from pathlib import Path
from typing import Any

import pytest

from schedlab.schedulers import arch as registry
from schedlab.schedulers.archs.yarn import spec as yarn
from schedlab.schedulers.scenario import section_fields as common
from schedlab.schedulers.scenario.fields import Computed, Field, json_schema, parse_fields
from schedlab.schedulers.scenario.parse import parse_scenario
from schedlab.schedulers.scenario.toml_table import ScenarioError, Table, positive
from tests.conformance.scenarios import conformance_data

ROOT = Path(__file__).resolve().parents[1]
SHIPPED = sorted((ROOT / "scenarios").rglob("*.toml"))
SECTIONS = {  # path in the file -> its field table
    (): common.TOP, ("cell",): common.CELL, ("workload",): common.WORKLOAD, ("metrics",): common.METRICS,
    ("substrate",): common.SUBSTRATE, ("liveness",): common.LIVENESS, ("coordinator",): common.COORDINATOR,
}
ARCH_TABLES = {name: spec.fields for name, spec in registry.registry().items() if spec.fields}
TYPES = {"boolean": bool, "integer": int, "number": (int, float), "string": str, "array": list, "object": dict}
OTHER_TOP = {"include", "sites", "architectures", "sweep"}  # read before parse_scenario, or by another command


def _errors(schema: dict, data: dict, ignore: set[str] = frozenset(), at: str = "") -> list[str]:
    """The keyword subset json_schema emits, checked (jsonschema is no
    dependency), down into described sub-tables and array items."""
    out = []
    props = schema["properties"]
    for key, v in data.items():
        k = f"{at}{key}"
        if key not in props:
            if key not in ignore:
                out.append(f"{k}: not in the schema")
            continue
        p = props[key]
        types = p["type"] if isinstance(p["type"], list) else [p["type"]]
        if isinstance(v, bool) and "boolean" not in types or not any(isinstance(v, TYPES[t]) for t in types):
            out.append(f"{k}: {v!r} is not {types}")
            continue
        if isinstance(v, dict) and "properties" in p:
            out += _errors(p, v, at=f"{k}.")
        if isinstance(v, dict) and "properties" in (each := p.get("additionalProperties") or {}):
            out += [e for name, x in v.items()
                    for e in (_errors(each, x, at=f"{k}.{name}.") if isinstance(x, dict) else [f"{k}.{name}: not a table"])]
        if isinstance(v, list) and "properties" in p.get("items", {}):
            out += [e for i, x in enumerate(v)
                    for e in (_errors(p["items"], x, at=f"{k}[{i}].") if isinstance(x, dict) else [f"{k}[{i}]: not a table"])]
        if "enum" in p and v not in p["enum"]:
            out.append(f"{k}: {v!r} not in {p['enum']}")
        for word, ok in (("minimum", lambda b: v >= b), ("maximum", lambda b: v <= b),
                         ("exclusiveMinimum", lambda b: v > b), ("exclusiveMaximum", lambda b: v < b)):
            if word in p and isinstance(v, (int, float)) and not ok(p[word]):
                out.append(f"{k}: {v!r} breaks {word} {p[word]}")
    return out + [f"{k}: required" for k in schema.get("required", []) if k not in data]


def _section(data: dict, path: tuple[str, ...]) -> dict | None:
    for k in path:
        data = data.get(k) if isinstance(data, dict) else None
    return data if isinstance(data, dict) else None


@pytest.mark.parametrize("path", SHIPPED, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_key_of_a_shipped_scenario_validates_against_its_sections_schema(path: Path) -> None:
    data = tomllib.loads(path.read_text())
    for where, fields in SECTIONS.items():
        section = _section(data, where)
        if section is None or (where == () and ("sites" in data or "include" in data)):
            continue  # a federation's or an included fragment's top level is another command's
        schema, ignore = json_schema(fields), set()
        if where == ():  # architecture sections have tables of their own; a comparison may leave cell/workload to a fragment
            ignore = OTHER_TOP | set(registry.names())
            schema = dict(schema, required=[k for k in schema.get("required", []) if k not in ("cell", "workload")])
        errors = _errors(schema, section, ignore)
        assert not errors, (".".join(where) or "<top level>", errors)


@pytest.mark.parametrize("path", SHIPPED, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_key_of_a_shipped_architecture_section_validates_against_its_table(path: Path) -> None:
    """For every registered architecture with a field table, its section in
    this file (at the top, or in a federation's site) has only described
    keys, each of its described type and within its bounds."""
    data = tomllib.loads(path.read_text())
    sites = [s for s in data.get("sites", []) if isinstance(s, dict)] if isinstance(data.get("sites"), list) else []
    for where, table in [("", data)] + [(f"sites[{i}].", s) for i, s in enumerate(sites)]:
        for name, fields in ARCH_TABLES.items():
            section = table.get(name)
            if isinstance(section, dict):
                errors = _errors(json_schema(fields), section, at=f"{where}{name}.")
                assert not errors, errors


@pytest.mark.parametrize("name", sorted(ARCH_TABLES))
def test_an_architectures_example_validates_and_its_tables_defaults_are_its_parsers(name: str) -> None:
    """The registered example section validates against the table's schema;
    writing each plain key the example leaves out with the table's default
    (a plain, variant-free one) parses to the same section as leaving it out."""
    data = conformance_data(name)
    assert not _errors(json_schema(ARCH_TABLES[name]), data[name])
    explicit = copy.deepcopy(data)
    written = []
    for f in ARCH_TABLES[name]:
        plain = isinstance(f.default, (bool, int, str)) or isinstance(f.default, float) and math.isfinite(f.default)
        if not f.nested and not f.variants and plain and f.name not in data[name]:
            explicit[name][f.name] = f.default
            written.append(f.name)
    assert written, "no plain key to write"
    assert parse_scenario(explicit, "t.toml").section == parse_scenario(data, "t.toml").section, written


def test_architectures_have_field_tables() -> None:
    """The registry exposes tables (so the loop above checks something)."""
    assert len(ARCH_TABLES) >= 2 and all(isinstance(f, Field) for fs in ARCH_TABLES.values() for f in fs)


def test_the_schema_check_can_fail() -> None:
    schema = json_schema(yarn.FIELDS)
    assert _errors(schema, {"scheduler": "lottery", "am_pools": 0, "rms": True, "nonsense": 1}) == [
        "scheduler: 'lottery' not in ['capacity', 'fair', 'fifo']", "am_pools: 0 breaks minimum 1",
        "rms: True is not ['integer']", "nonsense: not in the schema"]
    nested = json_schema(FIELDS_OF)
    assert _errors(nested, {"items": [{"n": 1}, {"n": -1, "x": 2}, 3], "sub": {"n": "a"},
                            "keyed": {"a": {"n": 2}, "b": {"m": 1}, "c": 4}}) == [
        "items[1].n: -1 breaks exclusiveMinimum 0", "items[1].x: not in the schema", "items[2]: not a table",
        "sub.n: 'a' is not ['number']", "keyed.b.m: not in the schema", "keyed.c: not a table"]


ITEM = (Field("n", float, 1.0, check=positive, doc="a number"),)
FIELDS_OF = (Field("items", list, [], nested=True, of=ITEM), Field("sub", dict, {}, nested=True, of=ITEM),
             Field("keyed", dict, {}, nested=True, each=ITEM))


def test_the_schema_describes_sub_tables_and_array_items() -> None:
    props = json_schema(FIELDS_OF)["properties"]
    assert props["items"]["items"]["properties"]["n"] == {"type": "number", "exclusiveMinimum": 0, "default": 1.0,
                                                          "description": "a number"}
    assert props["items"]["items"]["additionalProperties"] is False
    assert props["sub"]["type"] == "object" and props["sub"]["properties"]["n"]["type"] == "number"
    assert props["keyed"]["additionalProperties"]["properties"]["n"]["exclusiveMinimum"] == 0


def test_parse_fields_calls_a_nested_fields_reader_in_its_turn() -> None:
    order: list[str] = []
    fields = (Field("a", int, 0), Field("d", dict, None, nested=True, read=lambda t, got: order.append(f"d after a={got['a']}") or 9),
              Field("b", int, 0, variants=("v",)), Field("e", dict, None, nested=True, variants=("v",), otherwise=-1,
                                                          read=lambda t, got: 1 / 0))
    assert parse_fields(Table({"a": 4}, "s", "f.toml"), fields, variant="w") == {"a": 4, "d": 9, "b": 0, "e": -1}
    assert order == ["d after a=4"]


def test_the_schema_carries_types_defaults_units_and_variants() -> None:
    props = json_schema(yarn.FIELDS, "[yarn]")["properties"]
    assert props["am_expiry"]["type"] == "number" and props["am_expiry"]["default"] == 600.0
    assert "Unit: emulated s." in props["am_expiry"]["description"]
    assert "Read only when the variant is capacity." in props["node_locality_delay"]["description"]
    assert "default" not in props["min_share_preemption_timeout"]  # infinity is no JSON
    assert "Default: 3 under Capacity, 0.5 under Fair." in props["monitor_interval"]["description"]
    top = json_schema(common.TOP)
    assert top["required"] == ["duration", "cell", "workload"] and top["additionalProperties"] is False
    assert "sim" in top["properties"]["engine"]["enum"] and "yarn" in top["properties"]["architecture"]["enum"]


FIELDS = (
    Field("kind", str, "a", choices=("a", "b")),
    Field("size", float, Computed(lambda v: 2.0 if v["variant"] == "b" else 1.0, "2 for b"), check=positive),
    Field("only_b", int, 7, variants=("b",), otherwise=0),
    Field("below", int, 1, against=lambda v, got: None if v < got["size"] else f"must be below size ({got['size']:g})"),
    Field("nested", dict, None, nested=True),
)


def test_parse_fields_reads_in_order_with_computed_defaults_and_variants() -> None:
    t = Table({"only_b": 3}, "s", "f.toml")
    assert parse_fields(t, FIELDS, variant="b") == {"kind": "a", "size": 2.0, "only_b": 3, "below": 1}
    t = Table({"only_b": 3}, "s", "f.toml")
    assert parse_fields(t, FIELDS, variant="a") == {"kind": "a", "size": 1.0, "only_b": 0, "below": 1}
    assert "only_b" not in t.used  # unread under a variant that does not read it: the section refuses or reports it


@pytest.mark.parametrize("data, message", [
    ({"kind": "c"}, "f.toml: s.kind: must be one of a, b (got 'c')"),
    ({"size": -1}, "f.toml: s.size: must be > 0 (got -1.0)"),
    ({"size": math.inf}, "f.toml: s.size: must be finite"),
    ({"below": 5, "size": 2}, "f.toml: s.below: must be below size (2) (got 5)"),
    ({"kind": 3, "size": -1}, "f.toml: s.kind: expected str, got int"),  # the first bad key in table order
])
def test_parse_fields_errors_are_one_line_naming_file_and_key(data: dict[str, Any], message: str) -> None:
    with pytest.raises(ScenarioError) as e:
        parse_fields(Table(data, "s", "f.toml"), FIELDS)
    assert str(e.value) == message
