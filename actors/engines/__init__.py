"""Engines: what hosts a run's actors. ``ray`` (the live engine: every actor
a Ray actor, wall time scaled) and ``sim`` (every actor in this process on a
virtual clock, messages delivered after a modelled latency). Both run the
same shell classes through the same ``Runtime`` protocol
(``actors.engines.runtime``); the driver (``actors.run`` and what it calls)
reaches its engine through ``current()``, set for the run by ``use``.

Engines are registered like architectures: the built-ins and the entry point
group ``schedlab.engines`` (the value: an Engine class) are named in
``schedulers.engine_names``, where a scenario's ``engine`` is checked.
Importing this package imports neither Ray nor an engine.
"""
from __future__ import annotations

import contextlib
import importlib
from collections.abc import Iterator
from importlib.metadata import entry_points
from typing import Any

from schedlab.schedulers.engine_names import BUILTIN, DEFAULT, ENTRY_POINT_GROUP, names

__all__ = ["BUILTIN", "DEFAULT", "ENTRY_POINT_GROUP", "ClusterUnreachable", "current", "engine_class", "names", "use"]

_current: Any = None


class ClusterUnreachable(RuntimeError):
    """The engine cannot reach (or host) what it was asked to: no Ray
    cluster at an address, an address given to the sim engine. One line for
    the user, before any actor starts."""


def engine_class(name: str) -> Any:
    if name in BUILTIN:
        module, _, attr = BUILTIN[name].partition(":")
        return getattr(importlib.import_module(module), attr)
    for ep in entry_points(group=ENTRY_POINT_GROUP):
        if ep.name == name:
            return ep.load()
    raise KeyError(f"unknown engine {name!r} (one of {', '.join(names())})")


def current() -> Any:
    """The engine the driver is running now (the live one when none was set:
    tools that drive Ray directly, like the chaos script, need no set-up)."""
    global _current
    if _current is None:
        _current = engine_class(DEFAULT)()
    return _current


@contextlib.contextmanager
def use(engine: Any) -> Iterator[Any]:
    """Make ``engine`` the driver's for the block (a run, a test)."""
    global _current
    previous, _current = _current, engine
    try:
        yield engine
    finally:
        _current = previous
