"""Long synchronous passes cut into slices, so an actor's other loops keep
their timing.

An actor is one event loop (on Ray one per actor; on the sim engine one
for all): while a pass over a thousand machines or a few thousand
applications runs, nothing else of that actor does. A leader's lease
renewal no longer waits behind it (``actors.coordinator.lease`` renews
from its own thread, ``Runtime.beside``, as real systems keep it off the
scheduling thread), but the calls that pass holds up do: hosts' exchanges,
heartbeats, submissions. So every long pass hands the loop back once per
``SLICE_WALL_S`` of wall time it has run.

The slice is measured in **wall** time. On the sim engine the clock does
not move while code runs (a pass takes no virtual time), so a pass there
is never cut and a sim run decides exactly as one pass would: the cut
matters only where passes take real time. ``SLICE_WALL_S = 0`` cuts after
every step (what the tests use to exercise the cut points on the sim
engine).

A pass must leave its books consistent at every cut (what it decided so
far recorded, as if the pass had ended there), and after a cut look again
at whatever it holds that another call may have changed meanwhile (a
leader may have stepped down)."""
from __future__ import annotations

from schedlab.actors.engines.runtime import Runtime

# Wall seconds a pass runs before it hands the loop back: a host's
# exchange waits at most a round of such slices, well under a batch interval.
SLICE_WALL_S = 0.02


class Slices:
    """One pass's slices: ``due()`` says its slice has run out, ``cut()``
    hands the loop back and starts the next one."""

    def __init__(self, rt: Runtime, wall_s: float | None = None) -> None:
        self.rt = rt
        self.wall_s = SLICE_WALL_S if wall_s is None else wall_s
        self.began = rt.wall_clock()
        self.cuts = 0

    def due(self) -> bool:
        return self.rt.wall_clock() - self.began >= self.wall_s

    async def cut(self) -> None:
        await self.rt.sleep_wall(0)
        self.cuts += 1
        self.began = self.rt.wall_clock()
