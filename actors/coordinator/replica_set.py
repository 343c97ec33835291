"""Driver-side base of the numbered actors that elect a leader (coordinator
replicas, an architecture's replicated masters): which incarnation of each
is live, which restarted ones are still starting, who leads, and killing or
restarting one. The fault timeline drives every such role through this."""
from __future__ import annotations

from typing import Any, Callable

from schedlab.actors import engines


class ReplicaSet:
    def __init__(self) -> None:
        self.live: dict[int, Any] = {}
        self.starting: dict[int, Any] = {}  # restarted member -> its start call
        self.epoch = 0.0
        self.killed: set[int] = set()  # members an incarnation of which was killed

    def up(self) -> dict[int, Any]:
        """Live members whose start returned: one still starting cannot lead,
        and asking it would stall the driver until Ray has its worker up."""
        return engines.current().up(self.live, self.starting)

    def leading_status(self, within: float = 2.0) -> dict | None:
        """For members elected through the coordinator lease
        (``actors.coordinator.lease``) that answer ``status`` with
        ``leading``, ``epoch`` and ``index``: the live one that leads with the
        highest epoch, if any. One still starting is not asked: it comes
        back as a standby. ``within``: wall s to wait for the answers."""
        eng = engines.current()
        got = eng.outcomes([eng.call(h, "status") for h in self.up().values()], timeout=within)
        leading = [st for st in got if isinstance(st, dict) and st["leading"]]  # a member dying as we ask is not
        return max(leading, key=lambda st: st["epoch"], default=None)

    def lead(self, within: float = 2.0) -> tuple[int, int] | None:
        """(index, term or epoch) of the current leader, None when there is
        none (or none answered ``within`` wall s: a paused member answers
        when its pause ends)."""
        raise NotImplementedError

    def restart(self, i: int) -> None:
        raise NotImplementedError

    def kill(self, i: int) -> None:
        self.starting.pop(i, None)
        h = self.live.pop(i, None)
        if h is not None:
            engines.current().kill_all([h])
            self.killed.add(i)


class LeasedSet(ReplicaSet):
    """Active/standby members that elect through the coordinator lease
    (``actors.coordinator.lease``): ``count`` of them, each made by the
    subclass's ``make(i)`` (a spawned actor handle), registered for cleanup
    by ``on_spawn``. A restarted member comes back as a standby with empty
    books, on the run's clock."""

    def __init__(self, count: int, on_spawn: Callable[[Any], Any]) -> None:
        super().__init__()
        self.count = count
        self.on_spawn = on_spawn

    def make(self, i: int) -> Any:
        raise NotImplementedError

    def spawn(self, i: int) -> Any:
        h = self.make(i)
        self.on_spawn(h)
        self.live[i] = h
        return h

    def spawn_all(self) -> list[Any]:
        return [self.spawn(i) for i in range(self.count)]

    def lead(self, within: float = 2.0) -> tuple[int, int] | None:
        st = self.leading_status(within)
        return (int(st["index"]), int(st["epoch"])) if st else None

    def restart(self, i: int) -> None:
        self.kill(i)
        self.starting[i] = engines.current().call(self.spawn(i), "start", self.epoch)
