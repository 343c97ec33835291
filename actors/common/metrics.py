"""The metrics collector: receives event batches, appends them to the run's
events file (``actors.common.event_files``) and keeps running counters for
the progress display."""
from __future__ import annotations

import collections
import json
from pathlib import Path

from schedlab.actors.common.event_files import open_for_append

from schedlab.schedulers.events.shared import FAULT, JOB_ABANDONED, JOB_REJECTED, JOB_SCHEDULED, JOB_SUBMITTED, TXN


class MetricsCollector:
    COUNTED = (JOB_SUBMITTED, JOB_SCHEDULED, JOB_ABANDONED, JOB_REJECTED, TXN, FAULT)  # the progress display's
    LEFT_QUEUE = (JOB_SCHEDULED, JOB_ABANDONED, JOB_REJECTED)  # a job no longer waiting

    def __init__(self, path: str, track_queue: bool = False) -> None:
        """``track_queue``: keep which jobs stopped waiting (``left_queue``),
        for a federation's view of a site; a single run does not pay for it."""
        self.path = Path(path)
        self._file = open_for_append(self.path)
        self.counts: collections.Counter[str] = collections.Counter()
        self.conflicted_txns = 0
        self.lines = 0
        self.track_queue = track_queue
        self.left: list[list] = []  # [job, emulated t] of each job that stopped waiting, in arrival order

    async def ready(self) -> str:
        return "metrics"

    async def ping(self) -> None:
        return None

    async def record(self, lines: list[str]) -> None:
        self._file.write("\n".join(lines))
        self._file.write("\n")
        self.lines += len(lines)
        for line in lines:
            # Cheap prefix peek instead of a full parse per line.
            i = line.find('"event":"')
            if i < 0:
                continue
            name = line[i + 9 : line.find('"', i + 9)]
            if name in self.COUNTED:
                self.counts[name] += 1
                # A txn without ``conflicted`` conflicted nowhere (its declaration).
                if name == TXN and '"conflicted":' in line and '"conflicted":0,' not in line:
                    self.conflicted_txns += 1
                elif self.track_queue and name in self.LEFT_QUEUE:
                    e = json.loads(line)
                    self.left.append([e["job_id"], e["t"]])

    async def progress(self) -> dict:
        return {**self.counts, "conflicted_txns": self.conflicted_txns, "events": self.lines}

    async def left_queue(self, cursor: int) -> tuple[list[list], int]:
        """The jobs that stopped waiting (scheduled, abandoned or refused)
        since ``cursor``, with when, and the cursor to ask from next: what a
        site publishes about its queue without knowing its architecture."""
        return self.left[cursor:], len(self.left)

    async def close(self) -> int:
        self._file.flush()
        self._file.close()
        return self.lines

