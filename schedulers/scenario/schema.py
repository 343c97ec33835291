"""The JSON Schema of a scenario file, whole: composed from the field tables
the parsers read (``section_fields``, each registered architecture's
``fields``, the federation's), so it cannot drift from them.

An editor that reads schemas for TOML (Even Better TOML / taplo) completes
keys and flags mistakes as the user types, from ``schedlab schema`` or the
copy shipped in the package (``scenarios/schedlab.schema.json``). The
parsers stay the judges: a few checks need the whole file (a class name a
section routes to, a fault's target in the roster) and are theirs alone.
A file is one of three shapes, all described here: one cell (an
``architecture`` and its section), a comparison (``architectures = [...]``
with a section each) or a federation (``[[sites]]``, each a cell, and
the section joining them, ``federation.SECTION``); any of them may ``include`` fragments, so no key is
required at the top."""
from __future__ import annotations

import json
from typing import Any

from schedlab.schedulers import arch as registry
from schedlab.schedulers.federation import spec as federation
from schedlab.schedulers.scenario import section_fields as common
from schedlab.schedulers.scenario.fields import json_schema, object_schema

SCHEMA_ID = "https://schedlab.dev/schema/scenario.json"

# Top-level tables read by the common parser, by key.
SECTIONS = {"cell": common.CELL, "workload": common.WORKLOAD, "metrics": common.METRICS, "substrate": common.SUBSTRATE,
            "liveness": common.LIVENESS, "coordinator": common.COORDINATOR}


def _cell_properties() -> dict[str, Any]:
    """One cell's top level: the common keys, its sections, every
    architecture's section (described where the architecture has a table)."""
    top = json_schema(common.TOP)["properties"]
    for key, fields in SECTIONS.items():
        top[key] = {**object_schema(fields), "description": top[key].get("description", "")}
    for name, spec in registry.registry().items():
        section = object_schema(spec.fields) if spec.fields else {"type": "object"}
        top[name] = {**section, "description": f"[{name}]: the {name} architecture's section (its page says what each key does)."}
    return top


def scenario_schema() -> dict[str, Any]:
    """The schema (draft 2020-12) every scenario file validates against."""
    cell = _cell_properties()
    site = {"type": "object", "properties": {**cell, "site": {"type": "string", "description": "The site's name."}},
            "additionalProperties": True, "description": "A site: a whole cell of any architecture."}
    props = {
        **cell,
        "include": {"type": ["string", "array"], "items": {"type": "string"},
                    "description": "Fragments (TOML files beside this one) read first; this file's keys win."},
        "architectures": {"type": "array", "items": {"enum": list(registry.names())},
                          "description": "A comparison: the architectures to run the same cell on (schedlab compare)."},
        "sweep": {"type": "object", "description": "A sweep's grid, as `--set KEY=V1,V2` would give it (schedlab sweep)."},
        federation.SITES: {"type": "array", "items": site, "description": "A federation: its sites (schedlab run)."},
        federation.SECTION: {**object_schema(federation.JOIN_FIELDS),
                             "description": f"[{federation.SECTION}]: how the sites are joined."},
    }
    return {"$schema": "https://json-schema.org/draft/2020-12/schema", "$id": SCHEMA_ID,
            "title": "schedlab scenario file", "type": "object", "properties": props, "additionalProperties": False}


def schema_text() -> str:
    """The schema as the shipped copy holds it (``scenarios/schedlab.schema.json``)."""
    return json.dumps(scenario_schema(), indent=2) + "\n"
