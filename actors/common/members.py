"""Driver-side register of a run's actors by name and role, with what it
takes to start each again (a restart after a kill).

Numbered roles that elect a leader (the coordinator replicas, an
architecture's masters) have their own controllers (``ReplicaSet``); every
other actor of the emulated system is a singleton recorded here: machine
hosts, schedulers, frameworks, front ends, a cell-state actor.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

from schedlab.actors import engines


@dataclass
class Recipe:
    cls: type
    args: tuple
    node: str | None


RestartHook = Callable[[str, str, Any], None]  # (role, name, new handle)


class Members:
    def __init__(self, namespace: str, on_spawn: Callable[[Any], Any]) -> None:
        self.namespace = namespace
        self.on_spawn = on_spawn  # registers the handle for cleanup
        self.handles: dict[str, Any] = {}  # live actors only
        self.roles: dict[str, str] = {}
        self.recipes: dict[str, Recipe] = {}
        self.epoch = 0.0
        self.on_restart: list[RestartHook] = []
        self.killed: set[str] = set()  # every name an incarnation of which was killed

    def spawn(self, role: str, cls: type, name: str, *args: Any, node: str | None = None, again: tuple | None = None) -> Any:
        """``again``: the arguments a restart uses, when not the same (a
        restarted machine host starts empty and rejoins)."""
        h = self.on_spawn(engines.current().spawn(cls, name, self.namespace, *args, node=node))
        self.handles[name] = h
        self.roles[name] = role
        self.recipes[name] = Recipe(cls, args if again is None else again, node)
        return h

    def of_role(self, role: str) -> dict[str, Any]:
        return {n: h for n, h in self.handles.items() if self.roles[n] == role}

    def kill(self, name: str) -> bool:
        h = self.handles.pop(name, None)
        if h is None:
            return False
        engines.current().kill_all([h])
        self.killed.add(name)
        return True

    def restart(self, name: str) -> Any:
        """A fresh incarnation under the same name, started on the run's
        clock. Not waited for (an actor takes a few tenths of a second to
        come up): Ray queues the start call until it exists."""
        self.kill(name)
        r = self.recipes[name]
        h = self.on_spawn(engines.current().spawn(r.cls, name, self.namespace, *r.args, node=r.node))
        self.handles[name] = h
        engines.current().call(h, "start", self.epoch)
        for hook in self.on_restart:
            hook(self.roles[name], name, h)
        return h
