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
from schedlab.schedulers.archs.yarn import queue_section
from schedlab.schedulers.archs.yarn import spec as yarn
from schedlab.schedulers.faults.plan import FAULT_FIELDS
from schedlab.schedulers.federation import spec as federation
from schedlab.schedulers.model.resources import DEFAULT
from schedlab.schedulers.scenario import section_fields as common
from schedlab.schedulers.scenario.fields import FURTHER, Computed, Field, expand, json_schema, parse_fields
from schedlab.schedulers.scenario.parse import parse_scenario
from schedlab.schedulers.scenario.gpu_trace import TRACE_CLASS
from schedlab.schedulers.scenario.swf_class import SWF_CLASS
from schedlab.schedulers.scenario.toml_table import ScenarioError, Table, positive
from tests.conformance.scenarios import conformance_data
from tests.conftest import small_scenario_data

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
        # A key not described is refused, or is what additionalProperties describes (a further resource).
        p = props.get(key, schema.get("additionalProperties"))
        if not isinstance(p, dict):
            if key not in ignore:
                out.append(f"{k}: not in the schema")
            continue
        types = p["type"] if isinstance(p["type"], list) else [p["type"]]
        if isinstance(v, bool) and "boolean" not in types or not any(isinstance(v, TYPES[t]) for t in types):
            out.append(f"{k}: {v!r} is not {types}")
            continue
        if isinstance(v, dict) and "properties" in p:
            out += _errors(p, v, at=f"{k}.")
        if isinstance(v, dict) and "properties" in (each := p.get("additionalProperties") or {}):
            out += [e for name, x in v.items()
                    for e in (_errors(each, x, at=f"{k}.{name}.") if isinstance(x, dict) else [f"{k}.{name}: not a table"])]
        if isinstance(v, dict) and "anyOf" in p:
            out += _any_of(p["anyOf"], v, f"{k}.")
        items = p.get("items", {})
        if isinstance(v, list) and ("properties" in items or "anyOf" in items):
            out += [e for i, x in enumerate(v)
                    for e in (_item(items, x, f"{k}[{i}].") if isinstance(x, dict) else [f"{k}[{i}]: not a table"])]
        if "enum" in p and v not in p["enum"]:
            out.append(f"{k}: {v!r} not in {p['enum']}")
        for word, ok in (("minimum", lambda b: v >= b), ("maximum", lambda b: v <= b),
                         ("exclusiveMinimum", lambda b: v > b), ("exclusiveMaximum", lambda b: v < b)):
            if word in p and isinstance(v, (int, float)) and not ok(p[word]):
                out.append(f"{k}: {v!r} breaks {word} {p[word]}")
    return out + [f"{k}: required" for k in schema.get("required", []) if k not in data]


def _item(schema: dict, data: dict, at: str) -> list[str]:
    return _any_of(schema["anyOf"], data, at) if "anyOf" in schema else _errors(schema, data, at=at)


def _any_of(forms: list[dict], data: dict, at: str) -> list[str]:
    """None when ``data`` is one of ``forms``; else the fewest errors of one."""
    return min((_errors(f, data, at=at) for f in forms), key=len)


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


@pytest.mark.parametrize("path", [p for p in SHIPPED if "sites" in tomllib.loads(p.read_text())],
                         ids=lambda p: str(p.relative_to(ROOT)))
def test_a_shipped_federations_join_and_faults_validate_against_their_tables(path: Path) -> None:
    data = tomllib.loads(path.read_text())
    assert not _errors(json_schema(federation.JOIN_FIELDS), data["multicluster"])
    for fault in data.get("faults", [{"at": 10.0, "target": "board", "restart_after": 5.0}]):
        assert not _errors(json_schema(federation.FAULT_FIELDS), fault)
    assert _errors(json_schema(federation.FAULT_FIELDS), {"at": 1.0, "target": "board", "peer": "meta"}) == [
        "peer: not in the schema"]


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


def _every_field(fields: tuple[Field, ...]) -> list[Field]:
    """The fields of a table and of every table described inside it."""
    return [x for f in expand(fields) for x in (f, *_every_field(f.of), *_every_field(f.each),
                                        *(y for form in f.any_of for y in _every_field(form)))]


ALL_TABLES = {**{".".join(k) or "<top level>": v for k, v in SECTIONS.items()}, **ARCH_TABLES,
              "multicluster": federation.JOIN_FIELDS, "federation faults": federation.FAULT_FIELDS}


@pytest.mark.parametrize("where", sorted(ALL_TABLES))
def test_a_plain_default_passes_its_own_check(where: str) -> None:
    """A default the schema states is one a file may write (else the schema
    would advertise a value the parser refuses)."""
    for f in _every_field(ALL_TABLES[where]):
        if f.default is None or f.default is ... or isinstance(f.default, Computed):
            continue
        assert f.check is None or f.check(f.default) is None, (where, f.name, f.default)
        assert f.options() is None or f.default in f.options(), (where, f.name, f.default)  # type: ignore[operator]


def test_the_schema_describes_machine_classes_job_classes_and_faults() -> None:
    mc = json_schema(common.CELL)["properties"]["machine_classes"]["items"]
    assert list(mc["properties"]) == ["name", *DEFAULT, "count", "racks", "labels", "model"]
    # Any further resource [cell] resources declares is a key too: a number, 0 when left out.
    assert mc["required"] == [*DEFAULT, "count"] and mc["additionalProperties"]["type"] == "number"
    assert mc["additionalProperties"]["default"] == 0.0
    drawn, swf, trace = json_schema(common.WORKLOAD)["properties"]["classes"]["items"]["anyOf"]
    assert list(trace["properties"]) == [f.name for f in TRACE_CLASS] and trace["required"][:2] == ["name", "gpu_trace"]
    assert list(drawn["properties"]) == [f.name for f in expand(common.JOB_CLASS) if f.name != FURTHER]
    assert list(swf["properties"]) == [f.name for f in expand(SWF_CLASS) if f.name != FURTHER]
    assert {"interarrival", "tasks", "duration", "bursts", *DEFAULT} <= set(drawn["properties"])
    assert drawn["properties"]["bursts"]["properties"]["on"]["exclusiveMinimum"] == 0
    assert "swf" not in drawn["properties"] and {"swf", "procs_per_task", "max_jobs", *DEFAULT} <= set(swf["properties"])
    assert drawn["required"] == ["name", "interarrival", "tasks", *DEFAULT] and swf["required"][:2] == ["name", "swf"]
    fault = json_schema(common.TOP)["properties"]["faults"]["items"]
    assert list(fault["properties"]) == [f.name for f in FAULT_FIELDS] == [
        "at", "action", "target", "peer", "duration", "delay", "restart_after"]
    assert fault["required"] == ["at", "action"] and "default" not in fault["properties"]["delay"]


def test_the_schema_describes_yarn_queues_and_the_am() -> None:
    props = json_schema(yarn.FIELDS)["properties"]
    assert list(props["am"]["properties"]) == list(DEFAULT) and props["am"]["additionalProperties"]["type"] == "number"
    queue = props["queues"]["items"]
    assert list(queue["properties"]) == [f.name for f in queue_section.QUEUE_FIELDS] and queue["required"] == ["name"]
    assert list(queue["properties"]["max_share"]["properties"]) == list(DEFAULT)
    assert "Default: 100 for an only child, else 0." in queue["properties"]["capacity"]["description"]


FAULT = {"at": 5.0, "action": "pause", "target": "machine-host-0", "duration": 1.0}
ITEMS = {  # a list of tables in a scenario -> the schema of its items
    ("cell", "machine_classes"): json_schema(common.CELL)["properties"]["machine_classes"]["items"],
    ("workload", "classes"): json_schema(common.WORKLOAD)["properties"]["classes"]["items"],
    ("faults",): json_schema(common.TOP)["properties"]["faults"]["items"],
}


@pytest.mark.parametrize("path, index, key", [
    (("cell", "machine_classes"), 1, "colour"), (("workload", "classes"), 0, "colour"),
    (("workload", "classes"), 1, "procs_per_task"),  # an SWF class's key in a drawn class
    (("faults",), 0, "colour"),
])
def test_an_unknown_key_in_a_listed_table_is_refused_by_name_and_by_the_schema(path: tuple[str, ...], index: int,
                                                                              key: str) -> None:
    data = small_scenario_data(faults=[FAULT])
    items: Any = data
    for k in path:
        items = items[k]
    item = items[index]
    assert _item(ITEMS[path], item, "") == []
    item[key] = 2
    if path == ("faults",):
        assert _item(ITEMS[path], item, "") == [f"{key}: not in the schema"]
    else:
        # A table with an amount per resource takes any name as a further
        # resource [cell] resources may declare: the schema (which cannot see
        # that list) only checks it is an amount; the parser refuses it by name.
        assert _item(ITEMS[path], item, "") == []
        item[key] = "red"
        assert _item(ITEMS[path], item, "") != []
    with pytest.raises(ScenarioError) as e:
        parse_scenario(data, "bad.toml")
    assert str(e.value) == f"bad.toml: {'.'.join(path)}[{index}].{key}: unknown key"


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
                            "keyed": {"a": {"n": 2}, "b": {"m": 1}, "c": 4},
                            "forms": [{"n": 2}, {"s": "a"}, {"n": 1, "s": "a"}]}) == [
        "items[1].n: -1 breaks exclusiveMinimum 0", "items[1].x: not in the schema", "items[2]: not a table",
        "sub.n: 'a' is not ['number']", "keyed.b.m: not in the schema", "keyed.c: not a table",
        "forms[2].s: not in the schema"]


ITEM = (Field("n", float, 1.0, check=positive, doc="a number"),)
OTHER = (Field("s", str, doc="a string"),)
FIELDS_OF = (Field("items", list, [], nested=True, of=ITEM), Field("sub", dict, {}, nested=True, of=ITEM),
             Field("keyed", dict, {}, nested=True, each=ITEM), Field("forms", list, [], nested=True, any_of=(ITEM, OTHER)))


def test_the_schema_describes_sub_tables_and_array_items() -> None:
    props = json_schema(FIELDS_OF)["properties"]
    assert props["items"]["items"]["properties"]["n"] == {"type": "number", "exclusiveMinimum": 0, "default": 1.0,
                                                          "description": "a number"}
    assert props["items"]["items"]["additionalProperties"] is False
    assert props["sub"]["type"] == "object" and props["sub"]["properties"]["n"]["type"] == "number"
    assert props["keyed"]["additionalProperties"]["properties"]["n"]["exclusiveMinimum"] == 0
    assert [list(f["properties"]) for f in props["forms"]["items"]["anyOf"]] == [["n"], ["s"]]
    assert props["forms"]["items"]["anyOf"][1]["required"] == ["s"]


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
