"""The event contract's mechanism: what a declared event is.

Every line of a run's ``events.jsonl`` is one event: ``{fields..., "event":
name, "t": emulated seconds, "actor": who}``. An ``EventType`` declares one
name once: its one-line meaning and its fields (name, type, unit, and
whether it is required or optional, with what its absence means). Emitters
pass the declared object to ``EventLog.emit``, which refuses a plain string
and checks the field names against the declaration (every required one
present, none undeclared), raising ``EventFieldError``: a missing field
fails loudly where it is written, not silently as a reader's default.
Readers name events by the same objects.

An ``EventType`` *is* its name (a ``str`` subclass): ``ev.get(TXN, [])``
reads the lists ``by_event`` keys by name, ``e["event"] == TXN`` compares,
and JSON renders it as the plain name, so events.jsonl keeps its shape and
kept runs stay readable. Validation is two frozenset comparisons on the
fields' key view, both precomputed per event type, because emit is on every
actor's hot path.

Pure data: no Ray, no clock, no I/O; imported by emitters (actors/, pure
cores that produce events) and readers (analysis, scripts, tests).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterable

# Every event has these, added by the emitter's log: ``t`` (emulated
# seconds; an emitter may pass it when it reports the same instant
# elsewhere) and ``actor`` (who wrote it). ``event`` is the name.
STAMP_FIELDS = ("event", "t", "actor")


@dataclass(frozen=True)
class Field:
    """One field of an event. ``absent`` is None for a required field; for
    an optional one it says what its absence means (the reader's rule)."""

    name: str
    type: str  # "int", "float", "bool", "str", "list", "dict", or a union "int|null"
    meaning: str = ""
    unit: str = ""  # "s" (emulated seconds), "ms" (wall), "tasks", "" when it is a count or a name
    absent: str | None = None

    @property
    def required(self) -> bool:
        return self.absent is None

    def accepts(self, value: Any) -> bool:
        """Whether ``value`` (as read back from JSON) is of the declared type."""
        return any(_TYPES[t](value) for t in self.type.split("|"))


# A declared type name -> whether a JSON value is one (a bool is no int; an int is a float).
_TYPES = {
    "int": lambda v: isinstance(v, int) and not isinstance(v, bool),
    "float": lambda v: isinstance(v, (int, float)) and not isinstance(v, bool),
    "bool": lambda v: isinstance(v, bool),
    "str": lambda v: isinstance(v, str),
    "list": lambda v: isinstance(v, list),
    "dict": lambda v: isinstance(v, dict),
    "null": lambda v: v is None,
}


def req(name: str, type: str, meaning: str = "", unit: str = "") -> Field:
    """A required field."""
    return Field(name, type, meaning, unit)


def opt(name: str, type: str, absent: str, meaning: str = "", unit: str = "") -> Field:
    """An optional field; ``absent`` says what its absence means."""
    return Field(name, type, meaning, unit, absent)


class EventFieldError(TypeError):
    """An event written against its declaration (a missing required field,
    an undeclared one, or a name not declared at all)."""


class EventType(str):
    """A declared event: its name (the ``str`` value), ``meaning``,
    ``fields`` and, precomputed for ``EventLog.emit``, ``required`` and
    ``allowed`` (frozensets of field names, ``t`` allowed everywhere)."""

    meaning: str
    fields: tuple[Field, ...]
    required: frozenset[str]
    allowed: frozenset[str]

    def __new__(cls, name: str, meaning: str, fields: Iterable[Field] = ()) -> EventType:
        self = super().__new__(cls, name)
        fields = tuple(fields)
        names = [f.name for f in fields]
        if bad := [f"{f.name}: {f.type}" for f in fields if not set(f.type.split("|")) <= _TYPES.keys()]:
            raise ValueError(f"event {name}: unknown field types {bad} (one of {sorted(_TYPES)}, or a union a|b)")
        if len(set(names)) != len(names):
            raise ValueError(f"event {name}: a field declared twice ({names})")
        if clash := set(names) & {"event", "actor"}:
            raise ValueError(f"event {name}: {sorted(clash)} is the stamp's, not a field")
        set_ = object.__setattr__
        set_(self, "meaning", meaning)
        set_(self, "fields", fields)
        set_(self, "required", frozenset(f.name for f in fields if f.required))
        set_(self, "allowed", frozenset(names) | {"t"})
        return self

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"event {self.name}: a declaration is immutable")

    @property
    def name(self) -> str:
        return str.__str__(self)

    def field(self, name: str) -> Field:
        for f in self.fields:
            if f.name == name:
                return f
        raise KeyError(f"event {self.name} declares no field {name!r}")

    def check(self, fields: dict[str, Any]) -> None:
        """Raise EventFieldError unless ``fields`` (without the stamp) has
        every required field and no undeclared one."""
        keys = fields.keys()
        if keys >= self.required and keys <= self.allowed:
            return
        missing = sorted(self.required - keys)
        extra = sorted(keys - self.allowed)
        raise EventFieldError(f"event {self.name}: " + "; ".join(
            part for part in (f"missing required {missing}" if missing else "",
                              f"undeclared {extra}" if extra else "") if part))

    def __reduce__(self) -> tuple:  # pickles (Ray ships shells by value) as the same declaration
        return (EventType, (self.name, self.meaning, self.fields))

    def __repr__(self) -> str:
        return f"EventType({self.name!r})"


def check_line(declared: dict[str, EventType], event: dict[str, Any]) -> None:
    """Check one event as read back from events.jsonl against the
    declarations by name: EventFieldError when its name is undeclared, its
    fields break the declaration (the stamp's set aside) or a value is not
    of its field's declared type."""
    name = event.get("event")
    decl = declared.get(name)  # type: ignore[arg-type]
    if decl is None:
        raise EventFieldError(f"event {name!r}: not declared")
    fields = {k: v for k, v in event.items() if k not in ("event", "actor")}
    decl.check(fields)
    if not isinstance(fields.get("t"), (int, float)):
        raise EventFieldError(f"event {name}: t is {fields.get('t')!r}, not emulated seconds")
    for f in decl.fields:
        if f.name in fields and not f.accepts(fields[f.name]):
            raise EventFieldError(f"event {name}: {f.name} = {fields[f.name]!r} is not a {f.type}")
