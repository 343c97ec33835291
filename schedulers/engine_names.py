"""The engines a scenario may name, by name only.

A scenario's ``engine`` key is checked when it is read, before anything
runs, so the checker needs the names; the engines themselves (Ray, the
virtual clock) live in ``actors.engines``, which loads a class from the
import path given here only when a run starts. Like the architecture
registry (``schedulers.arch``), third-party engines register under an entry
point group; nothing here imports an engine.
"""
from __future__ import annotations

from importlib.metadata import entry_points

BUILTIN = {
    "ray": "schedlab.actors.engines.ray_engine:RayEngine",
    "sim": "schedlab.actors.engines.sim_engine:SimEngine",
}
ENTRY_POINT_GROUP = "schedlab.engines"
DEFAULT = "ray"


def names() -> tuple[str, ...]:
    """Every engine a scenario may name: the built-ins, then the plugins."""
    return tuple(BUILTIN) + tuple(ep.name for ep in entry_points(group=ENTRY_POINT_GROUP) if ep.name not in BUILTIN)
