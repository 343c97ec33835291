"""A keeper's doorbells: how whoever queues launches or kills for machine
hosts (a cell state, a master, a head, a per-host service) tells a host
that something waits for it, so hosts need not poll to find out.

A ring is one one-way message (``ring``) to the host, coalesced: a host
rung and not heard from since is not rung again. The keeper calls
``heard(host)`` when the host's exchange (or heartbeat, or rejoin) reaches
it, before it reads what waits, so work queued after that read rings
again. A ring that is lost (the host was restarting, a partition) costs at
most one heartbeat: the host exchanges then anyway.
"""
from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from schedlab.actors.engines.runtime import Runtime


def host_name(host: int) -> str:
    """A machine host actor's name (``actors.run`` names them so)."""
    return f"machine-host-{host}"


class Doorbells:
    """Rings hosts by name (``name(host)``), caching their handles: a
    lookup is a blocking call to Ray's control store on the live engine."""

    def __init__(self, rt: Runtime, name: Callable[[int], str] = host_name) -> None:
        self.rt = rt
        self.name = name
        self.rung: set[int] = set()
        self.handles: dict[int, Any] = {}

    def ring(self, hosts: Iterable[int]) -> None:
        """Ring every host of ``hosts`` not rung since it was last heard."""
        for h in hosts:
            if h in self.rung:
                continue
            handle = self.handles.get(h)
            if handle is None:
                handle = self.rt.lookup(self.name(h))
                if handle is None:  # not up (restarting): its rejoin finds the work
                    continue
                self.handles[h] = handle
            self.rung.add(h)
            try:
                self.rt.send(handle, "ring")
            except Exception:  # a dead incarnation's handle: look it up again next time
                self.handles.pop(h, None)

    def heard(self, host: int) -> None:
        """The host reached us: what waits from now on rings it again."""
        self.rung.discard(host)

    def rejoined(self, host: int) -> None:
        """A new incarnation of the host: its handle is a new one."""
        self.rung.discard(host)
        self.handles.pop(host, None)

    def forget_rings(self) -> None:
        """A new leader: rings an old one sent may not have been served."""
        self.rung.clear()
