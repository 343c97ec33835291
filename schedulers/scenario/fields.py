"""Scenario sections described as tables of fields, parsed from the table.

A section's plain keys (a number, a string, a flag) are each described once
by a ``Field``: name, TOML type, default, unit, check, meaning, and which
variant of the section reads it (a section with several scheduler policies:
a key only one policy reads is left unread under another). ``parse_fields`` reads a ``Table`` from that description,
with ``Table.get``'s one-line errors (file, key, problem); ``json_schema``
turns the same description into a JSON Schema, and a key reference can be
generated from it, so the parser, the reference and the schema cannot drift.

Structured keys (sub-tables, arrays of tables, distributions) are listed
too, as ``nested`` fields, so the description covers every key of the
section: ``of`` gives the fields of a sub-table or of each table of an
array, ``each`` those of every table in a table keyed by names (machine
classes, job classes) (the schema then describes them too), and ``read`` a reader that
``parse_fields`` calls in its turn (a distribution, a per-resource table);
without one their own parsers read them.
"""
from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from schedlab.schedulers.model.resources import BASE
from schedlab.schedulers.scenario.toml_table import Table, fraction, non_negative, positive

REQUIRED: Any = ...  # Table.get's marker for "no default"


@dataclass(frozen=True)
class Computed:
    """A default that depends on what was read before it (``values``: the
    section's fields so far, and ``variant``): ``doc`` says how, for readers."""

    fn: Callable[[Mapping[str, Any]], Any]
    doc: str

    def __call__(self, values: Mapping[str, Any]) -> Any:
        return self.fn(values)


@dataclass(frozen=True)
class Field:
    """One key of a section.

    ``choices``: the allowed strings (a tuple, or a function returning them:
    registries are read when the key is, not at import). ``check``: a further
    test returning the problem or None (``Table.get``'s). ``schema``: JSON
    Schema bounds the check implies, for ``json_schema``. ``variants``: the
    variants that read the key (empty: all); under another the key is left
    unread (the section refuses or reports it) and its value is
    ``otherwise`` (default: the default)."""

    name: str
    kind: type | tuple[type, ...]
    default: Any = REQUIRED
    doc: str = ""
    unit: str = ""
    check: Callable[[Any], str | None] | None = None
    choices: tuple[str, ...] | Callable[[], tuple[str, ...]] | None = None
    schema: Mapping[str, Any] | None = None
    variants: tuple[str, ...] = ()
    otherwise: Any = REQUIRED
    nested: bool = False  # read by its own parser (a sub-table, an array of tables, a distribution)
    against: Callable[[Any, Mapping[str, Any]], str | None] | None = None  # a check against the fields read before
    of: tuple[Field, ...] = ()  # the keys of a sub-table (kind dict) or of each table of an array (kind list)
    # Several tables a sub-table or an array's table may each be (told apart by their keys): JSON Schema's anyOf.
    any_of: tuple[tuple[Field, ...], ...] = ()
    each: tuple[Field, ...] = ()  # the keys of every table in a table keyed by names (its keys are the parser's to check)
    # A nested field parse_fields reads in its turn: (table, fields read before) -> value.
    read: Callable[[Table, Mapping[str, Any]], Any] | None = None
    # A key per declared resource (``per_resource``): (resource, whether it is one of BASE) -> that key's field.
    each_resource: Callable[[str, bool], Field] | None = None

    def options(self) -> tuple[str, ...] | None:
        return self.choices() if callable(self.choices) else self.choices

    def reads(self, variant: str | None) -> bool:
        return not self.variants or variant is None or variant in self.variants


# The name a per-resource key's further resources are described under.
FURTHER = "<resource>"


def per_resource(field: Callable[[str, bool], Field]) -> Field:
    """One key per resource the scenario declares (``[cell] resources``), in
    its order: ``field(r, base)`` describes resource ``r``'s key, ``base``
    telling ``cpu`` and ``mem`` (every scenario's) from further ones (a
    machine class or a task without a GPU has none: those default to 0).
    ``parse_fields`` reads them from the ``resources`` it is given."""
    return Field(FURTHER, float, nested=True, each_resource=field, doc=field(FURTHER, False).doc)


def resource_neighbours(fields: Sequence[Field]) -> set[str]:
    """The other keys of every table (here and described inside) that has a
    key per resource: names a resource may not take (a resource called
    ``count`` would be a machine class's count and its capacity at once)."""
    out: set[str] = set()
    if any(f.each_resource is not None for f in fields):
        out |= {f.name for f in fields if f.each_resource is None}
    for f in fields:
        for inner in (f.of, f.each, *f.any_of):
            out |= resource_neighbours(inner)
    return out


def amounts(values: Mapping[str, Any], resources: Sequence[str]) -> tuple[Any, ...]:
    """A parsed table's per-resource values, in ``resources``' order (a resource vector's)."""
    return tuple(values[r] for r in resources)


def expand(fields: Sequence[Field], resources: Sequence[str] | None = None) -> tuple[Field, ...]:
    """``fields`` with each per-resource field as one field per resource of
    ``resources``; without them (a reference, a schema) as ``BASE``'s and
    one named ``FURTHER`` that stands for any other."""
    out: list[Field] = []
    for f in fields:
        if f.each_resource is None:
            out.append(f)
        elif resources is None:
            out += [f.each_resource(r, True) for r in BASE] + [f.each_resource(FURTHER, False)]
        else:
            out += [f.each_resource(r, r in BASE) for r in resources]
    return tuple(out)


def _default(f: Field, values: Mapping[str, Any]) -> Any:
    return f.default(values) if isinstance(f.default, Computed) else f.default


def _check(f: Field, values: Mapping[str, Any]) -> Callable[[Any], str | None] | None:
    options = f.options()
    if options is None and f.against is None:
        return f.check
    inner, against = f.check, f.against

    def check(v: Any) -> str | None:
        if options is not None and v not in options:
            return f"must be one of {', '.join(options)}"  # toml_table.one_of's wording
        problem = inner(v) if inner is not None else None
        return problem or (against(v, values) if against is not None else None)
    return check


def read_field(t: Table, f: Field, values: Mapping[str, Any] | None = None) -> Any:
    """One field of ``t`` (consumed), its default when absent, or ScenarioError."""
    return t.get(f.name, f.kind, default=_default(f, values or {}), check=_check(f, values or {}))


def parse_fields(t: Table, fields: Sequence[Field], variant: str | None = None,
                 values: Mapping[str, Any] | None = None, skip: Sequence[str] = ()) -> dict[str, Any]:
    """The plain fields of ``t`` in table order (so the first bad key is the
    one reported), as name -> value: each read, or under a variant that does
    not read it, its ``otherwise``. ``values``: fields read before (for
    computed defaults); ``skip``: names the caller reads itself. Nested
    fields are read by their ``read``, or left to their parsers. Per-resource
    fields are read for ``values["resources"]`` (default: ``BASE``). Does not
    call ``t.done()``."""
    ctx: dict[str, Any] = {**(values or {}), "variant": variant}
    out: dict[str, Any] = {}
    for f in expand(fields, ctx.get("resources", BASE)):
        if f.name in skip or (f.nested and f.read is None):
            continue
        if f.nested and f.read is not None:
            out[f.name] = f.read(t, {**ctx, **out}) if f.reads(variant) else f.otherwise
        elif f.reads(variant):
            out[f.name] = read_field(t, f, {**ctx, **out})
        else:
            out[f.name] = _default(f, {**ctx, **out}) if f.otherwise is REQUIRED else f.otherwise
    return out


def field_names(fields: Sequence[Field], variant: str | None = None) -> tuple[str, ...]:
    """The keys a section (under ``variant``) may have."""
    return tuple(f.name for f in fields if f.reads(variant))


# What the shared checks say, as JSON Schema bounds (a field with another check gives ``schema``).
CHECK_SCHEMA: dict[Any, dict[str, Any]] = {positive: {"exclusiveMinimum": 0}, non_negative: {"minimum": 0},
                                           fraction: {"minimum": 0, "exclusiveMaximum": 1}}

_JSON_TYPES = {bool: "boolean", int: "integer", float: "number", str: "string", list: "array", dict: "object"}


def json_schema(fields: Sequence[Field], title: str = "") -> dict[str, Any]:
    """A JSON Schema (draft 2020-12) of a section described by ``fields``:
    types, enums, bounds the checks imply, defaults that are plain values,
    units and meanings as descriptions; required keys; no other keys. A
    field with ``of`` (or ``any_of``) is described down to its sub-table's
    (or each array item's) keys."""
    out: dict[str, Any] = {"$schema": "https://json-schema.org/draft/2020-12/schema", **object_schema(fields)}
    if title:
        out["title"] = title
    return out


def object_schema(fields: Sequence[Field]) -> dict[str, Any]:
    """A table's schema; a per-resource key's further resources (any name
    ``[cell] resources`` may declare) are its other keys."""
    fields = expand(fields)
    further = [f for f in fields if f.name == FURTHER]
    fields = [f for f in fields if f.name != FURTHER]
    out: dict[str, Any] = {"type": "object", "properties": {f.name: _property(f) for f in fields},
                           "additionalProperties": _property(further[0]) if further else False}
    required = [f.name for f in fields if f.default is REQUIRED]
    if required:
        out["required"] = required
    return out


def _property(f: Field) -> dict[str, Any]:
    kinds = f.kind if isinstance(f.kind, tuple) else (f.kind,)
    types = sorted({_JSON_TYPES[k] for k in kinds})
    if "number" in types and "integer" in types:
        types.remove("integer")
    p: dict[str, Any] = {"type": types[0] if len(types) == 1 else types}
    if (options := f.options()) is not None:
        p["enum"] = list(options)
    p.update(f.schema if f.schema is not None else CHECK_SCHEMA.get(f.check, {}))
    if f.of and "array" in types:
        p["items"] = object_schema(f.of)
    elif f.of:
        p.update({k: v for k, v in object_schema(f.of).items() if k != "type"})
    if f.any_of:
        forms = {"anyOf": [object_schema(x) for x in f.any_of]}
        p.update({"items": forms} if "array" in types else forms)
    if f.each:
        p["additionalProperties"] = object_schema(f.each)
    if f.default is not REQUIRED and not isinstance(f.default, Computed) and _plain(f.default):
        p["default"] = f.default
    text = " ".join(x for x in (f.doc, f"Unit: {f.unit}." if f.unit else "",
                                f"Default: {f.default.doc}." if isinstance(f.default, Computed) else "",
                                f"Read only when the variant is {' or '.join(f.variants)}." if f.variants else "")
                    if x)
    if text:
        p["description"] = text
    return p


def _plain(v: Any) -> bool:
    """A default JSON can carry (not infinity, not a tuple of floats with NaN)."""
    if isinstance(v, float):
        return v == v and abs(v) != float("inf")
    return isinstance(v, (bool, int, str)) or (isinstance(v, list) and all(_plain(x) for x in v))
