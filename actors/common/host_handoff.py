"""Launches a per-host service actor started, on their way to its machine
host: held until the host has room by its own account, then handed out at
its poll; what the host runs is known until it reports the end.

Why hold: a service that times its tasks itself (a node monitor's worker,
an httpd's server) frees a slot at the task's end, the host a little later
(at its next poll); a launch must never reach the host before that, or the
host would run one task too many. The service owns the slot counts; this
owns the hand-over."""
from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from schedlab.schedulers.events.shared import TASKS_LOST
from schedlab.schedulers.model.wire import unpack_release, unpack_release_keys


class HostHandoff:
    def __init__(self, machines: Iterable[int]) -> None:
        self.held: dict[int, list[list]] = {m: [] for m in machines}  # launch rows, in start order
        self.on_host: dict[int, set[tuple[int, int]]] = {m: set() for m in self.held}
        self.order = {m: i for i, m in enumerate(self.held)}
        self.waiting: set[int] = set()  # machines with held rows: a poll visits these, not every machine

    def hold(self, machine: int, row: list) -> None:
        """A launch row ([job, task, machine, request, duration, start, ...])."""
        self.held[machine].append(row)
        self.waiting.add(machine)

    def returned(self, finished: bytes) -> list[tuple[int, int, int]]:
        """The host's report of what ended: each ended task of ours leaves
        the host's books; returns (job, task, machine) of every one ended,
        standing (prefill, job < 0) ones included for the caller."""
        if not finished:
            return []
        machines, _requests = unpack_release(finished)
        out = []
        for (job, task, _killed), m in zip(unpack_release_keys(finished), machines.tolist()):
            m = int(m)
            if job >= 0 and m in self.on_host:
                self.on_host[m].discard((job, task))
            out.append((job, task, m))
        return out

    def hand_out(self, room: Callable[[int], int]) -> list[list]:
        """The held launches the host has room for (``room(machine)``: slots
        the service gives the machine), in order."""
        launches = []
        for m in sorted(self.waiting, key=self.order.__getitem__):  # machine order, as a scan of all would go
            rows = self.held[m]
            free = room(m) - len(self.on_host[m])
            while rows and free > 0:
                row = rows.pop(0)
                self.on_host[m].add((row[0], row[1]))
                launches.append(row)
                free -= 1
            if not rows:
                self.waiting.discard(m)
        return launches

    def drop(self, machine: int) -> tuple[list[list[int]], list[list[int]]]:
        """The host restarted: (what it ran: lost, what it never pulled),
        as [job, task] lists, and the machine's books start empty."""
        lost = [[j, t] for j, t in sorted(self.on_host[machine])]
        unpulled = [[row[0], row[1]] for row in sorted(self.held[machine], key=lambda r: (r[0], r[1]))]
        self.held[machine], self.on_host[machine] = [], set()
        self.waiting.discard(machine)
        return lost, unpulled

    def never_pulled(self) -> list[list[int]]:
        return [[row[0], row[1]] for rows in self.held.values() for row in rows]

    def running(self, machine: int) -> set[tuple[int, int]]:
        return self.on_host[machine]

    def log_never_pulled(self, log: Any, name: str) -> None:
        """At the end: launches the run ended before the host had room for."""
        never = self.never_pulled()
        if never:
            log.emit(TASKS_LOST, framework=name, reason="run_ended", tasks=never, requeued_jobs=[])
