"""A single head's roll of the machine hosts that poll it (the central
dispatcher's workers, slurmctld's node daemons): which hosts it knows,
which it wrote off, and which task ends a host's registration told it
before that host's polls repeat them. Pure.

A host polls its head with the tasks that ended since its last delivered
poll. A head that restarted (or a standby taking over) knows no host until
it registers, telling what it runs and what it finished lately; from the
registration the head's view of that host is exact. The ends the host had
not delivered yet (``unreported``: its failed polls kept them) arrive again
in its next polls, and those must not count a second time: a task may have
been started anew meanwhile under the same key (a job the new head
requeued, or whose start its saved state missed), and a stale end taken for
the new copy's frees its room while it runs (and another job placed there
overcommits the machine).

A host written off (silent too long) is told to reset at its next poll and
comes back empty; a restarted host (a new incarnation) rejoins and is back
at once. Either way what it reports from before is void.
"""
from __future__ import annotations

import collections
from dataclasses import dataclass, field
from typing import Iterable, Sequence

TaskKey = tuple[int, int]
# A reported end as the wire carries it: (job, task, killed).
Ended = tuple[int, int, bool]


@dataclass
class HostRoll:
    hosts: int
    registered: set[int] = field(default_factory=set)
    down: set[int] = field(default_factory=set)  # written off, until they are heard again
    told: dict[int, collections.Counter[TaskKey]] = field(default_factory=dict)  # host -> ends still to be repeated

    @classmethod
    def of(cls, hosts: int, trusted: bool) -> HostRoll:
        """``trusted``: a head that starts with its cell knows every host; a
        restarted head, or a new one taking over, knows none until each
        registers (what its machines hold is unknown till then)."""
        return cls(hosts, set(range(hosts)) if trusted else set())

    def greet(self, host: int) -> dict | None:
        """What a poll is answered before anything else, or None to go on. A
        host written off meanwhile is told to reset: it is known again from
        now, empty (the caller frees its machines), and what it reported is
        void. A host this head has not heard from is asked to register."""
        if host in self.down:
            self.back(host)
            return {"reset": True, "launches": []}
        if host not in self.registered:
            return {"register": True}
        return None

    def register(self, host: int, unreported: Iterable[Sequence[int]]) -> None:
        """``host`` told this head what it runs; ``unreported``: the (job,
        task) ends it has not delivered yet, which its next polls repeat."""
        self.registered.add(host)
        self.down.discard(host)
        told = collections.Counter((int(k[0]), int(k[1])) for k in unreported)
        if told:
            self.told[host] = told
        else:
            self.told.pop(host, None)

    def news(self, host: int, ended: Sequence[Ended]) -> list[int]:
        """Indices of the reported ends that are news: each end the host's
        registration already told is dropped, once (a key ended twice is
        told twice)."""
        told = self.told.get(host)
        if not told:
            return list(range(len(ended)))
        out = []
        for i, (job, task, _killed) in enumerate(ended):
            key = (int(job), int(task))
            if told[key] > 0:
                told[key] -= 1
            else:
                out.append(i)
        if not +told:  # every repeat arrived
            del self.told[host]
        return out

    def write_off(self, host: int) -> bool:
        """``host`` went silent: it is down until it polls again (then told
        to reset). False if it already was down."""
        if host in self.down:
            return False
        self.down.add(host)
        self.registered.discard(host)
        self.told.pop(host, None)
        return True

    def back(self, host: int) -> None:
        """Known again, empty: a host that reset, or a restarted one's first
        word (its predecessor's reports died with it)."""
        self.down.discard(host)
        self.registered.add(host)
        self.told.pop(host, None)

    def complete(self) -> bool:
        """Every host registered or written off: a new head's view is whole."""
        return len(self.registered | self.down) >= self.hosts
