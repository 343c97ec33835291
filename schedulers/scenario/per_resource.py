"""The keys of a table with an amount per resource (a machine's capacity, a
task's request, a container's size): one field per resource dimension,
named for it. Every field table makes such keys here, so they follow the
resources a scenario has and a parsed table's amounts come back in the
order resource vectors use."""
from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from schedlab.schedulers.model.resources import RESOURCES
from schedlab.schedulers.scenario.fields import Field


def per_resource(field: Callable[[str], Field]) -> tuple[Field, ...]:
    """``field(r)`` for every resource ``r``, in ``RESOURCES`` order."""
    return tuple(field(r) for r in RESOURCES)


def amounts(values: Mapping[str, Any]) -> tuple[Any, ...]:
    """A parsed table's per-resource values, in ``RESOURCES`` order."""
    return tuple(values[r] for r in RESOURCES)
