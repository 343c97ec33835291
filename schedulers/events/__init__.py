"""The event contract: every event a run writes is declared once, as an
``EventType`` (``contract``): the shared ones in ``shared``, each
architecture's own in its ``schedulers/archs/<name>/events.py``, registered
on its ``ArchSpec.events``. Emitters pass the declaration to
``EventLog.emit`` (which refuses a plain string and checks the fields);
readers name events by the same objects. ``declared()`` lists every
declaration, for the docs' reference, trace readers and tests, without
naming an architecture."""
from __future__ import annotations

from functools import cache

from schedlab.schedulers.events.contract import EventFieldError, EventType, Field, check_line
from schedlab.schedulers.events.shared import EVENTS as SHARED

__all__ = ["EventFieldError", "EventType", "Field", "SHARED", "check_line", "declared", "owners"]


@cache
def owners() -> dict[str, tuple[EventType, ...]]:
    """Who declares what: ``"shared"``, each registered architecture's name,
    and each extra source's module (``schedulers.archs.EVENT_SOURCES``)."""
    from schedlab.schedulers import arch as registry
    from schedlab.schedulers.archs import EVENT_SOURCES

    out: dict[str, tuple[EventType, ...]] = {"shared": SHARED}
    for name, spec in registry.registry().items():
        out[name] = tuple(spec.events)
    for src in EVENT_SOURCES:
        out[src.partition(":")[0].rsplit(".", 2)[-2]] = tuple(registry._load(src))
    return out


@cache
def declared() -> dict[str, EventType]:
    """Every declared event by name; a name declared twice (by two owners,
    or twice by one) is a RegistryError: one name, one meaning."""
    from schedlab.schedulers.arch import RegistryError

    out: dict[str, EventType] = {}
    where: dict[str, str] = {}
    for owner, events in owners().items():
        for e in events:
            if not isinstance(e, EventType):
                raise RegistryError(f"events of {owner}: {e!r} is not an EventType")
            if e.name in out:
                raise RegistryError(f"event {e.name!r}: declared by {where[e.name]} and by {owner}")
            out[e.name], where[e.name] = e, owner
    return out
