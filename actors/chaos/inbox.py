"""Where a chaos script leaves faults for a running emulation, and finds
out what became of them.

One small actor per run, named ``chaos-inbox`` in the run's namespace. The
driver publishes the run's roster and clock here at start, takes posted
faults every few tenths of a second, carries them out (it owns the actors)
and leaves each outcome under the ticket the script was given.
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from schedlab.actors.engines.runtime import Runtime

INBOX_NAME = "chaos-inbox"


def cluster_dir() -> Path:
    """Where scripts/cluster.sh keeps its nodes' PIDs and the head's port."""
    return Path(os.environ.get("SCHEDLAB_CLUSTER_DIR", ".schedlab-cluster"))


class ChaosInbox:
    def __init__(self, rt: Runtime, about: dict[str, Any]) -> None:
        self.rt = rt
        self.about_run = about  # roster, time_scale, duration, architecture, seed
        self.started_at: float | None = None
        self.queue: list[tuple[int, dict]] = []
        self.outcomes: dict[int, dict] = {}
        self.next_ticket = 0
        self.finished = False

    async def ready(self) -> str:
        return INBOX_NAME

    async def started(self, epoch: float) -> None:
        self.rt.set_epoch(epoch)
        self.started_at = epoch

    async def about(self) -> dict[str, Any]:
        now = None if self.started_at is None else self.rt.now()
        return {**self.about_run, "now_s": now, "finished": self.finished}

    async def post(self, fault: dict) -> int:
        self.next_ticket += 1
        self.queue.append((self.next_ticket, fault))
        return self.next_ticket

    async def exchange(self, done: list[tuple[int, dict]]) -> list[tuple[int, dict]]:
        """The driver's one call: outcomes in, newly posted faults out."""
        await self.settle(done)
        out, self.queue = self.queue, []
        return out

    async def settle(self, done: list[tuple[int, dict]], finished: bool = False) -> None:
        for ticket, outcome in done:
            self.outcomes[ticket] = outcome
        self.finished = self.finished or finished

    async def outcome(self, ticket: int) -> dict | None:
        if ticket in self.outcomes:
            return self.outcomes[ticket]
        if self.finished:
            return {"skipped": "the run ended before this fault was due"}
        return None
